"""What the statistical report sections read from a record: its case key, its score, its judges, its judge usage.

A case is the same case for every model when its task and run are the same (``CaseKey``). Only
scored cases (passed or failed) have a score; unscored cases (the grader could not decide),
infrastructure errors, invalid and skipped cases have none, and no figure counts them as zero unless
it says so (the coverage-normalised score does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench_plugin.report.turns import is_turn_component
from bench_plugin.results.record import FAILED, PASSED, CaseRecord

CaseKey = tuple[str, int]  # (task, run): the same case for every model of a suite
SCORED = (PASSED, FAILED)


def number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (not a bool), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def cost_note_of(usage: Any) -> str | None:
    """Why the calls a usage mapping sums (a record's ``usage`` or its ``judge``) have no price; None when they do."""
    note = usage.get("cost_note") if isinstance(usage, Mapping) else None
    return note if isinstance(note, str) else None


def case_key(record: CaseRecord) -> CaseKey:
    """The case's identity across models: its task and run."""
    return (record.task, record.run)


def is_scored(record: CaseRecord) -> bool:
    """Whether the case has a score: it passed or failed (and carries a composite)."""
    return record.status in SCORED and number(record.composite) is not None


def score_of(record: CaseRecord) -> float | None:
    """The case's composite when it is scored, else None (never 0)."""
    return number(record.composite) if record.status in SCORED else None


def case_keys(records: Iterable[CaseRecord]) -> list[CaseKey]:
    """Every case key of the records, first seen first: the cases each model was expected to finish."""
    return list(dict.fromkeys(case_key(record) for record in records))


def runs_repeat(records: Iterable[CaseRecord]) -> bool:
    """Whether some model ran some task more than once (then tasks, not cases, are resampled)."""
    seen: set[tuple[str, str]] = set()
    for record in records:
        key = (record.model, record.task)
        if key in seen:
            return True
        seen.add(key)
    return False


def is_judge_component(component: Mapping[str, Any]) -> bool:
    """Whether a component came from a model judging (it kept a reply, judge usage, a panel or a pairwise record)."""
    return (
        component.get("judge_output") is not None
        or bool(component.get("usage"))
        or "panel" in component
        or "pairwise" in component
    )


def judge_names(cases: Iterable[Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """The suite's leaderboard components (not per-turn ones) that judges gave, in first-seen order.

    Args:
        cases: each case's components (``record.components``).

    A per-turn scorer's summary component (``score`` = the mean of ``score.t1``, ``score.t2``) is a
    judge when its turns are.
    """
    cases = list(cases)
    judged = _judged_names(cases)
    return [name for name in _plain_names(cases) if name in judged]


def _judged_names(cases: Sequence[Mapping[str, Mapping[str, Any]]]) -> set[str]:
    """The components judges gave: a per-turn one counts as its scorer's."""
    return {_leaderboard_name(name, component) for components in cases for name, component in components.items()
            if is_judge_component(component)}


def _leaderboard_name(name: str, component: Mapping[str, Any]) -> str:
    return str(component["scorer"]) if is_turn_component(component) else name


def _plain_names(cases: Sequence[Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """The leaderboard components (not per-turn ones), first seen first."""
    return list(dict.fromkeys(
        name for components in cases for name, component in components.items() if not is_turn_component(component)
    ))


def judge_value(components: Mapping[str, Mapping[str, Any]], judges: Sequence[str]) -> float | None:
    """The mean of a case's judge components (``record.components``) that have a value; None when no judge scored it."""
    values = [value for name in judges if (value := number(components.get(name, {}).get("value"))) is not None]
    return sum(values) / len(values) if values else None


def judge_usage(usage: Mapping[str, Any], components: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """Tokens and cost a case's judges used (None: nobody reported it).

    Args:
        usage: the record's ``usage``; its ``judge`` entry, when the runner kept one, sums every grading
            call with its price.
        components: the record's components: without a ``judge`` entry, their ``usage`` is summed.
    """
    totals: dict[str, float | None] = {"input_tokens": None, "output_tokens": None, "cost_usd": None}
    kept = usage.get("judge")
    if isinstance(kept, Mapping):
        return {key: number(kept.get(key)) for key in totals}
    for component in components.values():
        _add_usage(totals, component.get("usage") or {})
    return totals


def _add_usage(totals: dict[str, float | None], usage: Mapping[str, Any]) -> None:
    """Add a component's usage to ``totals``, key by key, where it reports one."""
    for key in totals:
        value = number(usage.get(key))
        if value is not None:
            totals[key] = (totals[key] or 0.0) + value


def error_class(record: CaseRecord) -> str:
    """What kind of infrastructure failure a record holds: the error's kind, else its type, else ``unknown``."""
    error = record.error or {}
    return str(error.get("kind") or error.get("type") or "unknown")
