"""Engines: turn a case into a transcript by calling models."""
