"""FastChat's pairwise table (win, loss, tie, rates to 6 decimals) in report.md and a CSV, as show_result.py prints it.

The figures are computed once, by ``report.ratings`` into each suite summary's ``ratings.pairwise``
(one entry per ``llm_judge_pairwise`` component: FastChat's win/loss/tie rows, Bradley-Terry ratings
with bootstrap intervals, and the judge's position bias). This module only prints them: the Markdown
section (:func:`render_pairwise_table`) and the CSV of a suite (:func:`render_pairwise_csv`), which
``report.write`` writes as ``<suite>.csv``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench_plugin.core.safe_names import safe_file_name
from bench_plugin.report.escape import csv_cell, markdown_cell

TABLE_COLUMNS = ("model", "win", "loss", "tie", "win_rate", "loss_rate", "win_rate_adjusted")
COUNT_COLUMNS = ("win", "loss", "tie")
RATE_COLUMNS = ("win_rate", "loss_rate", "win_rate_adjusted")


def pairwise_entries(suite: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A suite summary's pairwise figures (``ratings.pairwise``), one per pairwise scorer; none: ``[]``."""
    return list((suite.get("ratings") or {}).get("pairwise") or [])


def table_cells(row: Mapping[str, Any]) -> list[str]:
    """One row of FastChat's table as text: counts as integers, rates with 6 decimals (as pandas prints them)."""
    return [str(row["model"]), *(str(int(row[name])) for name in COUNT_COLUMNS),
            *(f"{float(row[name]):.6f}" for name in RATE_COLUMNS)]


def render_pairwise_csv(entries: Sequence[Mapping[str, Any]]) -> str:
    """FastChat's table of every pairwise scorer of a suite as CSV: ``scorer``, then FastChat's columns.

    Rows keep FastChat's order (best ``win_rate_adjusted`` first); the csv module's dialect, as the
    aggregate CSVs (comma-separated, CRLF line ends).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["scorer", *TABLE_COLUMNS])
    for entry in entries:
        for row in entry.get("win_rates") or []:
            model, *figures = table_cells(row)  # the model's label is untrusted text, the figures ours
            writer.writerow([csv_cell(entry["component"]), csv_cell(model), *figures])
    return buffer.getvalue()


def pairwise_csv_name(suite: str, taken: Iterable[str]) -> str:
    """``<suite>.csv``, or ``<suite>_pairwise.csv`` when another table of the run already writes that name.

    The suite's name comes from the records: ``safe_file_name`` keeps it a file name in the output folder.
    """
    name = safe_file_name(suite, ".csv")
    return safe_file_name(f"{suite}_pairwise", ".csv") if name in set(taken) else name


def pairwise_csvs(summary: Mapping[str, Any], taken: Iterable[str]) -> dict[str, str]:
    """The CSV of each suite with pairwise judgments: file name -> text.

    Args:
        summary: what ``report.summary.summarize`` returned.
        taken: file names other tables of the run already write (aggregate CSVs).
    """
    csvs: dict[str, str] = {}
    taken = set(taken)
    for suite in summary.get("suites") or []:
        entries = pairwise_entries(suite)
        if entries:
            csvs[pairwise_csv_name(suite["suite"] or "suite", taken | set(csvs))] = render_pairwise_csv(entries)
    return csvs


def render_pairwise_table(suite: Mapping[str, Any]) -> list[str]:
    """The Markdown of a suite's pairwise judgments: per scorer, FastChat's table, Bradley-Terry, position bias.

    Args:
        suite: one suite of the summary (its ``ratings.pairwise`` and ``totals``).

    Returns:
        Lines, each section ending with a blank line; no lines when the suite has no pairwise judgment.
    """
    lines: list[str] = []
    for entry in pairwise_entries(suite):
        lines += [f"### Pairwise judgments: {markdown_cell(entry['component'])}", "", _denominator(entry, suite), "",
                  "| " + " | ".join(TABLE_COLUMNS) + " |", "| --- |" + " ---: |" * (len(TABLE_COLUMNS) - 1)]
        lines += ["| " + " | ".join([markdown_cell(cells[0]), *cells[1:]]) + " |"
                  for cells in map(table_cells, entry.get("win_rates") or [])]
        lines += ["", *_render_ratings(entry), "", _render_bias(entry.get("position_bias") or {}), ""]
    return lines


def _denominator(entry: Mapping[str, Any], suite: Mapping[str, Any]) -> str:
    text = (f"{entry['games']} games: each judged case is one game, its answer against the other one, judged "
            "in both answer orders (FastChat's `show_result.py`: a win needs the same winner in both orders; "
            "a tie in the first order, or orders that disagree, is a tie; each rate is over that model's games).")
    if entry.get("dropped"):
        text += f" Dropped: {entry['dropped']} games with a verdict that could not be read in an order."
    totals = suite.get("totals") or {}
    left_out = [f"{totals[key]} {label}" for key, label in (("errors", "infrastructure errors (e.g. a failed "
                "judge call)"), ("skipped", "skipped (e.g. no recorded verdict)"), ("unscored", "unscored"))
                if totals.get(key)]
    if left_out:
        text += f" Cases of the suite without a game: {', '.join(left_out)} (listed below)."
    return text


def _render_ratings(entry: Mapping[str, Any]) -> list[str]:
    lines = [
        f"Bradley-Terry ratings over the {entry.get('comparisons', entry['games'])} games (a tie is half a win; mean "
        "1000, 400 points per factor 10 in the odds; one virtual tie per model against a model rated 1000; 95% "
        f"percentile bootstrap drawing whole cases, or tasks when runs repeat, {entry['n_boot']} replicates):",
        "",
        "| model | rating | 95% CI | games |",
        "| --- | ---: | ---: | ---: |",
    ]
    for rating in entry.get("bradley_terry") or []:
        low, high = rating.get("ci_low"), rating.get("ci_high")
        interval = "—" if low is None or high is None else f"{low:.1f} to {high:.1f}"
        lines.append(f"| {markdown_cell(rating['model'])} | {rating['rating']:.1f} | {interval} | {rating['games']} |")
    return lines


def _render_bias(bias: Mapping[str, Any]) -> str:
    if not bias.get("n"):
        return "Position bias: no single-order verdict named a winner."
    return (f"Position bias: the judge picked the answer shown first in {bias['first']} of {bias['n']} "
            f"single-order verdicts that named a winner ({100 * bias['rate']:.1f}%; 50% is no preference; "
            f"exact binomial p = {bias['p_value']:.4f}); tie verdicts are not counted.")
