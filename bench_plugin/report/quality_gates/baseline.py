"""The baseline run a relative gate compares with (``--bench-baseline``): a results file, a folder or a named run."""

from __future__ import annotations

from pathlib import Path

from bench_plugin.report.compare.sides import SideNotFound, locate_side
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import read_results


class BaselineError(ValueError):
    """The baseline cannot be read: the message names the file and what is wrong."""


def resolve_baseline(given: str, output_dir: Path, cwd: Path) -> Path:
    """The results file ``given`` names, found as ``bench compare`` finds a side (``compare.sides.locate_side``).

    Raises:
        BaselineError: nothing of that name.
    """
    try:
        return locate_side(given, output_dir, cwd)
    except SideNotFound as exc:
        raise BaselineError(f"--bench-baseline {given}: no results found: {exc}") from None


def read_baseline(path: Path) -> dict[str, CaseRecord]:
    """The baseline's records by node id (a case found twice: its last line).

    Raises:
        BaselineError: the file cannot be read, or a line is not a case record (naming the file and line).
    """
    try:
        records = read_results(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BaselineError(f"--bench-baseline: cannot read {path}: {exc}") from None
    return {record.nodeid: record for record in records}
