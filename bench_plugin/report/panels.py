"""Judge panels across a suite's cases: unreadable reports, spreads, flagged cases, agreement per category.

Pure functions over records: every component that carries ``panel`` (an ``llm_judge_panel``)
gets one summary. Agreement is Krippendorff's alpha (interval) over the cases, with the judges
as coders: for the verdict, and for each rubric category. Cases of every status count, because a
case whose consensus failed still holds what its judges said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.agreement import krippendorff_alpha_interval
from bench_plugin.report.statistics.plain import mean
from bench_plugin.results.record import CaseRecord


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


def summarize_panel(name: str, panels: Sequence[tuple[CaseRecord, Mapping[str, Any]]]) -> dict[str, Any]:
    """The summary of one panel component over its cases; see ``summarize_panels``."""
    judges = list(dict.fromkeys(judge["label"] for _, panel in panels for judge in panel.get("judges", [])))
    declared = [category for _, panel in panels for category in panel.get("categories") or []]
    judged = [
        category
        for _, panel in panels
        for judge in panel.get("judges", [])
        for category in judge.get("categories") or {}
    ]
    categories = list(dict.fromkeys(declared + judged))  # the rubric's order where the panel kept it
    spreads = [spread for _, panel in panels if (spread := _number(panel.get("spread"))) is not None]
    thresholds = [limit for _, panel in panels if (limit := _number(panel.get("max_spread"))) is not None]
    flagged = [
        {"nodeid": record.nodeid, "spread": panel.get("spread"),
         "verdicts": {judge["label"]: judge.get("raw") for judge in panel.get("judges", [])}}
        for record, panel in panels if panel.get("flagged")
    ]
    unread = sum(
        1
        for _, panel in panels
        for judge in panel.get("judges", [])
        if judge.get("value") is None and judge.get("error")
    )

    def units(read: Any) -> list[list[float | None]]:
        by_judge = [{judge["label"]: read(judge) for judge in panel.get("judges", [])} for _, panel in panels]
        return [[found.get(label) for label in judges] for found in by_judge]

    items: list[tuple[str, Any]] = [
        ("verdict", lambda judge: _number(judge.get("raw")) if judge.get("value") is not None else None)
    ]
    items += [(category, lambda judge, c=category: _number((judge.get("categories") or {}).get(c)))
              for category in categories]
    agreement = []
    for item, read in items:
        table = units(read)
        pairable = sum(1 for unit in table if sum(value is not None for value in unit) >= 2)
        agreement.append({"item": item, "alpha": krippendorff_alpha_interval(table), "units": pairable})
    return {
        "component": name,
        "judges": judges,
        "cases": len(panels),
        "unread": unread,
        "mean_spread": mean(spreads),
        "largest_spread": max(spreads) if spreads else None,
        "max_spread": thresholds[0] if thresholds else None,
        "flagged": flagged,
        "agreement": agreement,
    }
