"""Render a run's summary (``report.summary.summarize``) as a Markdown report.

Every piece of text from a suite, a model or a grader goes through ``escape_cell`` or
``code_span`` (``report.escape``): a ``|`` or a newline would break a table, and raw HTML, a link or an
image in a reason or a label would be live in most Markdown viewers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.aggregate_csv import table_cells
from bench_plugin.report.audit import HOW_TO_READ as AUDIT_HOW_TO_READ
from bench_plugin.report.audit import render_audit_items
from bench_plugin.report.escape import markdown_cell, markdown_code, markdown_text
from bench_plugin.report.latency_markdown import render_latency
from bench_plugin.report.markdown_breakdowns import render_breakdowns, render_repeats
from bench_plugin.report.pairwise_table import render_pairwise_table
from bench_plugin.report.sandbox_flag import markdown_suite_warning, markdown_warning
from bench_plugin.report.scoring_mix import describe_scored_apart
from bench_plugin.report.statistics.markdown import (
    describe_how_to_read,
    render_differences,
    render_intervals,
    render_ratings,
)
from bench_plugin.report.summary import describe_cache_use, describe_missing_cost

MISSING = "—"
MAX_REASON_CHARS = 500


def render_markdown(
    summary: Mapping[str, Any], *, title: str = "Benchmark report", max_listed: int = 50
) -> str:
    """The whole report: per suite a leaderboard, a task table and the cases worth a look.

    Args:
        summary: what ``summarize`` returned.
        title: the top heading.
        max_listed: how many failures (errors, unscored...) to list per section before
            "… and N more".

    Returns:
        Markdown text ending with a newline; an empty run gives a short valid report.
    """
    lines = [f"# {escape_cell(title)}", ""]
    suites = summary.get("suites") or []
    if not suites:
        lines += ["No cases were run.", ""]
        return "\n".join(lines)
    lines += markdown_warning(summary)  # first thing read: agent commands that ran without a sandbox
    lines += describe_how_to_read()
    lines += render_run_notes(summary)
    if len(suites) > 1:
        lines += [describe_counts(summary["totals"]), ""]
    for suite in suites:
        lines += render_suite(suite, max_listed=max_listed)
    return "\n".join(lines)


def render_run_notes(summary: Mapping[str, Any]) -> list[str]:
    """What the report says of the run before its suites: cache use, a budget spent, cases and records left out."""
    lines = []
    if summary.get("cache"):
        lines += [f"{describe_cache_use(summary['cache']).capitalize()} (an answer from the cache was not asked "
                  "again and costs nothing in this report; `--bench-cache write` asks every model again).", ""]
    if summary.get("budget"):
        lines += [describe_budget(summary["budget"]), ""]
    if summary.get("left_out"):
        lines += [describe_left_out(summary["left_out"]), ""]
    if summary.get("skipped_records"):
        lines += [describe_skipped(summary["skipped_records"]["count"]), ""]
    if summary.get("scored_apart"):
        lines += [f"**Two scorings**: {describe_scored_apart(summary['scored_apart'])}.", ""]
    return lines


def describe_skipped(count: int) -> str:
    """The lines of the results files read that were not case records: left out, so every figure lacks them."""
    many = count != 1
    return (f"**{count} record{'s' * many} left out**: {'lines' if many else 'a line'} of the results read that "
            f"{'are not case records' if many else 'is not a case record'} this version can read (each named in "
            "the warnings, the first in summary.json's `skipped_records`); the figures below leave "
            f"{'them' if many else 'it'} out (a continued run ran {'their cases' if many else 'its case'} again).")


def describe_budget(budget: Mapping[str, Any]) -> str:
    """The cases a session budget left not run, and the first refusal's figures."""
    many = "s were" if budget["not_run"] != 1 else " was"
    why = escape_cell(budget["reason"].removeprefix("not run: "))
    others = budget.get("budgets", 1) - 1
    also = f"; {others} other refusal{'s' * (others != 1)} with other figures (shards, workers or sessions)" \
        if others > 0 else ""
    return (f"**{budget['not_run']} case{many} not run**: a budget was spent. The first refused: {why} "
            f"(spent when it was refused; cases already running finished after it){also}.")


def describe_left_out(left_out: Mapping[str, Any], shown: int = 10) -> str:
    """The earlier records a continued run left out of its reports: their suite no longer has their task."""
    cases = left_out["cases"]
    parts = []
    for path, tasks in left_out["tasks"].items():
        names = ", ".join(f"{code_span(task)} ({n})" for task, n in list(tasks.items())[:shown])
        more = f" and {len(tasks) - shown} more" if len(tasks) > shown else ""
        parts.append(f"{code_span(path)}: {names}{more}")
    return (f"**{cases} earlier case{'s' * (cases != 1)} left out**: their suite no longer has their task "
            f"({'; '.join(parts)}). `results.jsonl` keeps them; `--bench-fresh` starts the run over.")


def render_suite(suite: Mapping[str, Any], *, max_listed: int) -> list[str]:
    """The section of one suite file."""
    lines = [f"## {suite_heading(suite)}", "", *markdown_suite_warning(suite), describe_counts(suite["totals"]), ""]
    lines += describe_suite_spend(suite.get("spend") or {})
    lines += render_model_sections(suite)
    lines += render_latency(suite)
    lines += render_task_sections(suite, max_listed)
    lines += render_declared_sections(suite)
    lines += render_case_lists(suite, max_listed)
    return lines


def suite_heading(suite: Mapping[str, Any]) -> str:
    """The suite's name, and its file when known."""
    heading = escape_cell(suite["suite"] or "suite")
    if suite.get("path"):
        heading += f" ({code_span(suite['path'])})"
    return heading


def render_model_sections(suite: Mapping[str, Any]) -> list[str]:
    """The models against each other: leaderboard, intervals, differences, ratings, the Elo of past runs."""
    lines = ["### Leaderboard", "", *render_leaderboard(suite), "", *render_missing_costs(suite)]
    lines += render_intervals(suite)
    lines += [*render_differences(suite), *render_ratings(suite), *render_pairwise_table(suite)]
    if suite.get("leaderboard"):  # the Elo of past runs, beside this run's ratings
        lines += [*render_elo(suite["leaderboard"]), ""]
    return lines


def render_task_sections(suite: Mapping[str, Any], max_listed: int) -> list[str]:
    """The tasks: their table, breakdowns, turns of conversations and repeats."""
    lines = ["### Tasks", "", *render_task_table(suite), "", *render_breakdowns(suite)]
    if (suite.get("turns") or {}).get("count"):
        lines += ["### Turns", "", *render_turn_tables(suite["turns"])]
    return lines + render_repeats(suite, max_listed=max_listed)


def render_declared_sections(suite: Mapping[str, Any]) -> list[str]:
    """What the suite declares or its graders found: aggregate tables, judge panels, the audit."""
    lines: list[str] = []
    for table in suite.get("aggregates") or []:
        lines += [*render_aggregate(table), ""]
    for panel in suite.get("panels") or []:
        lines += [*render_panel(panel), ""]
    if suite.get("audit"):
        lines += ["### Audit", "", AUDIT_HOW_TO_READ, "", *render_audit_items(suite["audit"]), ""]
    return lines


CASE_LISTS = (
    ("Failures", "failures"),
    ("Infrastructure errors", "errors"),
    ("Unscored", "unscored"),
    ("Invalid cases", "invalid"),
)
"""The lists of cases worth a look: heading, and the suite summary's key."""


def render_case_lists(suite: Mapping[str, Any], max_listed: int) -> list[str]:
    """Failures, errors, unscored and invalid cases, each list under its heading when it has any."""
    lines = []
    for heading_text, key in CASE_LISTS:
        cases = suite.get(key) or []
        if cases:
            lines += [f"### {heading_text} ({len(cases)})", "", *render_case_list(cases, max_listed), ""]
    return lines


def render_leaderboard(suite: Mapping[str, Any]) -> list[str]:
    """One row per model, best mean composite first, then best pass rate; ties keep suite order."""
    components: list[str] = list(suite["components"])
    header = ["Model", "Cases", "Pass rate", "Mean score"]
    header += [escape_cell(name) for name in components]
    header += ["Unscored", "Errors", "Tokens in/out", "Cost", "Mean latency"]
    align = ["---"] + ["---:"] * (len(header) - 1)
    rows = []
    for model in rank_models(suite["models"]):
        cells = [
            escape_cell(model["label"]),
            str(model["cases"]),
            format_percent(model["pass_rate"]),
            format_score(model["mean_composite"]),
        ]
        cells += [format_score(model["components"].get(name)) for name in components]
        cells += [
            str(model["unscored"]),
            str(model["errors"]),
            format_tokens(model["input_tokens"], model["output_tokens"]),
            format_cost(model["cost_usd"]),
            format_seconds(model["mean_latency_s"]),
        ]
        rows.append(cells)
    return [table_row(header), table_row(align)] + [table_row(cells) for cells in rows]


def render_missing_costs(suite: Mapping[str, Any]) -> list[str]:
    """Under the leaderboard, a paragraph for each cost that leaves cases out (a dash alone would look free)."""
    return [text for model in suite["models"] for line in describe_missing_cost(model)
            for text in (markdown_text(line), "")]


def render_task_table(suite: Mapping[str, Any]) -> list[str]:
    """Task x model mean composite, with the mean over all models last."""
    models = suite["models"]
    header = ["Task"] + [escape_cell(model["label"]) for model in models] + ["All models"]
    align = ["---"] + ["---:"] * (len(header) - 1)
    rows = []
    for task in suite["tasks"]:
        cells = [escape_cell(task["task"])]
        cells += [format_score(task["models"].get(model["model"])) for model in models]
        cells.append(format_score(task["mean_composite"]))
        rows.append(cells)
    return [table_row(header), table_row(align)] + [table_row(cells) for cells in rows]


def render_turn_tables(turns: Mapping[str, Any]) -> list[str]:
    """The per-turn tables of conversation suites (``report.turns.summarize_turns``).

    First, per model and per-turn scorer, the mean of each turn; then the share of replies per turn whose
    thinking format was valid.
    """
    count = int(turns["count"])
    columns = [f"Turn {n}" for n in range(1, count + 1)]
    lines: list[str] = []
    if turns["scores"]:
        lines += [*_turn_score_table(turns["scores"], columns), ""]
    if turns["format_valid"]:
        lines += ["Thinking format valid (exactly one pair of thinking tags):", ""]
        lines += [*_turn_format_table(turns["format_valid"], columns), ""]
    return lines


def _turn_score_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    lines = [table_row(["Model", "Scorer", *columns]), table_row(["---", "---"] + ["---:"] * len(columns))]
    for row in rows:
        cells = [escape_cell(row["label"]), escape_cell(row["scorer"])]
        lines.append(table_row(cells + [format_score(value) for value in row["means"]]))
    return lines


def _turn_format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    lines = [table_row(["Model", *columns]), table_row(["---"] + ["---:"] * len(columns))]
    for row in rows:
        lines.append(table_row([escape_cell(row["label"])] + [format_percent(value) for value in row["rates"]]))
    return lines


def render_aggregate(table: Mapping[str, Any]) -> list[str]:
    """A suite's aggregate table (``aggregates:``): heading, then by-columns and figures."""
    heading = f"### {escape_cell(table['title'])}"
    if table.get("csv"):
        heading += f" ({code_span(table['csv'])})"
    header, *rows = table_cells(table, missing=MISSING)
    align = ["---"] * len(table["by"]) + ["---:"] * len(table["columns"])
    return [heading, "", table_row([escape_cell(c) for c in header]), table_row(align)] + [
        table_row([escape_cell(c) for c in row]) for row in rows
    ]


def render_panel(panel: Mapping[str, Any]) -> list[str]:
    """A judge panel (``report.panels``): reports without a verdict, spreads, flagged cases, agreement."""
    lines = [f"### Judge panel: {escape_cell(panel['component'])}", "", describe_panel(panel), ""]
    lines += [_flagged_line(case) for case in panel["flagged"]]
    if panel["flagged"]:
        lines.append("")
    return lines + _agreement_table(panel["agreement"])


def describe_panel(panel: Mapping[str, Any]) -> str:
    """The panel's judges and cases, its reports without a verdict, its spreads and flagged cases, as a sentence."""
    judges = ", ".join(escape_cell(label) for label in panel["judges"])
    parts = [f"{len(panel['judges'])} judges ({judges}) over {panel['cases']} case{'s' * (panel['cases'] != 1)}",
             f"{panel['unread']} report{'s' * (panel['unread'] != 1)} without a verdict"]
    if panel["mean_spread"] is not None:
        parts.append(f"spread of the verdicts: mean {panel['mean_spread']:.4g}, largest {panel['largest_spread']:.4g}")
    if panel["max_spread"] is not None:
        parts.append(f"{len(panel['flagged'])} over max_spread {panel['max_spread']:g}")
    return "; ".join(parts) + "."


def _flagged_line(case: Mapping[str, Any]) -> str:
    verdicts = ", ".join(f"{escape_cell(label)} {MISSING if raw is None else format(raw, 'g')}"
                         for label, raw in case["verdicts"].items())
    return f"- {code_span(case['nodeid'])}: spread {case['spread']:g} ({verdicts})"


def _agreement_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    header = [
        "Agreement on",
        "Krippendorff's α (interval)",  # noqa: RUF001 - the Greek letter is the statistic's name
        "Cases",
    ]
    lines = [table_row(header), table_row(["---", "---:", "---:"])]
    for row in rows:
        lines.append(table_row([escape_cell(row["item"]), format_score(row["alpha"]), str(row["units"])]))
    return lines


def render_elo(board: Mapping[str, Any]) -> list[str]:
    """The Elo leaderboard after this run (``report.leaderboard``): ratings, this run's change, sessions."""
    again = f" ({board['replaced']} played again in place of earlier ones)" if board.get("replaced") else ""
    counts = (f"{board['added']} session{'s' * (board['added'] != 1)} added this run{again}, {board['total']} in all; "
              f"K={board['k']:g}, start {board['initial']:g}, expected scores from {board['expected_from']}.")
    lines = [f"### Elo leaderboard ({code_span(board['markdown'])})", "", counts, "",
             table_row(["Rank", "Model", "Elo", "Change this run", "Sessions"]),
             table_row(["---:", "---", "---:", "---:", "---:"])]
    for rank, row in enumerate(board["ratings"], 1):
        change = MISSING if row["change"] is None else f"{row['change']:+.1f}"
        cells = [str(rank), escape_cell(row["model"]), f"{row['elo']:.1f}", change, str(row["sessions"])]
        lines.append(table_row(cells))
    return lines


def render_case_list(cases: Sequence[Mapping[str, Any]], max_listed: int) -> list[str]:
    """A bullet per case: node id and reason, capped so a bad run stays readable."""
    lines = [_case_line(case) for case in cases[:max_listed]]
    if len(cases) > max_listed:
        lines.append(f"- … and {len(cases) - max_listed} more")
    return lines


def _case_line(case: Mapping[str, Any]) -> str:
    """The case's node id, and its reason cut at ``MAX_REASON_CHARS``."""
    reason = case.get("reason") or ""
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    line = f"- {code_span(case['nodeid'])}"
    return f"{line}: {escape_cell(reason)}" if reason else line


def rank_models(models: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Models by mean composite, then pass rate, both descending; unknown values go last."""

    def key(model: Mapping[str, Any]) -> tuple[bool, float, bool, float]:
        score, pass_rate = model["mean_composite"], model["pass_rate"]
        return (score is None, -(score or 0.0), pass_rate is None, -(pass_rate or 0.0))

    return sorted(models, key=key)  # sorted() is stable: ties keep first-seen order


def describe_counts(counts: Mapping[str, Any]) -> str:
    """``12 cases: 7 passed, 3 failed, 1 unscored, 1 error.`` (zero counts after failed are left out)."""
    parts = [f"{counts['passed']} passed", f"{counts['failed']} failed"]
    for key, singular, plural in (
        ("unscored", "unscored", "unscored"),
        ("errors", "error", "errors"),
        ("invalid", "invalid", "invalid"),
        ("skipped", "skipped", "skipped"),
    ):
        if counts.get(key):
            parts.append(f"{counts[key]} {singular if counts[key] == 1 else plural}")
    noun = "case" if counts["cases"] == 1 else "cases"
    return f"{counts['cases']} {noun}: {', '.join(parts)}."


def format_score(value: float | None) -> str:
    """A score with 4 decimals, or ``MISSING``."""
    return MISSING if value is None else f"{value:.4f}"


def format_percent(value: float | None) -> str:
    """A rate (0 to 1) as a percentage with one decimal, or ``MISSING``."""
    return MISSING if value is None else f"{value * 100:.1f}%"


def describe_suite_spend(spend: Mapping[str, Any]) -> list[str]:
    """The suite's total use, the judges' apart: ``Used in all: tokens 1,200 / 300, $0.0100; judges 400 / 20, $0.0010``.

    Nothing when no call reported tokens or had a price (offline providers).
    """
    parts = []
    for who, prefix in (("the models", ""), ("judges", "judge_")):
        tokens = (spend.get(f"{prefix}input_tokens"), spend.get(f"{prefix}output_tokens"))
        cost = spend.get(f"{prefix}cost_usd")
        if tokens == (None, None) and cost is None:
            continue
        parts.append(f"{who} {format_tokens(*tokens)} tokens in / out, {format_cost(cost)}")
    return [f"Used in all: {'; '.join(parts)}.", ""] if parts else []


def format_tokens(input_tokens: int | None, output_tokens: int | None) -> str:
    """``in / out`` token counts with thousands separators, ``MISSING`` for an unknown count (alone if both are)."""
    if input_tokens is None and output_tokens is None:
        return MISSING
    return " / ".join(MISSING if n is None else f"{n:,}" for n in (input_tokens, output_tokens))


def format_cost(value: float | None) -> str:
    """A cost in US dollars with 4 decimals, or ``MISSING``."""
    return MISSING if value is None else f"${value:.4f}"


def format_seconds(value: float | None) -> str:
    """A duration in seconds with 2 decimals, or ``MISSING``."""
    return MISSING if value is None else f"{value:.2f} s"


def table_row(cells: Sequence[str]) -> str:
    """A Markdown table row; the cells must already be escaped."""
    return "| " + " | ".join(cells) + " |"


def escape_cell(text: Any) -> str:
    """Make any text safe inside a table cell or a list item (``report.escape.markdown_cell``).

    One line; HTML, links, images, emphasis and ``|`` are escaped, so it renders as exactly the text.
    """
    return markdown_cell(text)


def code_span(text: Any) -> str:
    """``text`` as inline code, fenced by more backticks than it contains (``report.escape.markdown_code``).

    For headings and list items only: inside a table a ``|`` would still end the cell.
    """
    return markdown_code(text)
