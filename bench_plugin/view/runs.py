"""Which runs ``bench view`` serves: the results files its paths name, each given a short id for URLs.

A path is a results.jsonl, an output folder (its results.jsonl and every named run under ``runs/``), or a named
run's name (``bench compare``'s ``locate_side``). URLs name a run by its id alone, so nothing in a URL is a path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench_plugin.report.compare.sides import RESULTS, RUNS_FOLDER, locate_side


@dataclass(frozen=True)
class RunSource:
    """One run served.

    Attributes:
        id: what URLs call it (``1``, ``2``...): never a path.
        name: as the page shows it: a named run's name, otherwise the path given.
        results: its results.jsonl.
    """

    id: str
    name: str
    results: Path

    @property
    def folder(self) -> Path:
        """The folder the run's files are in: image files of its cases are served only from inside it."""
        return self.results.parent


def find_runs(paths: Iterable[str], output: Path) -> list[RunSource]:
    """The runs ``paths`` name, each once, in the order given.

    An output folder gives its own results, then its named runs, oldest first.

    Raises:
        ValueError: a path names no results file, output folder or named run (the message says which).
    """
    found: dict[Path, str] = {}
    for text in paths:
        for results, name in _results_of(text, output):
            found.setdefault(results.resolve(), name)
    return [RunSource(str(number), name, results) for number, (results, name) in enumerate(found.items(), start=1)]


def _written(path: Path) -> int:
    return path.stat().st_mtime_ns


def _results_of(text: str, output: Path) -> list[tuple[Path, str]]:
    """The results files one path names, with the name each is shown by."""
    path = Path(text)
    named = [found for found in (path / RUNS_FOLDER).glob(f"*/{RESULTS}") if found.is_file()] if path.is_dir() else []
    # oldest first (its results last written first): next to each other, a run and the one after it
    runs = [(results, results.parent.name) for results in sorted(named, key=lambda found: (_written(found), found))]
    if path.is_dir() and not (path / RESULTS).is_file() and runs:
        return runs
    own = locate_side(text, output)
    shown = own.parent.name if own.parent.parent.name == RUNS_FOLDER else text
    return [(own, shown), *runs]
