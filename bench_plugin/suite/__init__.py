"""Suite files: loading, validation, specs, templates and expansion into cases."""
