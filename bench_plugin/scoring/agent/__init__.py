"""Scorers of agent tasks: C (``completion``), T (``trajectory``) and B (``behavior``)."""
