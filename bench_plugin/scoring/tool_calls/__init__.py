"""tool_calls: the model's tool calls against the expected ones (function-calling benchmarks)."""
