"""Reports built from case records: markdown, pytest-html and JSON."""
