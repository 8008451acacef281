"""Read a section of the suites that records came from (aggregates, leaderboards), on the controller."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import LoadedSuite, load_suite_file
from bench_plugin.suite.schema import check_against_schema

T = TypeVar("T")


def read_suite_sections(
    paths: Iterable[str], root: Path, build: Callable[[LoadedSuite], T | None]
) -> dict[str, T]:
    """``build`` applied to each suite file (paths as records name them, under ``root``).

    Under xdist the controller collects no suites, so report-time settings are read again from the files the records
    name. Files that are gone or no longer valid are left out: their records were made from a suite that collected,
    and a report is still written without the section. Suites for which ``build`` gives None are left out too.
    """
    found: dict[str, T] = {}
    for path in dict.fromkeys(paths):
        file = root / path
        if not file.is_file():
            continue
        try:
            stat = file.stat()
            loaded = _checked_suite(file, path, stat.st_mtime_ns, stat.st_size)
            section = build(loaded)
        except (SuiteError, OSError):
            continue
        if section is not None:
            found[path] = section
    return found


@functools.lru_cache(maxsize=4)
def _checked_suite(file: Path, path: str, mtime_ns: int, size: int) -> LoadedSuite:
    """A suite file loaded and checked once for all the sections read at the end of a run (not again per section).

    Raises:
        SuiteError: the file is no longer a valid suite (its errors are not cached: a fixed file is read again).
    """
    loaded = load_suite_file(file, display_path=path)
    check_against_schema(loaded)
    return loaded
