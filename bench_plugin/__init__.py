"""bench_plugin: LLM benchmarks written as YAML suites and run as pytest tests."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
