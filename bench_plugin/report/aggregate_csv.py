"""An aggregate table (``report.aggregates.compute_table``) as CSV text and as Markdown cells."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from bench_plugin.report.escape import csv_cell


def format_figure(value: Any, *, count: bool, missing: str = "") -> str:
    """A cell: counts as integers, other figures with 4 decimals, ``missing`` where there is no value."""
    if value is None:
        return missing
    if count:
        return str(int(value))
    return f"{float(value):.4f}"


def table_cells(table: Mapping[str, Any], *, missing: str = "") -> list[list[str]]:
    """The header row, then one row of formatted cells per table row."""
    counts = set(table["counts"])
    header = [*table["by"], *table["columns"]]
    out = [header]
    width = len(table["by"])
    for row in table["rows"]:
        by = [missing if value is None else str(value) for value in row[:width]]
        figures = [
            format_figure(value, count=name in counts, missing=missing)
            for name, value in zip(table["columns"], row[width:], strict=True)
        ]
        out.append(by + figures)
    return out


def render_csv(table: Mapping[str, Any]) -> str:
    """The table as CSV (the csv module's dialect: comma-separated, CRLF line ends, empty missing cells).

    Names and group values come from suites and models, so they pass through ``csv_cell`` (a label
    ``=HYPERLINK(...)`` must not become a formula); the figures are our own numbers and stay numbers.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    header, *rows = table_cells(table)
    width = len(table["by"])
    writer.writerow([csv_cell(name) for name in header])
    for values, cells in zip(table["rows"], rows, strict=True):
        writer.writerow([csv_cell(value) for value in values[:width]] + cells[width:])
    return buffer.getvalue()
