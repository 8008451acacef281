"""Per-turn scoring: a ``per_turn: true`` scorer scores every answered turn, then takes their mean.

Scorer ``J`` gives ``J.t1``, ``J.t2``... (the turn's position in the task) and ``J`` itself, the
mean of its turns, which is what composite formulas use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.transcript import TurnResult
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.gather import gather_all

ScoreOne = Callable[[ScoringContext], Awaitable[ComponentScore]]


def turn_contexts(context: ScoringContext) -> list[ScoringContext]:
    """One context per answered turn: its answer, and the conversation up to and including it."""
    case = context.case
    label = case.model.label if case.model is not None else case.model_name
    return [_turn_context(context, turn, label) for turn in context.turns if turn.answered]


def _turn_context(context: ScoringContext, turn: TurnResult, label: str) -> ScoringContext:
    """The context of one answered turn; ``label`` names the candidate's message."""
    return dataclasses.replace(
        context,
        response=turn.answer or "",
        transcript=(*turn.context, Message("assistant", turn.raw or "", name=label)),
        turn=turn,
        transcript_text=None,  # a judge of one turn reads the conversation up to it
    )


async def score_per_turn(name: str, context: ScoringContext, score_one: ScoreOne) -> list[ComponentScore]:
    """Score each answered turn with ``score_one``; scorer ``name``'s own component (first) is their mean.

    Raises:
        Whatever ``score_one`` raised first (in turn order), after every turn has finished.
    """
    contexts = turn_contexts(context)
    outcomes = await gather_all(score_one(c) for c in contexts)
    per_turn = [_turn_component(name, turn_context, outcome)
                for turn_context, outcome in zip(contexts, outcomes, strict=True)]
    return [mean_of_turns(name, per_turn), *per_turn]


def _turn_component(name: str, context: ScoringContext, outcome: ComponentScore) -> ComponentScore:
    """A turn's component, named after the scorer and the turn: ``J.t2``."""
    assert context.turn is not None
    index = context.turn.index
    return dataclasses.replace(outcome, name=f"{name}.t{index}", turn=index, scorer=name)


def mean_of_turns(name: str, turns: Sequence[ComponentScore]) -> ComponentScore:
    """The mean of per-turn components; unscored when any turn is (or no turn was answered)."""
    error = _unscored_turns(turns)
    if error is not None:
        return ComponentScore(name=name, value=None, detail="unscored", error=error)
    values = [float(turn.value or 0.0) for turn in turns]
    shown = ", ".join(f"t{turn.turn}={turn.value:.4g}" for turn in turns)
    return ComponentScore(
        name=name,
        value=round(sum(values) / len(values), 6),
        raw=_mean_raw(turns),
        passed=_all_passed(turns),
        detail=f"mean of {_turns(len(turns))}: {shown}",
    )


def _turns(count: int) -> str:
    return f"{count} turn" if count == 1 else f"{count} turns"


def _unscored_turns(turns: Sequence[ComponentScore]) -> str | None:
    """Why the mean cannot be taken (no turn, or turns without a value), or None."""
    if not turns:
        return "no turn was answered"
    unscored = [f"turn {turn.turn}: {turn.error or 'no value'}" for turn in turns if turn.value is None]
    return "; ".join(unscored) if unscored else None


def _mean_raw(turns: Sequence[ComponentScore]) -> float | None:
    """The mean of the turns' raw values, None unless every turn has one."""
    raws = [turn.raw for turn in turns if turn.raw is not None]
    return sum(raws) / len(raws) if len(raws) == len(turns) else None


def _all_passed(turns: Sequence[ComponentScore]) -> bool | None:
    """Whether every turn passed, None unless every turn decided."""
    passes = [turn.passed for turn in turns if turn.passed is not None]
    return all(passes) if len(passes) == len(turns) else None


def turn_variables(context: ScoringContext) -> dict[str, Any]:
    """What a judge prompt sees when it scores one turn (nothing when it scores the whole case).

    ``turn`` (its position), ``question`` (the user message of the turn), ``earlier`` (the earlier
    answered turns of the same conversation, as ``{turn, user, answer, raw, thinking}``) and
    ``context`` (those turns as ``User: ...`` / ``Assistant: ...`` blocks, answers without thinking).
    """
    turn = context.turn
    if turn is None:
        return {}
    earlier = earlier_turns(context, turn)
    return {
        "turn": turn.index,
        "question": turn.user or "",
        "earlier": [_earlier_turn(t) for t in earlier],
        "context": "\n\n".join(f"User: {t.user}\nAssistant: {t.answer}" for t in earlier),
    }


def earlier_turns(context: ScoringContext, turn: TurnResult) -> list[TurnResult]:
    """The answered turns before ``turn`` in the same phase of the conversation."""
    return [t for t in context.turns if t.answered and t.phase == turn.phase and t.index < turn.index]


def _earlier_turn(turn: TurnResult) -> dict[str, Any]:
    """An earlier turn as a judge prompt sees it."""
    return {"turn": turn.index, "user": turn.user, "answer": turn.answer, "raw": turn.raw, "thinking": turn.thinking}


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
    return turn_entry(value, turn.index if turn is not None else 1)


def turn_entry(values: Sequence[Any], turn: int) -> Any:
    """The entry of a per-turn list for ``turn`` (counted from 1), or None when the list is shorter."""
    return values[turn - 1] if 0 < turn <= len(values) else None


def judged_turn(context: ScoringContext) -> int:
    """The ``turn`` a judge call carries: the turn being scored, else 1."""
    return context.turn.index if context.turn is not None else 1
