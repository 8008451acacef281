"""compare.md: a comparison as GitHub-flavoured markdown, ready to post as a pull request's comment.

The headline table comes first. Long lists are cut with a count (compare.json keeps them whole), and the whole
text stays within ``MAX_CHARS``, GitHub's limit for a comment being 65,536. Every name, id and reason comes from
suites, models or graders, so each goes through ``report.escape``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.compare.cases import LISTS
from bench_plugin.report.compare.matching import ASKED, PROMPT, SCORING
from bench_plugin.report.compare.text import (
    count_verdicts,
    p_value,
    rate_change,
    rate_pair,
    score_change,
    score_pair,
)
from bench_plugin.report.escape import markdown_cell, markdown_code, markdown_text
from bench_plugin.report.markdown import format_cost, format_seconds, table_row

MAX_CHARS = 60_000
LISTED = (50, 20, 5, 0)  # cases (and tasks) listed per list, tried in turn until the text fits
CUT_NOTE = "\n\n*compare.md was cut here to stay under {limit:,} characters; compare.json has everything.*\n"
_CLOSE = "\n\n</details>"
_CHANGES = {PROMPT: "prompt", ASKED: "turns, conversation or tools", SCORING: "scoring"}


def render_compare_markdown(comparison: Mapping[str, Any], limit: int = MAX_CHARS) -> str:
    """compare.md's text: at most ``limit`` characters, its lists shortened first, then the end cut."""
    text = ""
    for listed in LISTED:
        text = "\n".join(render_sections(comparison, listed)) + "\n"
        if len(text) <= limit:
            return text
    note = CUT_NOTE.format(limit=limit)
    kept = text[: limit - len(note) - len(_CLOSE)]
    kept = kept[: kept.rfind("\n") + 1].rstrip("\n")
    opened = kept.count("<details>") > kept.count("</details>")  # cut inside the method: close it
    return kept + (_CLOSE if opened else "") + note


def render_sections(comparison: Mapping[str, Any], listed: int) -> list[str]:
    """Every section's lines, each list showing at most ``listed`` entries."""
    lines = _headline(comparison)
    for row in comparison["comparisons"]:
        lines += _details(row, listed)
    lines += _spend(comparison["comparisons"])
    lines += _not_compared(comparison["matching"], listed)
    lines += _method(comparison["settings"])
    return lines


def _headline(comparison: Mapping[str, Any]) -> list[str]:
    settings = comparison["settings"]
    confidence = f"{settings['confidence'] * 100:g}%"
    lines = [f"## Comparison with the baseline: {comparison['verdict']}", "",
             f"{count_verdicts(comparison)} (suite x model), {comparison['matching']['compared']} cases compared, "
             f"margin ±{settings['margin']:g}, {confidence} confidence.", "",
             table_row(["Suite", "Model", "Cases", "Mean score", f"Change [{confidence} CI]", "p (Holm)",
                        "Pass rate", f"Change [{confidence} CI]", "p (Holm)", "Verdict"]),
             table_row(["---", "---", "---:", "---", "---", "---:", "---", "---", "---:", "---"])]
    for row in comparison["comparisons"]:
        lines.append(table_row([
            markdown_cell(row["suite"]), markdown_cell(row["model"]), str(row["cases"]),
            score_pair(row["score"]), score_change(row["score"]), p_value(row["score"]),
            rate_pair(row["pass_rate"]), rate_change(row["pass_rate"]), p_value(row["pass_rate"]),
            f"**{row['verdict']}**",
        ]))
    baseline, current = comparison["baseline"], comparison["current"]
    lines += ["", f"Baseline: {markdown_code(baseline['source'])} ({baseline['cases']} cases). "
                  f"Current: {markdown_code(current['source'])} ({current['cases']} cases).", ""]
    return lines


def _details(row: Mapping[str, Any], listed: int) -> list[str]:
    lines = [f"### {markdown_text(row['suite'])} · {markdown_text(row['model'])}: {row['verdict']}", ""]
    ids = row["model_id"]
    if ids["baseline"] != ids["current"]:
        lines += [f"Model id: {_codes(ids['baseline'])} in the baseline, {_codes(ids['current'])} now.", ""]
    lines += _task_table(row["tasks"], listed)
    for key, (title, _) in LISTS.items():
        lines += _case_list(title, row["lists"][key], listed)
    return lines


def _task_table(tasks: Sequence[Mapping[str, Any]], listed: int) -> list[str]:
    tested = [task for task in tasks if _tested(task)]
    if not tested:
        return ["No task has two cases or more to be tested on its own (repeat the cases with --bench-runs N to "
                "compare task by task).", ""]
    lines = [f"Tasks tested on their own (two cases or more): {len(tested)} of {len(tasks)}.", ""]
    if listed == 0:
        return lines
    lines += [table_row(["Task", "Cases", "Mean score", "p (Holm)", "Pass rate", "p (Holm)", "Verdict"]),
              table_row(["---", "---:", "---", "---:", "---", "---:", "---"])]
    for task in tested[:listed]:
        lines.append(table_row([markdown_cell(task["task"]), str(task["cases"]), score_change(task["score"]),
                                p_value(task["score"]), rate_change(task["pass_rate"]), p_value(task["pass_rate"]),
                                task["verdict"]]))
    return lines + _more(len(tested) - listed, "task") + [""]


def _tested(task: Mapping[str, Any]) -> bool:
    return any(task[name] is not None and task[name]["p"] is not None for name in ("score", "pass_rate"))


def _case_list(title: str, cases: Sequence[Mapping[str, Any]], listed: int) -> list[str]:
    if not cases:
        return []
    lines = [f"**{title}** ({len(cases)})", ""]
    for case in cases[:listed]:
        reason = f": {markdown_text(case['reason'])}" if case["reason"] else ""
        lines.append(f"- {markdown_code(case['nodeid'])} ({case['baseline']} → {case['current']}){reason}")
    return lines + _more(len(cases) - listed, "case") + [""]


def _more(count: int, noun: str) -> list[str]:
    if count <= 0:
        return []
    return ["", f"... and {count} more {noun}{'s' * (count != 1)} (compare.json lists them all)"]


def _spend(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["### Cost and latency of the compared cases", "",
             table_row(["Suite", "Model", "Cost: baseline", "Cost: current", "Tokens: baseline", "Tokens: current",
                        "Mean latency: baseline", "Mean latency: current"]),
             table_row(["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"])]
    for row in rows:
        before, now = row["spend"]["baseline"], row["spend"]["current"]
        lines.append(table_row([
            markdown_cell(row["suite"]), markdown_cell(row["model"]), _cost(before), _cost(now),
            _tokens(before["tokens"]), _tokens(now["tokens"]),
            format_seconds(before["latency_s"]), format_seconds(now["latency_s"]),
        ]))
    return [*lines, ""]


def _cost(spend: Mapping[str, Any]) -> str:
    unknown = f" ({spend['cost_unknown']} unpriced)" if spend["cost_unknown"] and spend["cost_usd"] is not None else ""
    return format_cost(spend["cost_usd"]) + unknown


def _tokens(count: int | None) -> str:
    return "-" if count is None else f"{count:,}"


def _not_compared(matching: Mapping[str, Any], listed: int) -> list[str]:
    parts = [("only in the baseline", matching["baseline_only"]), ("only in the current run", matching["current_only"]),
             ("asked or scored otherwise", [case["nodeid"] for case in matching["changed"]])]
    if not any(ids for _, ids in parts):
        return []
    lines = ["### Not compared", ""]
    for what, ids in parts:
        if not ids:
            continue
        shown = ", ".join(markdown_code(nodeid) for nodeid in ids[:listed])
        more = len(ids) - listed
        tail = f"{', ' if shown else ''}... and {more} more" if more > 0 else ""
        why = _changes(matching["changes"]) if what.startswith("asked") else ""
        lines.append(f"- {len(ids)} case{'s' * (len(ids) != 1)} {what}{why}: {shown}{tail}")
    return [*lines, ""]


def _changes(counts: Mapping[str, int]) -> str:
    return " (" + ", ".join(f"{_CHANGES[what]}: {count}" for what, count in counts.items()) + ")"


def _codes(values: Sequence[str]) -> str:
    return ", ".join(markdown_code(value) for value in values)


def _method(settings: Mapping[str, Any]) -> list[str]:
    margin, confidence = settings["margin"], settings["confidence"]
    return [
        "<details><summary>Method</summary>", "",
        "Cases are paired on suite, task, prompt variant, model and run, and compared only when both sides sent "
        "the same prompt (and turns, conversation or tools) and, where the records keep it, scored it the same "
        "way. Each figure is the mean of the current value minus the baseline value over the cases that have a "
        "value on both sides (the composite score; for the pass rate, the cases that passed or failed). Per suite "
        "x model the unit is the task (its runs and prompt variants count together); per task, the case. The "
        f"interval is the {confidence * 100:g}% interval of the paired difference over those units, the p-value a "
        "two-sided sign-flip permutation test, adjusted with Holm's method over all suite x model figures, and "
        f"separately over all task figures. **regressed** / **improved**: the adjusted p is below {1 - confidence:g} "
        f"and the change is larger than the margin ({margin:g} on the 0-1 scale); **unchanged**: the whole "
        f"interval lies within ±{margin:g}; **inconclusive**: neither.", "",
        "</details>", "",
    ]
