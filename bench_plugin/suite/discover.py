"""Which files are suites: YAML with a top-level ``tasks:`` key (or any YAML the user names)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

SUITE_SUFFIXES = (".yaml", ".yml")
# pytest's own default ``norecursedirs``: the folders its collection does not enter, so neither does the search
NORECURSE_DEFAULT = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


def looks_like_suite(path: Path) -> bool:
    """Cheap test for a YAML file found by walking folders: does it have the top-level ``models:`` and ``tasks:``?

    Both, as every suite must: ``tasks:`` alone is also the top of other tools' files (a Taskfile.yml), which
    pytest would then collect as a broken suite, stopping the project's whole test run.
    """
    if path.suffix not in SUITE_SUFFIXES:
        return False
    keys: set[str] = set()
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("tasks:", "models:")):
                    keys.add(line.partition(":")[0])
                    if len(keys) == 2:  # a dataset of thousands of lines below them is not read
                        return True
    except OSError:
        pass
    return False


def find_suites(paths: Iterable[Path], norecurse: Sequence[str] = NORECURSE_DEFAULT) -> list[Path]:
    """Suite files named by ``paths``: files as given, folders searched recursively, in sorted order.

    The search skips the folders pytest's collection skips: those matching ``norecurse`` (pytest's
    ``norecursedirs``) and virtual environments. A project's root holds its ``.venv`` and ``node_modules``,
    tens of thousands of files that no suite of the project's is in.
    """
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(_suites_under(path, norecurse))
        elif path.is_file() and path.suffix in SUITE_SUFFIXES:
            found.append(path)
    return found


def _suites_under(folder: Path, norecurse: Sequence[str]) -> Iterable[Path]:
    for root, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if not _skipped(Path(root, name), norecurse)]
        yield from (path for name in files if looks_like_suite(path := Path(root, name)))


def _skipped(folder: Path, norecurse: Sequence[str]) -> bool:
    """A folder pytest would not collect from: one its ``norecursedirs`` names, or a virtual environment."""
    return any(fnmatch.fnmatch(folder.name, pattern) for pattern in norecurse) or (folder / "pyvenv.cfg").is_file()
