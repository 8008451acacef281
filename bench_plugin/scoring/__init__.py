"""Scoring: deterministic checks, LLM judges and the composite."""
