"""The baseline run a relative gate compares with (``--bench-baseline``): a results file, a folder or a named run."""

from __future__ import annotations

from pathlib import Path

from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import read_results

RESULTS_FILE = "results.jsonl"
RUNS_FOLDER = "runs"  # a named run's folder under the output folder (plugin/options/runs.py)


class BaselineError(ValueError):
    """The baseline cannot be read: the message names the file and what is wrong."""


def resolve_baseline(given: str, output_dir: Path, cwd: Path) -> Path:
    """The results file ``given`` names: the file itself, ``<folder>/results.jsonl``, or a named run's.

    Raises:
        BaselineError: nothing of the three exists.
    """
    path = Path(given) if Path(given).is_absolute() else cwd / given
    candidates = [path, path / RESULTS_FILE, output_dir / RUNS_FOLDER / given / RESULTS_FILE]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise BaselineError(f"--bench-baseline {given}: no results found: not a results file, nor a folder holding "
                        f"{RESULTS_FILE}, nor a named run under {output_dir / RUNS_FOLDER}")


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
