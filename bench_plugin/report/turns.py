"""Per-turn figures of conversation suites: each turn's mean score and thinking-format compliance.

Pure functions over ``CaseRecord``s, like ``summary.py``. A per-turn component is one whose dict
carries ``turn`` and ``scorer`` (``J.t2``: turn 2 of scorer ``J``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.statistics.plain import mean, rate
from bench_plugin.results.record import CaseRecord


def is_turn_component(component: Mapping[str, Any]) -> bool:
    """Whether a component dict is one turn of a per-turn scorer (it carries ``turn`` and ``scorer``)."""
    return isinstance(component.get("turn"), int) and isinstance(component.get("scorer"), str)


def summarize_turns(records: Sequence[CaseRecord]) -> dict[str, Any]:
    """Per model: the mean of each per-turn scorer on each turn, and the share of valid thinking format.

    Returns:
        ``{"count": N, "scores": [{"model", "label", "scorer", "means": [turn 1, turn 2, ...]}],
        "format_valid": [{"model", "label", "rates": [...]}]}``; ``count`` is the number of turn
        columns (0 and empty lists when no record has per-turn scores or thinking tags). Models and
        scorers come in first-seen order; a turn with no value is None.
    """
    components = _turn_components(records)
    scorers = list(dict.fromkeys(c["scorer"] for c in components))
    checked = _checked_turns(records)
    turns = range(1, max(_turn_numbers(components, checked), default=0) + 1)
    scores, formats = [], []
    for model, group in _by_model(records).items():
        label = _label(group, model)
        scores += _score_rows(model, label, group, scorers, turns)
        formats += _format_rows(model, label, group, turns) if checked else []
    return {"count": len(turns) if scores or formats else 0, "scores": scores, "format_valid": formats}


def _label(records: Sequence[CaseRecord], model: str) -> str:
    """The model's display label, from its first record."""
    return records[0].model_label or model


def _turn_components(records: Sequence[CaseRecord]) -> list[Mapping[str, Any]]:
    return [c for r in records for c in r.components.values() if is_turn_component(c)]


def _checked_turns(records: Sequence[CaseRecord]) -> list[Mapping[str, Any]]:
    """The transcript turns whose thinking format was checked."""
    return [t for r in records for t in r.turns if t.get("format_valid") is not None]


def _turn_numbers(components: Sequence[Mapping[str, Any]], checked: Sequence[Mapping[str, Any]]) -> list[int]:
    """The turns that per-turn scorers scored, and those whose thinking format was checked."""
    return [c["turn"] for c in components] + [t["index"] for t in checked]


def _score_rows(
    model: str, label: str, records: Sequence[CaseRecord], scorers: Sequence[str], turns: range
) -> list[dict[str, Any]]:
    """A row per scorer that has a value on some turn: its mean on each turn."""
    means = {scorer: _turn_means(records, scorer, turns) for scorer in scorers}
    return [{"model": model, "label": label, "scorer": scorer, "means": found}
            for scorer, found in means.items() if _any_value(found)]


def _format_rows(model: str, label: str, records: Sequence[CaseRecord], turns: range) -> list[dict[str, Any]]:
    """The model's share of valid thinking format on each turn, when some turn was checked."""
    rates = [_format_rate(records, turn) for turn in turns]
    return [{"model": model, "label": label, "rates": rates}] if _any_value(rates) else []


def _by_model(records: Sequence[CaseRecord]) -> dict[str, list[CaseRecord]]:
    groups: dict[str, list[CaseRecord]] = {}
    for record in records:
        groups.setdefault(record.model, []).append(record)
    return groups


def _any_value(figures: Sequence[float | None]) -> bool:
    return any(value is not None for value in figures)


def _turn_means(records: Sequence[CaseRecord], scorer: str, turns: range) -> list[float | None]:
    """The mean of ``scorer`` on each turn over ``records``."""
    return [mean(_turn_value(record, scorer, turn) for record in records) for turn in turns]


def _turn_value(record: CaseRecord, scorer: str, turn: int) -> float | None:
    component = next((c for c in record.components.values() if _is_turn_of(c, scorer, turn)), None)
    return None if component is None else _number(component.get("value"))


def _is_turn_of(component: Mapping[str, Any], scorer: str, turn: int) -> bool:
    return is_turn_component(component) and component["scorer"] == scorer and component["turn"] == turn


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _format_rate(records: Sequence[CaseRecord], turn: int) -> float | None:
    known = [t["format_valid"] for r in records for t in r.turns if _is_known_format(t, turn)]
    return rate(sum(map(bool, known)), len(known))


def _is_known_format(entry: Mapping[str, Any], turn: int) -> bool:
    """Whether a transcript turn is ``turn`` and its thinking format was checked."""
    return entry.get("index") == turn and entry["format_valid"] is not None
