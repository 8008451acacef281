"""bench_plugin: LLM benchmarks written as YAML suites and run as pytest tests."""

from __future__ import annotations

import sys

__version__ = "0.1.0"

__all__ = ["__version__"]


def _import_without_assert_rewriting() -> None:
    """Let this package's modules load as plain Python, not through pytest's assertion rewriter.

    pytest marks every module of a ``pytest11`` plugin's distribution for assertion rewriting. Our asserts
    are invariants, not tests, so rewriting gains nothing, and where the rewritten byte code cannot be
    cached (``PYTHONDONTWRITEBYTECODE=1``, a read-only site-packages) pytest parses and compiles every
    module again at each start-up: about half a second for this package (``benchmarks/startup.py``).
    ``PYTEST_DONT_REWRITE`` in a docstring does not help there: the module is still parsed and compiled
    to find it. This package's ``__init__`` is the first of its modules imported, so unmarking the
    package here leaves the rest to Python's own import and byte-code cache. pytest has no public way
    to do this: if its private names change, the modules are simply rewritten again.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if isinstance(marked, set) and __name__ in marked:
            marked.discard(__name__)
            decided = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(decided, dict):
                decided.clear()


_import_without_assert_rewriting()
