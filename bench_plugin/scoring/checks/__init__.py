"""Deterministic checks (``contains``, ``regex``, ``equals``, JSON, length, numeric), each a scorer type."""
