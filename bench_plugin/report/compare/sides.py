"""Where a side of a comparison is: a results.jsonl, an output folder, or a named run's name."""

from __future__ import annotations

from pathlib import Path

RESULTS = "results.jsonl"
RUNS_FOLDER = "runs"  # a named run's folder is <output>/runs/NAME (``plugin/options/runs.py``)


class SideNotFound(ValueError):
    """The text names no results file, output folder or named run: the message says what was looked for."""


def locate_side(text: str, output: Path, base: Path | None = None) -> Path:
    """The results file a side names.

    Args:
        text: a results.jsonl, a folder holding one (``bench-results``, ``bench-results/runs/NAME``), or the name of
            a named run (``NAME``: ``<output>/runs/NAME``).
        output: the output folder whose named runs a bare name stands for.
        base: the folder relative paths start from (default: the current one).

    Raises:
        SideNotFound: nothing of that name, or a folder without results.
    """
    path = Path(text) if base is None or Path(text).is_absolute() else base / text
    if path.is_file():
        return path
    if path.is_dir():
        results = path / RESULTS
        if not results.is_file():
            raise SideNotFound(f"{text} is a folder without a {RESULTS}: name a results file or a run's folder")
        return results
    run = output / RUNS_FOLDER / text
    if (run / RESULTS).is_file() and Path(text).name == text:
        return run / RESULTS
    runs = sorted(found.parent.name for found in (output / RUNS_FOLDER).glob(f"*/{RESULTS}"))
    known = f" (runs there: {', '.join(runs)})" if runs else ""
    raise SideNotFound(f"{text}: no such results file or folder, nor a named run in {output / RUNS_FOLDER}{known}")
