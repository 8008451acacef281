"""Which files are suites: YAML with a top-level ``tasks:`` key (or any YAML the user names)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SUITE_SUFFIXES = (".yaml", ".yml")


def looks_like_suite(path: Path) -> bool:
    """Cheap test for a YAML file found by walking folders: does it have a top-level ``tasks:``?"""
    if path.suffix not in SUITE_SUFFIXES:
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return any(line.startswith("tasks:") for line in handle)
    except OSError:
        return False


def find_suites(paths: Iterable[Path]) -> list[Path]:
    """Suite files named by ``paths``: files as given, folders searched recursively, in sorted order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and looks_like_suite(p))
        elif path.is_file() and path.suffix in SUITE_SUFFIXES:
            found.append(path)
    return found
