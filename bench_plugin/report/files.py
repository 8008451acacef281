"""The report files of a run, written from its records: summary.json and report.md."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from bench_plugin.record import CaseRecord
from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.summary import summarize
from bench_plugin.store import write_atomically


def in_case_order(records: Iterable[CaseRecord]) -> list[CaseRecord]:
    """Suite, then position in the suite's expansion: the same order with or without xdist."""
    return sorted(records, key=lambda r: (r.path, r.case_index, r.nodeid))


def write_reports(records: Iterable[CaseRecord], folder: Path) -> dict[str, Path]:
    """Write summary.json and report.md for ``records`` into ``folder``; return their paths."""
    summary = summarize(in_case_order(records))
    paths = {"summary": folder / "summary.json", "markdown": folder / "report.md"}
    write_atomically(paths["summary"], json.dumps(summary, indent=2, sort_keys=True) + "\n")
    write_atomically(paths["markdown"], render_markdown(summary))
    return paths
