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

# a record names its suite; only a YAML file under the run's folder is read for it (a record is data: it must not
# pick a file to read elsewhere)
_SUITE_SUFFIXES = (".yaml", ".yml")


def suite_file_under(root: Path, path: str) -> Path | None:
    """The suite file a record names, under ``root``; None when the name leaves it or is not a YAML file.

    A record's ``path`` is the suite's node id, relative to the folder the run ran in: an absolute name, a ``..``
    step, a NUL or another suffix is not one this plugin wrote.
    """
    name = Path(path)
    if "\0" in path or name.is_absolute() or ".." in name.parts or name.suffix not in _SUITE_SUFFIXES:
        return None
    return root / name


def refused_suite_paths(paths: Iterable[str], root: Path) -> list[str]:
    """The suite names among ``paths`` that ``read_suite_sections`` will not read (each once, in order)."""
    return [path for path in dict.fromkeys(paths) if suite_file_under(root, path) is None]


def read_suite_sections(
    paths: Iterable[str], root: Path, build: Callable[[LoadedSuite], T | None]
) -> dict[str, T]:
    """``build`` applied to each suite file (paths as records name them, under ``root``).

    Under xdist the controller collects no suites, so report-time settings are read again from the files the records
    name. Files that are gone or no longer valid are left out: their records were made from a suite that collected,
    and a report is still written without the section. Suites for which ``build`` gives None are left out too, and so
    are names that leave ``root`` (``suite_file_under``: the caller says so, ``refused_suite_paths``).
    """
    found: dict[str, T] = {}
    for path in dict.fromkeys(paths):
        file = suite_file_under(root, path)
        if file is None or not file.is_file():
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
