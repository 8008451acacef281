"""Model-to-model conversations (a task's ``conversation:``): who takes part, in what order, with which commands."""
