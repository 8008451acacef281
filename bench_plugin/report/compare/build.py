"""Two result sets in, compare.json's data out: per suite x model and per task, a paired difference and a verdict.

Figures (``figures.py``): the mean score and the pass rate of the cases both sides ran alike (``matching.py``),
current minus baseline. Per suite x model the units are tasks (a task's runs and prompt variants resampled and
sign-flipped together); per task they are its cases. Holm's adjustment runs over two families: every suite x model
figure, and every task figure. Verdicts: ``verdicts.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.report.compare.cases import list_changes, spend_of
from bench_plugin.report.compare.facts import CaseFacts
from bench_plugin.report.compare.figures import Figure, Pair, adjust, paired_figure, passed, score
from bench_plugin.report.compare.matching import Matching, count_changes, match_cases
from bench_plugin.report.compare.verdicts import REGRESSED, VERDICTS, CompareSettings, combine

FORMAT_VERSION = 1
METRICS = {"score": score, "pass_rate": passed}
"""Each figure's key in compare.json, and the value of a case it reads."""
SHOWN = 5  # cases named in a message about input that cannot be compared


class NothingToCompare(ValueError):
    """No case of the baseline can be compared with the current run's: the message says what did not match."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its name as the user gave it (a file, a folder, a run) and its cases."""

    name: str
    cases: Sequence[CaseFacts]


@dataclass
class _Group:
    """The pairs of one suite x model, or of one task of it, and their figures (adjusted once all are made)."""

    pairs: list[Pair] = field(default_factory=list)
    figures: MutableMapping[str, Figure | None] = field(default_factory=dict)

    def verdict(self) -> str:
        return combine(figure.verdict for figure in self.figures.values() if figure is not None)

    def figures_dict(self) -> dict[str, Any]:
        return {name: None if figure is None else figure.to_dict() for name, figure in self.figures.items()}


def compare_sides(baseline: Side, current: Side, settings: CompareSettings) -> dict[str, Any]:
    """compare.json's data for ``current`` against ``baseline``.

    Raises:
        NothingToCompare: no case of the current run pairs with a baseline case asked the same way.
    """
    matching = match_cases(baseline.cases, current.cases)
    if not matching.pairs:
        raise NothingToCompare(explain_nothing_matched(baseline, current, matching))
    comparisons = _measure_all(matching.pairs, settings)
    verdicts = [row["verdict"] for row in comparisons]
    return {
        "version": FORMAT_VERSION,
        "verdict": combine([*verdicts, *_regressed_tasks(comparisons)]),
        "counts": {verdict: verdicts.count(verdict) for verdict in VERDICTS},
        "settings": {"margin": settings.margin, "confidence": settings.confidence, "unit": "task",
                     "task_unit": "case", "p_value": "sign-flip permutation", "adjustment": "holm"},
        "baseline": {"source": baseline.name, "cases": len(baseline.cases)},
        "current": {"source": current.name, "cases": len(current.cases)},
        "matching": _matching_dict(matching),
        "comparisons": comparisons,
    }


def _measure_all(pairs: Sequence[Pair], settings: CompareSettings) -> list[dict[str, Any]]:
    """Every suite x model's figures and each of its tasks', adjusted family by family; one dict per suite x model."""
    rows = _group(pairs, lambda pair: (pair[1].key[0], pair[1].key[3]))
    tasks = {key: _group(group.pairs, lambda pair: pair[1].cluster) for key, group in rows.items()}
    every_task = [group for by_task in tasks.values() for group in by_task.values()]
    for group in rows.values():
        _measure(group, settings, clustered=True)
    for group in every_task:
        _measure(group, settings, clustered=False)
    _adjust_family(rows.values(), settings)
    _adjust_family(every_task, settings)
    return [_row_dict(group, tasks[key]) for key, group in rows.items()]


def _regressed_tasks(comparisons: Sequence[dict[str, Any]]) -> list[str]:
    return [REGRESSED for row in comparisons for task in row["tasks"] if task["verdict"] == REGRESSED]


def regressions(comparison: dict[str, Any]) -> list[str]:
    """``suite model`` (and ``suite model task``) of every regressed comparison: a CI step fails on any."""
    found = []
    for row in comparison["comparisons"]:
        if row["verdict"] == REGRESSED:
            found.append(f"{row['suite']} {row['model']}")
        found += [f"{row['suite']} {row['model']} {task['task']}" for task in row["tasks"]
                  if task["verdict"] == REGRESSED]
    return found


def _group(pairs: Iterable[Pair], key_of: Any) -> dict[Any, _Group]:
    groups: dict[Any, _Group] = {}
    for pair in pairs:
        groups.setdefault(key_of(pair), _Group()).pairs.append(pair)
    return groups


def _measure(group: _Group, settings: CompareSettings, *, clustered: bool) -> None:
    group.figures = {name: paired_figure(group.pairs, read, settings, clustered=clustered)
                     for name, read in METRICS.items()}


def _adjust_family(groups: Iterable[_Group], settings: CompareSettings) -> None:
    """Holm over every figure of ``groups`` together, then each figure's verdict."""
    members = list(groups)
    slots = [(group, name) for group in members for name in METRICS]
    adjusted = adjust([group.figures[name] for group, name in slots], settings)
    for (group, name), figure in zip(slots, adjusted, strict=True):
        group.figures[name] = figure


def _row_dict(group: _Group, tasks: dict[str, _Group]) -> dict[str, Any]:
    first_now = group.pairs[0][1]
    return {
        "suite": first_now.suite,
        "path": first_now.key[0],
        "model": first_now.key[3],
        "model_id": {"baseline": _ids(before for before, _ in group.pairs),
                     "current": _ids(now for _, now in group.pairs)},
        "cases": len(group.pairs),
        "verdict": group.verdict(),
        **group.figures_dict(),
        "spend": {"baseline": spend_of([before for before, _ in group.pairs]),
                  "current": spend_of([now for _, now in group.pairs])},
        "tasks": [{"task": task, "cases": len(members.pairs), "verdict": members.verdict(), **members.figures_dict()}
                  for task, members in tasks.items()],
        "lists": list_changes(group.pairs),
    }


def _ids(cases: Iterable[CaseFacts]) -> list[str]:
    return list(dict.fromkeys(case.model_id for case in cases))


def _matching_dict(matching: Matching) -> dict[str, Any]:
    return {
        "compared": len(matching.pairs),
        "changes": count_changes(matching.changed),
        "baseline_only": matching.baseline_only,
        "current_only": matching.current_only,
        "changed": [{"nodeid": case.nodeid, "what": list(case.what)} for case in matching.changed],
    }


def explain_nothing_matched(baseline: Side, current: Side, matching: Matching) -> str:
    """Why no case can be compared, naming both sides and what differs."""
    if not baseline.cases:
        return f"the baseline {baseline.name} holds no case"
    if not current.cases:
        return f"{current.name} holds no case to compare with the baseline"
    if matching.changed:
        counts = ", ".join(f"{what} in {count}" for what, count in count_changes(matching.changed).items())
        examples = ", ".join(case.nodeid for case in matching.changed[:SHOWN])
        return (f"the baseline {baseline.name} is from another version of the suite: each of the "
                f"{len(matching.changed)} cases it shares with {current.name} asked or was scored otherwise "
                f"({counts}; e.g. {examples}); run the baseline again with this version of the suite")
    return (f"the baseline {baseline.name} has no case of {current.name}: the baseline has "
            f"{_describe(baseline.cases)}; the current run has {_describe(current.cases)}")


def _describe(cases: Sequence[CaseFacts]) -> str:
    suites = ", ".join(dict.fromkeys(case.key[0] for case in cases))
    models = ", ".join(repr(name) for name in dict.fromkeys(case.key[3] for case in cases))
    tasks = list(dict.fromkeys(case.task for case in cases))
    shown = ", ".join(repr(task) for task in tasks[:SHOWN]) + (", ..." if len(tasks) > SHOWN else "")
    return f"suite {suites}, model {models}, {len(tasks)} task{'s' * (len(tasks) != 1)} ({shown})"
