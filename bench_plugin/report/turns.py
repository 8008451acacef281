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
    components = [c for r in records for c in r.components.values() if is_turn_component(c)]
    scorers = list(dict.fromkeys(c["scorer"] for c in components))
    checked = [t for r in records for t in r.turns if t.get("format_valid") is not None]
    count = max([c["turn"] for c in components] + [t["index"] for t in checked], default=0)
    groups: dict[str, list[CaseRecord]] = {}
    for record in records:
        groups.setdefault(record.model, []).append(record)
    scores, formats = [], []
    for model, group in groups.items():
        label = group[0].model_label or model
        for scorer in scorers:
            means = [mean(_turn_value(r, scorer, turn) for r in group) for turn in range(1, count + 1)]
            if any(value is not None for value in means):
                scores.append({"model": model, "label": label, "scorer": scorer, "means": means})
        if checked:
            rates = [_format_rate(group, turn) for turn in range(1, count + 1)]
            if any(value is not None for value in rates):
                formats.append({"model": model, "label": label, "rates": rates})
    return {"count": count if scores or formats else 0, "scores": scores, "format_valid": formats}


def _turn_value(record: CaseRecord, scorer: str, turn: int) -> float | None:
    for component in record.components.values():
        if is_turn_component(component) and component["scorer"] == scorer and component["turn"] == turn:
            value = component.get("value")
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return None


def _format_rate(records: Sequence[CaseRecord], turn: int) -> float | None:
    flags = [t["format_valid"] for r in records for t in r.turns if t.get("index") == turn]
    known = [flag for flag in flags if flag is not None]
    return rate(sum(1 for flag in known if flag), len(known))
