"""Agent tasks (a task's ``tools:``, ``workspace:`` and ``budget:``) as specs, checked before any call."""
