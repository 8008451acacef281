"""Turn case records into per-suite, per-model and per-task numbers that every report shares.

Pure functions over ``CaseRecord``s: no pytest, no files. Models, tasks and components appear in
the order first seen in the records given, so the caller decides the order (collection order from
a finalized store makes ``-n 2`` and ``-n 0`` reports identical). Lists, not dicts keyed by name,
carry the order, so it survives a ``json.dumps(..., sort_keys=True)``.

The summary is plain JSON (no NaN: a figure that cannot be estimated is None) and is what
summary.json holds, report.md renders and the dashboard reads. Its shape::

    {"totals": counts,
     "cache": {"hits", "misses", "refreshed"},  # only when the response cache was asked about a call
     "suites": [{
        "suite", "path", "components" (leaderboard component names), "totals": counts,
        "models": [{                            # leaderboard rows, first-seen order
            "model", "label", counts..., "components": {name: mean}, "input_tokens", "output_tokens",
            "cost_usd", "cost_known_cases", "cost_missing", "mean_latency_s",
            "expected", "scored", "missing", "coverage",          # scored / expected cases
            "intervals": {"mean_composite", "normalised", "pass_rate", "judge_mean": estimate | None,
                          "components": {name: estimate | None}},  # pass_rate: Wilson's bounds,
                                                    # "method": "wilson", when the unit is the case
            "judge_input_tokens", "judge_output_tokens", "judge_cost_usd", "judge_cost_missing"}],
        "tasks": [...], "turns": {...}, "panels": [...],
        "failures" / "errors" / "unscored" / "invalid": [{"nodeid", "model", "task", "reason"}],
        "statistics": {"confidence", "method": "cluster-t", "min_units", "unit": "case" | "task" | "cluster",
            "expected_cases", "judges", "ordinal"},
        "comparisons": None | {"test": "wilcoxon" | "permutation", "test_name", "correction": "holm", "alpha",
            "unit", "tiers": [[model, ...], ...], "method", "power", "min_units",
            "pairs": [{"a", "b", "n", "units", "unit", "mean_a", "mean_b", "diff", "se", "ci_low", "ci_high",
                       "too_few", "mde", "wins", "losses", "ties", "p_value", "p_holm", "significant"}]},
        "breakdowns": [{"dimension", "source": "tag" | "variable" | "turn", "scorer",
            "groups": [{"value", "cases", "models": {model: estimate | None}}]}],
        "repeats": None | {"runs", "ks", "models": [{"model", "tasks", "stable-pass", "flaky", "stable-fail",
            "pass_at_k": [{"k", "value", "tasks"}], "pass_hat_k": [...]}],
            "cases": [{"model", "task", "runs", "n", "passed", "excluded", "rate", "low", "high", "label"}]},
        "ratings": None | {"scores": None | rated, "pairwise": [rated + {"component", "position_bias":
            {"first", "second", "n", "rate", "p_value"}}]},
            # rated: {"games", "dropped", "comparisons", "n_boot", "bradley_terry": [{"model", "rating",
            #         "ci_low", "ci_high", "games"}], "win_rates": [{"model", "win", "loss", "tie", "win_rate",
            #         "loss_rate", "win_rate_adjusted"}]}
        "audit": [{"kind", "suite", "path", "title", "detail", "why", "cases": [nodeid, ...]}],
        # and, when the suite declares them: "aggregates" (report.aggregates), "leaderboard" (Elo)
        # and, when some of its agent cases ran without isolation: "sandbox": {"none": [nodeid, ...]}
        # and, when an answer streamed or a case ran in a load step: "latency" (report.latency)
     }]}

An ``estimate`` is ``{"mean", "se", "ci_low", "ci_high", "n" (cases with a value), "units" (units with a
value), "unit", "method", "too_few"}`` (``report.statistics.intervals``); what each figure counts is in
``report.statistics.leaderboard``, ``report.comparisons``, ``report.breakdowns``, ``report.repeats``,
``report.ratings`` and ``report.audit``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from bench_plugin.report.case_data import cost_note_of, judge_usage, number
from bench_plugin.report.case_table import CaseCell
from bench_plugin.report.latency import summarize_latency
from bench_plugin.report.panels import summarize_panels
from bench_plugin.report.sandbox_flag import sandbox_section
from bench_plugin.report.statistics.plain import mean, rate, total
from bench_plugin.report.statistics.suite import suite_statistics
from bench_plugin.report.turns import is_turn_component, summarize_turns
from bench_plugin.results.record import (
    CACHE_COUNTS,
    ERROR,
    FAILED,
    INVALID,
    PASSED,
    SKIPPED,
    UNSCORED,
    CaseRecord,
)

# status -> the count's key in every summary row
COUNT_KEYS = {
    PASSED: "passed",
    FAILED: "failed",
    UNSCORED: "unscored",
    ERROR: "errors",
    INVALID: "invalid",
    SKIPPED: "skipped",
}


def summarize(
    records: Sequence[CaseRecord], unfinished: Mapping[str, Collection[CaseCell]] | None = None
) -> dict[str, Any]:
    """Aggregate finished cases for the reports.

    ``unfinished``: when the records are one session's, by suite path its selected cases without a record
    (``case_table.unfinished_cells``): each model is then expected to finish the cases it was selected for
    (``-k``, a shard), not every case another model has. None: every model every case.

    Scored cases are those that passed or failed: pass rates and mean composites use only them.
    Unscored cases (the grader could not decide), infrastructure errors, invalid and skipped cases
    are counted and listed but never averaged in.

    Returns:
        ``{"totals": counts, "suites": [suite, ...]}``, and ``"cache"`` (``count_cache_use``) when the
        response cache was asked about any call, ``"budget"`` (``not_run``, and the first such case's
        ``reason``) when a session budget left cases not run; each suite is ``{"suite", "path",
        "components", "models", "tasks", "turns", "panels", "failures", "errors", "unscored", "invalid"}``,
        where ``models`` and ``tasks`` are lists of rows, ``turns`` is ``report.turns.summarize_turns``
        (per-turn means of conversation suites), ``panels`` is ``report.panels.summarize_panels``
        (judge panels: spreads, flagged cases, agreement) and the last four are lists of
        ``{"nodeid", "model", "task", "reason"}``.
    """
    summary: dict[str, Any] = {"totals": count_statuses(records)}
    cache = count_cache_use(records)
    if cache is not None:
        summary["cache"] = cache
    budget = _budget(records)
    if budget is not None:  # skipped, and why: the terminal said it, and the files must too
        summary["budget"] = budget
    summary["suites"] = [summarize_suite(suite, path, group, _unfinished_in(unfinished, path))
                         for (suite, path), group in _by_suite(records).items()]
    return summary


def _by_suite(records: Sequence[CaseRecord]) -> dict[tuple[str, str], list[CaseRecord]]:
    groups: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        groups.setdefault((record.suite, record.path), []).append(record)
    return groups


def _unfinished_in(unfinished: Mapping[str, Collection[CaseCell]] | None, path: str) -> Collection[CaseCell] | None:
    return None if unfinished is None else unfinished.get(path, ())


def _budget(records: Sequence[CaseRecord]) -> dict[str, Any] | None:
    """The cases a session budget left not run, and why; None when it left none."""
    not_run = [record for record in records if (record.error or {}).get("kind") == "budget"]
    if not not_run:
        return None
    # each session, shard or xdist worker refused with its own figures: how many different ones there were
    return {"not_run": len(not_run), "reason": not_run[0].reason, "budgets": len({record.reason for record in not_run})}


def count_cache_use(records: Iterable[CaseRecord]) -> dict[str, int] | None:
    """What the response cache did for the calls of ``records`` (judges' included), from their ``call_log``.

    Returns:
        ``{"hits", "misses", "refreshed"}``, or None when no call was looked up or stored (the cache was off,
        or every call went to an offline provider). Records cross xdist, so the controller counts every
        worker's calls here.
    """
    counts = dict.fromkeys(CACHE_COUNTS.values(), 0)
    used = False
    for record in records:
        for entry in record.call_log:
            key = CACHE_COUNTS.get(str(entry.get("cache")))
            if key is not None:
                counts[key] += 1
                used = True
    return counts if used else None


def describe_cache_use(cache: dict[str, int]) -> str:
    """One line for the terminal and report.md, e.g. ``response cache: 12 hits, 3 misses``."""
    hits, misses = cache["hits"], cache["misses"]
    parts = [f"{hits} hit{'s' * (hits != 1)}", f"{misses} miss{'es' * (misses != 1)}"]
    if cache["refreshed"]:
        parts.append(f"{cache['refreshed']} refreshed")
    return "response cache: " + ", ".join(parts)


def summarize_suite(
    suite: str, path: str, records: Sequence[CaseRecord], unfinished: Collection[CaseCell] | None = None
) -> dict[str, Any]:
    """The summary of one suite file; see ``summarize``."""
    # per-turn components (J.t1, J.t2...) have their own table, under "turns"
    components = first_seen(
        name for record in records for name, component in record.components.items() if not is_turn_component(component)
    )
    by_model = group_by(records, "model")
    by_task = group_by(records, "task")
    models = [summarize_model(model, group, components) for model, group in by_model.items()]
    summary = {
        "suite": suite,
        "path": path,
        "components": components,
        "totals": count_statuses(records),
        "models": models,
        "tasks": [summarize_task(task, group, list(by_model)) for task, group in by_task.items()],
        "turns": summarize_turns(records),
        "panels": summarize_panels(records),
        "failures": list_cases(records, FAILED),
        "errors": list_cases(records, ERROR),
        "unscored": list_cases(records, UNSCORED),
        "invalid": list_cases(records, INVALID),
        **suite_statistics(path, records, components, models, unfinished),  # adds the judges' usage to the rows
        **sandbox_section(records),  # flagged in every report: agent commands that ran without a sandbox
    }
    summary["spend"] = suite_spend(models)
    latency = summarize_latency(records)
    if latency is not None:  # a streamed answer, or a load step: the latency tables (``report/latency.py``)
        summary["latency"] = latency
    return summary


def summarize_model(model: str, records: Sequence[CaseRecord], components: Sequence[str]) -> dict[str, Any]:
    """One leaderboard row: counts, pass rate, mean scores, tokens, cost and latency of one model."""
    row: dict[str, Any] = {"model": model, "label": records[0].model_label or model}
    row.update(count_statuses(records))
    row["components"] = _component_means(records, components)
    row["input_tokens"] = token_total(records, "input_tokens")
    row["output_tokens"] = token_total(records, "output_tokens")
    row.update(_costs(records))
    row["mean_latency_s"] = mean(record.latency_s for record in records)
    return row


def _component_means(records: Sequence[CaseRecord], components: Sequence[str]) -> dict[str, float | None]:
    """Each component's mean value over the cases that have one."""
    found = [record.components for record in records]  # the property builds a dict on every call
    return {name: mean(number(case.get(name, {}).get("value")) for case in found) for name in components}


def _costs(records: Sequence[CaseRecord]) -> dict[str, Any]:
    """The cases' cost, how many cases it counts, and the cases whose calls (or whose judges' calls) had no price."""
    costs = [usage_number(r, "cost_usd") for r in records]
    return {
        "cost_usd": total(costs),
        "cost_known_cases": sum(cost is not None for cost in costs),
        "cost_missing": missing_cost(record.usage for record in records),
        "judge_cost_missing": missing_cost((record.usage or {}).get("judge") for record in records),
    }


def missing_cost(usages: Iterable[Any]) -> dict[str, Any] | None:
    """The cases whose calls used tokens at no known price, and the first reason given; None when there are none.

    A cost left out this way is never silent: ``cost_usd`` then sums the other cases only (or is None), and the
    reports say how many cases it misses and why (the suite declares no ``pricing:``, the price table does not
    know the model, the endpoint is a server of one's own).
    """
    notes = [note for usage in usages if (note := cost_note_of(usage))]
    return {"cases": len(notes), "note": notes[0]} if notes else None


def describe_missing_cost(row: Mapping[str, Any]) -> list[str]:
    """A sentence for each of the model's costs (its own calls', its judges') that leaves cases out, plain text.

    For report.md, the dashboard and the terminal, under the leaderboard's Cost: the cell alone shows a total
    or a dash, and a dash or a partial total must not pass for a run that cost nothing.
    """
    label, cases = row.get("label") or row.get("model"), row.get("cases", 0)
    lines = []
    for what, key in (("Cost", "cost_missing"), ("Judge cost", "judge_cost_missing")):
        missing = row.get(key)
        if missing:
            lines.append(f"{what} of {label} leaves out {missing['cases']} of {cases} cases, whose calls have no "
                         f"price: {missing['note']}.")
    return lines


def suite_spend(model_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What all of a suite's cases used: its leaderboard rows' tokens and cost summed, the judges' apart."""
    keys = ("input_tokens", "output_tokens", "cost_usd", "judge_input_tokens", "judge_output_tokens", "judge_cost_usd")
    return {key: total(row.get(key) for row in model_rows) for key in keys}


def describe_spend(records: Sequence[CaseRecord]) -> str:
    """What one model's cases cost, for its terminal line: ``cost $0.0123 + judges $0.0040``, and the cases left out.

    With cases whose calls have no price the total is a lower bound: ``cost at least $0.0123 ...``, or ``cost
    unknown`` when nothing priced cost anything (a fresh run and a resumed one whose answers came from the cache
    read the same). "" when no call had a price nor lacked one (offline providers cost nothing to call).
    """
    unpriced = [note for record in records if (note := cost_note(record))]
    own = total(usage_number(record, "cost_usd") for record in records)
    judges = total(judge_usage(record.usage or {}, record.components)["cost_usd"] for record in records)
    parts = [] if own is None else [f"${own:.4f}"]
    parts += [] if judges is None else [f"judges ${judges:.4f}"]
    if not unpriced:
        return "cost " + " + ".join(parts) if parts else ""
    spend = "cost at least " + " + ".join(parts) if (own or 0) + (judges or 0) > 0 else "cost unknown"
    return f"{spend} ({_unpriced_cases(records, unpriced)})"


def _unpriced_cases(records: Sequence[CaseRecord], unpriced: Sequence[str]) -> str:
    """``3 of 10 cases without a price: why`` (or ``whose judge calls have no price``, when the model is priced)."""
    judges_only = all(not cost_note_of(r.usage or {}) for r in records if cost_note(r))
    cases = f"{len(unpriced)} of {len(records)} case{'s' * (len(records) != 1)}"
    what = f"{cases} whose judge calls have no price" if judges_only else f"{cases} without a price"
    return f"{what}: {unpriced[0]}"


def cost_note(record: CaseRecord) -> str | None:
    """Why some call of the case (its model's or a judge's) has no price; None when every call with tokens has one."""
    usage = record.usage or {}
    return cost_note_of(usage) or cost_note_of(usage.get("judge"))


def summarize_task(task: str, records: Sequence[CaseRecord], models: Sequence[str]) -> dict[str, Any]:
    """One row of the task table: counts, the mean composite, and that mean for each model."""
    row: dict[str, Any] = {"task": task}
    row.update(count_statuses(records))
    by_model = group_by(records, "model")
    row["models"] = {model: mean(scored_composites(by_model[model])) for model in models if model in by_model}
    return row


def count_statuses(records: Sequence[CaseRecord]) -> dict[str, Any]:
    """Case counts by status, the pass rate and the mean composite over scored cases.

    An unknown status (a newer writer) is counted in ``cases`` only.
    """
    counts: dict[str, Any] = {"cases": len(records)}
    counts.update({key: 0 for key in COUNT_KEYS.values()})
    for record in records:
        key = COUNT_KEYS.get(record.status)
        if key is not None:
            counts[key] += 1
    counts["pass_rate"] = rate(counts["passed"], counts["passed"] + counts["failed"])
    counts["mean_composite"] = mean(scored_composites(records))
    return counts


def scored_composites(records: Iterable[CaseRecord]) -> list[float | None]:
    """Composites of scored cases only; unscored cases and errors never drag a mean down."""
    return [record.composite for record in records if record.status in (PASSED, FAILED)]


def component_value(record: CaseRecord, name: str) -> float | None:
    """The value of component ``name`` as a float; None when it is missing or not a number."""
    return number(record.components.get(name, {}).get("value"))


def token_total(records: Sequence[CaseRecord], key: str) -> int | None:
    """Tokens summed over cases that report them; None when no endpoint said (not zero)."""
    summed = total(usage_number(record, key) for record in records)
    return None if summed is None else int(summed)


def usage_number(record: CaseRecord, key: str) -> float | None:
    """One usage figure of the record (tokens, ``cost_usd``); None when the endpoint did not report it."""
    value = record.usage.get(key) if record.usage else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def list_cases(records: Sequence[CaseRecord], status: str) -> list[dict[str, str]]:
    """The cases with ``status``, with the reason a person reads next to each."""
    return [
        {"nodeid": r.nodeid, "model": r.model, "task": r.task, "reason": reason_of(r)}
        for r in records
        if r.status == status
    ]


def reason_of(record: CaseRecord) -> str:
    """The record's reason, else the most specific explanation the record carries."""
    if record.reason:
        return record.reason
    if record.error and record.error.get("message"):
        return _error_reason(record.error)
    return _score_reason(record.scores or {})


def _score_reason(scores: Mapping[str, Any]) -> str:
    """Why the case has no score, or the composite's detail; "" when the scores say neither."""
    return str(scores.get("unscored_reason") or scores.get("composite_detail") or "")


def _error_reason(error: Mapping[str, Any]) -> str:
    """``kind: message`` of an error, or its message alone when it has no kind nor type."""
    kind = error.get("kind") or error.get("type")
    message = str(error["message"])
    return f"{kind}: {message}" if kind else message


def group_by(records: Sequence[CaseRecord], attribute: str) -> dict[str, list[CaseRecord]]:
    """Records grouped by one attribute, groups in first-seen order."""
    groups: dict[str, list[CaseRecord]] = {}
    for record in records:
        groups.setdefault(getattr(record, attribute), []).append(record)
    return groups


def first_seen(names: Iterable[str]) -> list[str]:
    """Unique names in the order they first appear."""
    return list(dict.fromkeys(names))
