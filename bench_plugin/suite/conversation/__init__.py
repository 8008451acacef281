"""Model-to-model conversations (a task's ``conversation:``) as specs: who takes part, in what order, with which commands."""
