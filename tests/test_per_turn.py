"""Per-turn scoring: one component per answered turn, the scorer's own component their mean."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.transcript import TurnResult
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.per_turn import mean_of_turns, pick_for_turn, score_per_turn, turn_variables
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec

SYSTEM = Message("system", "Be brief.")
Q1, Q2, Q3 = (Message("user", text) for text in ("Name a city.", "Why?", "Bye."))


def turn(index: int, answer: str | None, context: tuple[Message, ...] = (), **fields: Any) -> TurnResult:
    if answer is None:
        return TurnResult(index=index, skipped=True, skip_reason="gate", **fields)
    return TurnResult(index=index, user=context[-1].content, raw=f"<think>x</think>{answer}", answer=answer,
                      call=index, context=context, **fields)


TURNS = (
    turn(1, "Paris", (SYSTEM, Q1)),
    turn(2, "It is lovely", (SYSTEM, Q1, Message("assistant", "<think>x</think>Paris"), Q2)),
    turn(3, None),
)


async def no_calls(request: CompletionRequest) -> Completion:
    raise AssertionError("no call expected")


def context(turns: tuple[TurnResult, ...] = TURNS) -> ScoringContext:
    case = CaseSpec(suite="s", path="suites/s.yaml", task="t", model_name="m", model=None, run=1, messages=(SYSTEM,),
                    scorers=(), composite=CompositeSpec(), pass_threshold=1.0, variables={})
    return ScoringContext(case=case, response="It is lovely", transcript=(), call_model=no_calls, turns=turns)


def at(scored_turn: TurnResult, base: ScoringContext | None = None) -> ScoringContext:
    return dataclasses.replace(base or context(), turn=scored_turn)


def scored(name: str, value: float | None, turn_index: int, raw: float | None = None) -> ComponentScore:
    return ComponentScore(name=name, value=value, raw=raw, turn=turn_index, scorer="J",
                          error=None if value is not None else "no verdict")


def test_each_answered_turn_is_scored_with_its_answer_and_the_conversation_up_to_it() -> None:
    seen: list[ScoringContext] = []

    async def score_one(spec: ScorerSpec, turn_context: ScoringContext) -> ComponentScore:
        seen.append(turn_context)
        return ComponentScore(name=spec.name, value=1.0 if turn_context.response == "Paris" else 0.5)

    spec = ScorerSpec(name="J", type="x", options={}, key="scorers[0]", per_turn=True)
    components = asyncio.run(score_per_turn(spec.name, context(), functools.partial(score_one, spec)))
    assert [(c.name, c.value, c.turn) for c in components] == [("J", 0.75, None), ("J.t1", 1.0, 1), ("J.t2", 0.5, 2)]
    assert [c.response for c in seen] == ["Paris", "It is lovely"]
    assert seen[1].transcript[-2:] == (Q2, Message("assistant", "<think>x</think>It is lovely", name="m"))


def test_mean_is_unscored_when_a_turn_is_and_says_which() -> None:
    mean = mean_of_turns("J", [scored("J.t1", 0.5, 1), scored("J.t2", None, 2)])
    assert mean.value is None and mean.error == "turn 2: no verdict"


def test_mean_of_no_turn_is_unscored() -> None:
    assert mean_of_turns("J", []).error == "no turn was answered"


def test_mean_keeps_the_mean_raw_verdict_on_the_scorers_scale() -> None:
    mean = mean_of_turns("J", [scored("J.t1", 0.75, 1, raw=7.75), scored("J.t2", 0.25, 2, raw=3.25)])
    assert (mean.value, mean.raw, mean.detail) == (0.5, 5.5, "mean of 2 turns: t1=0.75, t2=0.25")


def test_judge_variables_give_the_turns_question_and_the_earlier_turns_as_context() -> None:
    variables = turn_variables(at(TURNS[1]))
    assert variables["turn"] == 2 and variables["question"] == "Why?"
    assert variables["context"] == "User: Name a city.\nAssistant: Paris"
    assert variables["earlier"] == [
        {"turn": 1, "user": "Name a city.", "answer": "Paris", "raw": "<think>x</think>Paris", "thinking": None}
    ]
    assert turn_variables(context()) == {}


def test_earlier_turns_of_another_phase_are_not_context() -> None:
    turns = (turn(1, "Paris", (SYSTEM, Q1)), turn(2, "Bye", (SYSTEM, Q3), phase=2))
    assert turn_variables(at(turns[1], context(turns)))["context"] == ""


@pytest.mark.parametrize(("turn_index", "expected"), [(1, "r1"), (2, "r2"), (3, None)])
def test_a_list_gives_the_entry_of_the_scored_turn(turn_index: int, expected: str | None) -> None:
    assert pick_for_turn(["r1", "r2"], at(TurnResult(index=turn_index, answer="a"))) == expected


def test_outside_per_turn_scoring_a_list_gives_the_last_answered_turns_entry_or_stays_whole() -> None:
    assert pick_for_turn(["r1", "r2", "r3"], context()) == "r2"
    assert pick_for_turn(["r1", "r2"], context(), lists_only_per_turn=True) == ["r1", "r2"]
    assert pick_for_turn("same for all", context()) == "same for all"
