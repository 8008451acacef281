"""Built-in graders by name: judges asked with prompts of our own, each usable in one line of YAML."""
