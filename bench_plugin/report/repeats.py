"""Repeated runs of a task: each model's pass rate per task, pass@k and pass^k, and a stable / flaky label.

Only runs that finished with a score count (``n``): infrastructure errors and unscored runs say
nothing about whether the model can pass, so they are left out of ``n`` and named in ``excluded``.
``c`` of the ``n`` passed. Per task and model:

- the label is stable-pass (every scored run passed), stable-fail (none did) or flaky, with the pass
  rate's 95% Wilson interval (``statistics.flakiness_label``);
- pass@k (at least one of k runs passes) and pass^k (all k pass) are the unbiased estimators
  (``statistics.pass_at_k``, ``statistics.pass_hat_k``), averaged over the tasks with ``n >= k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench_plugin.report.case_data import SCORED
from bench_plugin.report.statistics.core import rounded
from bench_plugin.report.statistics.repeats import flakiness_label, pass_at_k, pass_hat_k
from bench_plugin.results.record import PASSED, CaseRecord

SHOWN_KS = (1, 2, 3, 5, 10, 20, 50, 100)
LABELS = ("stable-pass", "flaky", "stable-fail")


def ks_for(runs: int) -> list[int]:
    """The k values worth a column for ``runs`` runs per task: 1, 2, 3, 5, 10... and ``runs`` itself."""
    return sorted({k for k in SHOWN_KS if k <= runs} | {runs})


def summarize_repeats(records: Sequence[CaseRecord], models: Sequence[str]) -> dict[str, Any] | None:
    """The section's data, or None when no model ran a task more than once.

    Args:
        records: the suite's records.
        models: the models in the order to show (best first).

    Returns:
        ``{"runs", "ks", "models": [{"model", "tasks", "stable-pass", "flaky", "stable-fail", "pass_at_k",
        "pass_hat_k"}], "cases": [{"model", "task", "runs", "n", "passed", "excluded", "rate", "low", "high",
        "label"}]}``: ``excluded`` names the runs left out of ``n``; ``pass_at_k`` and ``pass_hat_k`` are lists
        of ``{"k", "value", "tasks"}`` (``tasks``: how many tasks had ``n >= k``; ``value`` None when none had).
    """
    groups = _by_model_and_task(records)
    runs = max((len(group) for group in groups.values()), default=0)
    if runs < 2:
        return None
    labels: dict[tuple[int, int], dict[str, Any]] = {}  # (passed, n) -> label and interval: a few pairs recur
    cases = [_case(model, task, group, labels) for (model, task), group in groups.items()]
    ks = ks_for(runs)
    by_model = _by_model(cases)
    rows = [_model_row(model, by_model.get(model, []), ks) for model in models]
    order = {model: index for index, model in enumerate(models)}
    cases.sort(key=lambda case: order.get(case["model"], len(order)))  # stable: tasks keep suite order
    return {"runs": runs, "ks": ks, "models": rows, "cases": cases}


def _by_model_and_task(records: Sequence[CaseRecord]) -> dict[tuple[str, str], list[CaseRecord]]:
    groups: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        groups.setdefault((record.model, record.task), []).append(record)
    return groups


def _by_model(cases: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_model: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        by_model.setdefault(case["model"], []).append(case)
    return by_model


def _model_row(model: str, cases: Sequence[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """A model's tasks with a scored run, its tasks by label, and its pass@k and pass^k."""
    row: dict[str, Any] = {"model": model, "tasks": sum(bool(case["n"]) for case in cases)}
    row.update({label: sum(case["label"] == label for case in cases) for label in LABELS})
    row["pass_at_k"] = [_average(cases, k, pass_at_k) for k in ks]
    row["pass_hat_k"] = [_average(cases, k, pass_hat_k) for k in ks]
    return row


def _case(
    model: str, task: str, group: Sequence[CaseRecord], labels: dict[tuple[int, int], dict[str, Any]]
) -> dict[str, Any]:
    n = sum(record.status in SCORED for record in group)
    passed = sum(record.status == PASSED for record in group)
    if (passed, n) not in labels:
        labels[passed, n] = _flakiness(passed, n)
    return {
        "model": model,
        "task": task,
        "runs": len(group),
        "n": n,
        "passed": passed,
        "excluded": [record.nodeid for record in group if record.status not in SCORED],
        **labels[passed, n],
    }


def _flakiness(passed: int, n: int) -> dict[str, Any]:
    """The pass rate with its Wilson interval, and the label; all None without a scored run."""
    flakiness = flakiness_label(passed, n)
    if flakiness is None:
        return dict.fromkeys(("rate", "low", "high", "label"))
    interval = flakiness.interval
    return {"rate": rounded(interval.rate), "low": rounded(interval.low), "high": rounded(interval.high),
            "label": flakiness.label}


def _average(cases: Sequence[dict[str, Any]], k: int, estimator: Any) -> dict[str, Any]:
    counts: dict[tuple[int, int], int] = {}  # (n, passed) -> tasks: the estimator runs once per pair
    for case in cases:
        if case["n"] >= k:
            key = (case["n"], case["passed"])
            counts[key] = counts.get(key, 0) + 1
    tasks = sum(counts.values())
    total = sum(estimator(n, passed, k) * count for (n, passed), count in counts.items())
    return {"k": k, "value": rounded(total / tasks) if tasks else None, "tasks": tasks}
