"""Per-turn scoring: a ``per_turn: true`` scorer scores every answered turn, then takes their mean.

Scorer ``J`` gives ``J.t1``, ``J.t2``... (the turn's position in the task) and ``J`` itself, the
mean of its turns, which is what composite formulas use.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.scoring.context import ComponentScore, ScoringContext

ScoreOne = Callable[[ScoringContext], Awaitable[ComponentScore]]


def turn_contexts(context: ScoringContext) -> list[ScoringContext]:
    """One context per answered turn: its answer, and the conversation up to and including it."""
    case = context.case
    label = case.model.label if case.model is not None else case.model_name
    return [
        dataclasses.replace(
            context,
            response=turn.answer or "",
            transcript=(*turn.context, Message("assistant", turn.raw or "", name=label)),
            turn=turn,
            transcript_text=None,  # a judge of one turn reads the conversation up to it
        )
        for turn in context.turns
        if turn.answered
    ]


async def score_per_turn(name: str, context: ScoringContext, score_one: ScoreOne) -> list[ComponentScore]:
    """Score each answered turn with ``score_one``; scorer ``name``'s own component (first) is their mean.

    Raises:
        Whatever ``score_one`` raised first (in turn order), after every turn has finished.
    """
    contexts = turn_contexts(context)
    outcomes = await asyncio.gather(*(score_one(c) for c in contexts), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    per_turn = []
    for turn_context, outcome in zip(contexts, outcomes, strict=True):
        assert turn_context.turn is not None and isinstance(outcome, ComponentScore)
        index = turn_context.turn.index
        per_turn.append(dataclasses.replace(outcome, name=f"{name}.t{index}", turn=index, scorer=name))
    return [mean_of_turns(name, per_turn), *per_turn]


def mean_of_turns(name: str, turns: Sequence[ComponentScore]) -> ComponentScore:
    """The mean of per-turn components; unscored when any turn is (or no turn was answered)."""
    if not turns:
        return ComponentScore(name=name, value=None, detail="unscored", error="no turn was answered")
    unscored = [turn for turn in turns if turn.value is None]
    if unscored:
        error = "; ".join(f"turn {turn.turn}: {turn.error or 'no value'}" for turn in unscored)
        return ComponentScore(name=name, value=None, detail="unscored", error=error)
    values = [float(turn.value) for turn in turns if turn.value is not None]
    raws = [turn.raw for turn in turns]
    passes = [turn.passed for turn in turns]
    shown = ", ".join(f"t{turn.turn}={turn.value:.4g}" for turn in turns if turn.value is not None)
    return ComponentScore(
        name=name,
        value=round(sum(values) / len(values), 6),
        raw=sum(r for r in raws if r is not None) / len(raws) if all(r is not None for r in raws) else None,
        passed=all(passes) if all(p is not None for p in passes) else None,
        detail=f"mean of {len(turns)} turn{'s' if len(turns) != 1 else ''}: {shown}",
    )


def turn_variables(context: ScoringContext) -> dict[str, Any]:
    """What a judge prompt sees when it scores one turn (nothing when it scores the whole case).

    ``turn`` (its position), ``question`` (the user message of the turn), ``earlier`` (the earlier
    answered turns of the same conversation, as ``{turn, user, answer, raw, thinking}``) and
    ``context`` (those turns as ``User: ...`` / ``Assistant: ...`` blocks, answers without thinking).
    """
    turn = context.turn
    if turn is None:
        return {}
    earlier = [t for t in context.turns if t.answered and t.phase == turn.phase and t.index < turn.index]
    return {
        "turn": turn.index,
        "question": turn.user or "",
        "earlier": [
            {"turn": t.index, "user": t.user, "answer": t.answer, "raw": t.raw, "thinking": t.thinking}
            for t in earlier
        ],
        "context": "\n\n".join(f"User: {t.user}\nAssistant: {t.answer}" for t in earlier),
    }


def pick_for_turn(value: Any, context: ScoringContext, *, lists_only_per_turn: bool = False) -> Any:
    """A list (one entry per turn, e.g. MT-Bench references) gives this turn's entry, or None.

    Outside per-turn scoring the last answered turn counts, unless ``lists_only_per_turn``, in which
    case a list is left whole (a dataset field that a whole-case judge may want as it is).
    """
    if not isinstance(value, (list, tuple)):
        return value
    if context.turn is None and lists_only_per_turn:
        return value
    turn = context.last_turn
    index = turn.index if turn is not None else 1
    return value[index - 1] if 0 < index <= len(value) else None


def judged_turn(context: ScoringContext) -> int:
    """The ``turn`` a judge call carries: the turn being scored, else 1."""
    return context.turn.index if context.turn is not None else 1
