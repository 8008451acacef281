"""Judge panels across a suite's cases: unreadable reports, spreads, flagged cases, agreement per category.

Pure functions over records: every component that carries ``panel`` (an ``llm_judge_panel``)
gets one summary. Agreement is Krippendorff's alpha (interval) over the cases, with the judges
as coders: for the verdict, and for each rubric category. Cases of every status count, because a
case whose consensus failed still holds what its judges said.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from bench_plugin.report.agreement import krippendorff_alpha_interval
from bench_plugin.report.statistics.plain import mean
from bench_plugin.results.record import CaseRecord

Panels = Sequence[tuple[CaseRecord, Mapping[str, Any]]]
"""A panel component's cases: each record with its panel."""


def _panels(records: Sequence[CaseRecord], name: str) -> list[tuple[CaseRecord, Mapping[str, Any]]]:
    found = []
    for record in records:
        panel = (record.components.get(name) or {}).get("panel")
        if isinstance(panel, Mapping):
            found.append((record, panel))
    return found


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def summarize_panels(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """One summary per panel component, in the order components are first seen.

    Returns:
        ``{"component", "judges" (labels), "cases", "unread" (reports without a verdict), "mean_spread",
        "largest_spread", "max_spread" (the declared threshold), "flagged" (``{nodeid, spread,
        verdicts}``), "agreement" (``{item, alpha, units}``: ``verdict`` then each rubric category)}``.
    """
    names = list(dict.fromkeys(
        name for record in records for name, component in record.components.items() if "panel" in component
    ))
    return [summarize_panel(name, _panels(records, name)) for name in names]


def summarize_panel(name: str, panels: Panels) -> dict[str, Any]:
    """The summary of one panel component over its cases; see ``summarize_panels``."""
    judges = _judge_labels(panels)
    spreads = _numbers(panels, "spread")
    thresholds = _numbers(panels, "max_spread")
    return {
        "component": name,
        "judges": judges,
        "cases": len(panels),
        "unread": _unread(panels),
        "mean_spread": mean(spreads),
        "largest_spread": max(spreads, default=None),
        "max_spread": thresholds[0] if thresholds else None,
        "flagged": _flagged(panels),
        "agreement": [_agreement(item, read, panels, judges) for item, read in _items(panels)],
    }


def _judges(panel: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    judges: list[Mapping[str, Any]] = panel.get("judges", [])
    return judges


def _judge_labels(panels: Panels) -> list[str]:
    return list(dict.fromkeys(judge["label"] for _, panel in panels for judge in _judges(panel)))


def _categories(panels: Panels) -> list[str]:
    """The rubric's categories, in the rubric's order where the panel kept it, then as judges gave them."""
    return list(dict.fromkeys(_declared_categories(panels) + _given_categories(panels)))


def _declared_categories(panels: Panels) -> list[str]:
    return [category for _, panel in panels for category in panel.get("categories") or []]


def _given_categories(panels: Panels) -> list[str]:
    return [category for _, panel in panels for judge in _judges(panel) for category in _judged_categories(judge)]


def _judged_categories(judge: Mapping[str, Any]) -> Mapping[str, Any]:
    categories: Mapping[str, Any] = judge.get("categories") or {}
    return categories


def _numbers(panels: Panels, key: str) -> list[float]:
    """The panels' ``key`` figures that are numbers."""
    found = (_number(panel.get(key)) for _, panel in panels)
    return [value for value in found if value is not None]


def _flagged(panels: Panels) -> list[dict[str, Any]]:
    return [
        {"nodeid": record.nodeid, "spread": panel.get("spread"),
         "verdicts": {judge["label"]: judge.get("raw") for judge in _judges(panel)}}
        for record, panel in panels if panel.get("flagged")
    ]


def _unread(panels: Panels) -> int:
    """How many judges' reports gave no verdict."""
    return sum(1 for _, panel in panels for judge in _judges(panel) if _is_unread(judge))


def _is_unread(judge: Mapping[str, Any]) -> bool:
    return judge.get("value") is None and bool(judge.get("error"))


JudgeReader = Callable[[Mapping[str, Any]], "float | None"]


def _verdict(judge: Mapping[str, Any]) -> float | None:
    """A judge's raw verdict as a number, when the judge's report was read."""
    return None if judge.get("value") is None else _number(judge.get("raw"))


def _category_score(category: str, judge: Mapping[str, Any]) -> float | None:
    return _number(_judged_categories(judge).get(category))


def _items(panels: Panels) -> list[tuple[str, JudgeReader]]:
    """What the judges agree on or not: the verdict, then each rubric category."""
    categories = _categories(panels)
    return [("verdict", _verdict), *((category, partial(_category_score, category)) for category in categories)]


def _agreement(
    item: str, read: JudgeReader, panels: Panels, judges: Sequence[str]
) -> dict[str, Any]:
    """Krippendorff's alpha of one item, with the cases two or more judges gave it a number on."""
    table = [_unit(panel, read, judges) for _, panel in panels]
    return {"item": item, "alpha": krippendorff_alpha_interval(table), "units": sum(map(_pairable, table))}


def _unit(panel: Mapping[str, Any], read: JudgeReader, judges: Sequence[str]) -> list[float | None]:
    """One case's numbers, a judge each (None: the judge gave none)."""
    found = {judge["label"]: read(judge) for judge in _judges(panel)}
    return [found.get(label) for label in judges]


def _pairable(unit: Sequence[float | None]) -> bool:
    return sum(value is not None for value in unit) >= 2
