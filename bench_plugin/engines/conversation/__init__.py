"""Running a model-to-model conversation: seats, speaking order, what each participant sees, commands, the log."""
