"""A mock OpenAI/Anthropic-compatible LLM server for trying suites offline and for the plugin's tests."""
