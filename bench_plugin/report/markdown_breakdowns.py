"""The report.md sections that split the cases: breakdowns by tag, variable and turn, and repeated runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.escape import markdown_cell, markdown_text
from bench_plugin.report.statistics.markdown import header, interval, labels_of, number, ranked_rows, row

SOURCES = {"tag": "tag", "variable": "task variable", "turn": "turn"}


def render_breakdowns(suite: Mapping[str, Any]) -> list[str]:
    """One table per dimension: a row per group, a column per model (mean score and 95% interval)."""
    found = suite.get("breakdowns") or []
    if not found:
        return []
    models = [model["model"] for model in ranked_rows(suite)]
    labels = labels_of(suite)
    lines = [
        "### Breakdowns",
        "",
        "How to read: each model's mean score within a group of cases, with its 95% bootstrap interval, over "
        "its scored cases in the group (for turns: the turn's own score). Cases counts every case of the group, "
        "all models and statuses. Groups come from the tasks' tags, variables and turns; no `aggregates:` needed.",
        "",
    ]
    for dimension in found:
        lines += _dimension_table(dimension, models, labels)
    return lines


def _dimension_table(dimension: Mapping[str, Any], models: Sequence[str], labels: Mapping[str, str]) -> list[str]:
    """A dimension's heading, then a row per group and a column per model."""
    lines = [_dimension_heading(dimension), ""]
    lines += header([markdown_cell(dimension["dimension"]), "Cases", *(labels[model] for model in models)])
    return [*lines, *(_group_row(group, models) for group in dimension["groups"]), ""]


def _dimension_heading(dimension: Mapping[str, Any]) -> str:
    """``#### By name (source)``; the source is left out when it is the name (``turn``)."""
    name = markdown_text(dimension["dimension"])
    source = SOURCES.get(dimension["source"], dimension["source"])
    if dimension.get("scorer"):
        source += f" of {markdown_text(dimension['scorer'])}"
    return f"#### By {name}" + ("" if dimension["dimension"] == source else f" ({source})")


def _group_row(group: Mapping[str, Any], models: Sequence[str]) -> str:
    cells = [markdown_cell(group["value"]), str(group["cases"])]
    return row(cells + [interval(group["models"].get(model), 3) for model in models])


def render_repeats(suite: Mapping[str, Any], *, max_listed: int) -> list[str]:
    """Per model: stable and flaky tasks, pass@k and pass^k; then the flaky tasks, each with its interval."""
    found = suite.get("repeats")
    if not found:
        return []
    labels = labels_of(suite)
    ks = found["ks"]
    lines = [
        "### Repeats",
        "",
        f"How to read: up to {found['runs']} runs per task. Only runs that finished with a score count (n); "
        "infrastructure errors and unscored runs are left out. A task is stable-pass when all its n runs "
        "passed, stable-fail when none did, else flaky. pass@k: the chance that at least one of k runs passes; "
        "pass^k: that all k pass (unbiased estimators, averaged over the tasks with n ≥ k, how many in "
        "brackets).",
        "",
        *header(["Model", "Tasks", "Stable pass", "Flaky", "Stable fail", *_k_columns(ks)]),
    ]
    lines += [_repeats_row(model, labels) for model in found["models"]]
    flaky = [case for case in found["cases"] if case["label"] == "flaky"]
    lines.append("")
    if flaky:
        lines += _flaky_tasks(flaky, labels, max_listed)
    return lines


def _k_columns(ks: Sequence[int]) -> list[str]:
    return [*(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks)]


def _repeats_row(model: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    cells = [labels[model["model"]], str(model["tasks"]), str(model["stable-pass"]), str(model["flaky"]),
             str(model["stable-fail"])]
    return row(cells + [_estimate(entry) for entry in (*model["pass_at_k"], *model["pass_hat_k"])])


def _flaky_tasks(flaky: Sequence[Mapping[str, Any]], labels: Mapping[str, str], max_listed: int) -> list[str]:
    """The flaky tasks (at most ``max_listed``), each with its pass rate and interval."""
    lines = [f"#### Flaky tasks ({len(flaky)})", "",
             "Pass rate over the scored runs, with its 95% Wilson interval (a few runs prove little).", "",
             *header(["Model", "Task", "Passed / n", "Pass rate [95% CI]", "Left out"], left=2)]
    lines += [_flaky_row(case, labels) for case in flaky[:max_listed]]
    if len(flaky) > max_listed:
        lines.append(f"\n… and {len(flaky) - max_listed} more flaky tasks (summary.json lists all).")
    lines.append("")
    return lines


def _flaky_row(case: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    rate = {"mean": case["rate"], "ci_low": case["low"], "ci_high": case["high"]}
    return row([labels[case["model"]], markdown_cell(case["task"]), f"{case['passed']} / {case['n']}",
                interval(rate, as_percent=True), str(len(case["excluded"]))])


def _estimate(entry: Mapping[str, Any]) -> str:
    return f"{number(entry['value'], 3)} ({entry['tasks']})" if entry["value"] is not None else "—"

