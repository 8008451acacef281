"""The cases a reviewer reads one by one, and what the compared cases cost and took on each side.

The lists: the cases that newly fail, were fixed, newly error, became unscored, or answer otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from bench_plugin.report.compare.facts import CaseFacts
from bench_plugin.results.record import ERROR, FAILED, PASSED, UNSCORED


def _newly_failing(before: CaseFacts, now: CaseFacts) -> bool:
    return before.status == PASSED and now.status == FAILED


def _fixed(before: CaseFacts, now: CaseFacts) -> bool:
    return before.status == FAILED and now.status == PASSED


def _newly_erroring(before: CaseFacts, now: CaseFacts) -> bool:
    return before.status != ERROR and now.status == ERROR


def _newly_unscored(before: CaseFacts, now: CaseFacts) -> bool:
    return before.status in (PASSED, FAILED) and now.status == UNSCORED


def _output_changed(before: CaseFacts, now: CaseFacts) -> bool:
    return None not in (before.output, now.output) and before.output != now.output


LISTS: dict[str, tuple[str, Callable[[CaseFacts, CaseFacts], bool]]] = {
    "newly_failing": ("Newly failing", _newly_failing),
    "fixed": ("Fixed", _fixed),
    "newly_erroring": ("Newly erroring", _newly_erroring),
    "newly_unscored": ("Became unscored", _newly_unscored),
    "output_changed": ("Output changed", _output_changed),
}
"""Each list's key in compare.json, its title in compare.md, and which pairs it holds."""


def list_changes(pairs: Sequence[tuple[CaseFacts, CaseFacts]]) -> dict[str, list[dict[str, Any]]]:
    """Each list's cases: node id, the status on each side and the current run's reason, in the run's order."""
    lists: dict[str, list[dict[str, Any]]] = {name: [] for name in LISTS}
    for before, now in pairs:
        for name, (_, holds) in LISTS.items():
            if holds(before, now):
                lists[name].append({"nodeid": now.nodeid, "baseline": before.status, "current": now.status,
                                    "reason": now.reason})
    return lists


def spend_of(cases: Sequence[CaseFacts]) -> dict[str, Any]:
    """What ``cases`` cost, their tokens and mean latency; None where nothing is known.

    The cost is in dollars, the judges' calls included; ``cost_unknown`` counts the cases without a price.
    """
    costs = [case.cost_usd for case in cases if case.cost_usd is not None]
    latencies = [case.latency_s for case in cases if case.latency_s is not None]
    tokens = [case.tokens for case in cases if case.tokens is not None]
    return {
        "cost_usd": round(math.fsum(costs), 10) if costs else None,
        "cost_unknown": len(cases) - len(costs),
        "tokens": sum(tokens) if tokens else None,
        "latency_s": round(math.fsum(latencies) / len(latencies), 6) if latencies else None,
    }
