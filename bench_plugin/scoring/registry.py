"""Scorer types by name: the built-ins, then third-party ones from the ``bench_plugin.scorers`` group.

Entry points load lazily, only for a name that is not built in, so a broken third-party package
cannot slow down or break suites that do not use it.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib.metadata import EntryPoint, entry_points

from bench_plugin.scoring.agent.behavior import BehaviorScorer
from bench_plugin.scoring.agent.task_completion import CompletionScorer
from bench_plugin.scoring.agent.trajectory import TrajectoryScorer
from bench_plugin.scoring.checks.kinds import CHECK_SCORERS
from bench_plugin.scoring.context import Scorer
from bench_plugin.scoring.judge.llm_judge import JudgeScorer
from bench_plugin.scoring.judge.pairwise import PairwiseScorer
from bench_plugin.scoring.judge.panel import PanelScorer

ENTRY_POINT_GROUP = "bench_plugin.scorers"

BUILTIN_SCORERS: dict[str, Scorer] = {
    **CHECK_SCORERS,
    "llm_judge": JudgeScorer(),
    "llm_judge_panel": PanelScorer(),
    "llm_judge_pairwise": PairwiseScorer(),
    "completion": CompletionScorer(),  # agent tasks: C, T, B
    "trajectory": TrajectoryScorer(),
    "behavior": BehaviorScorer(),
}


def _entry_points() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def scorer_types() -> list[str]:
    """Every valid ``type:``: the built-ins in their documented order, then third-party names sorted."""
    extra = sorted(name for name in _entry_points() if name not in BUILTIN_SCORERS)
    return [*BUILTIN_SCORERS, *extra]


@cache
def _load(type_name: str) -> Scorer:
    point = _entry_points().get(type_name)
    if point is None:
        valid = scorer_types()
        close = difflib.get_close_matches(type_name, valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown scorer type {type_name!r}; {hint}valid types: {', '.join(valid)}")
    try:
        loaded = point.load()
    except Exception as exc:  # a third-party import can fail in any way; report it as a bad type
        raise ValueError(f"scorer type {type_name!r} ({point.value}) failed to load: {exc!r}") from exc
    # an entry point may name a class (instantiated once, without arguments) or a ready instance
    scorer = loaded() if isinstance(loaded, type) else loaded
    lacking = [method for method in ("validate", "score") if not callable(getattr(scorer, method, None))]
    if lacking:
        raise ValueError(
            f"scorer type {type_name!r} ({point.value}) lacks the method(s) {', '.join(lacking)}"
        )
    return scorer  # type: ignore[no-any-return]  # checked duck-typing against the Scorer protocol


def get_scorer(type_name: str) -> Scorer:
    """Find the scorer for a ``type:`` name.

    Raises:
        ValueError: for an unknown type (the message lists the valid ones and a did-you-mean) or a
            third-party entry point that fails to load. The caller adds the YAML location.
    """
    builtin = BUILTIN_SCORERS.get(type_name)
    return builtin if builtin is not None else _load(type_name)
