"""llm_judge: the conversation layout, a signed -1..+1 scale, and what offline judges are told."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.llm_judge import JudgeScorer
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer

PROVIDER = ProviderSpec(name="offline", type="scripted")
JUDGE = ModelSpec(name="master", provider=PROVIDER, id="scorer-1", label="master")
CANDIDATE = ModelSpec(name="small", provider=PROVIDER, id="org/small-1", label="Small One")
PROMPT = (
    Message("system", "You are a helpful assistant."),
    Message("system", 'Context to recall (do not quote verbatim): {"amount": 50}'),
    Message("user", "Got a note about a 50€ increase. How should I approach this?"),
)
STANCE = {"judge": "master", "prompt": "Rate the stance from -1 to 1.", "layout": "conversation",
          "scale": [-1, 1], "parse": {"number": "first"}, "clamp": True}


def run_judge(
    options: dict[str, Any], reply: str = "-0.5", answer: str = "Ask for a payment plan.",
) -> tuple[ComponentScore, list[CompletionRequest]]:
    case = CaseSpec(
        suite="rent", path="suites/rent.yaml", task="tenant-50", model_name="small", model=CANDIDATE, run=1,
        messages=PROMPT, scorers=(), composite=CompositeSpec(), pass_threshold=0.0, variables={"amount": 50},
        judges={"master": JUDGE}, templates=TemplateRenderer(None),
    )
    requests: list[CompletionRequest] = []

    async def call_model(request: CompletionRequest) -> Completion:
        requests.append(request)
        return Completion(text=reply)

    spec = ScorerSpec(name="score", type="llm_judge", options=options, key="scorers[0]", line=3)
    transcript = (*PROMPT, Message("assistant", answer, name="Small One"))
    context = ScoringContext(case=case, response=answer, transcript=transcript, call_model=call_model)
    return asyncio.run(JudgeScorer.parse(spec).score(context)), requests


def test_conversation_layout_puts_the_instruction_first_and_the_answer_last() -> None:
    _, (request,) = run_judge(STANCE)
    assert request.messages == (
        Message("system", "Rate the stance from -1 to 1."),
        *PROMPT,
        Message("assistant", "Ask for a payment plan."),
    )


def test_standalone_layout_stays_the_default() -> None:
    _, (request,) = run_judge({**STANCE, "layout": "standalone", "prompt": "Answer: {{ answer }}"})
    assert request.messages == (Message("user", "Answer: Ask for a payment plan."),)
    _, (request,) = run_judge({key: value for key, value in STANCE.items() if key != "layout"})
    assert request.messages == (Message("user", "Rate the stance from -1 to 1."),)


@pytest.mark.parametrize(
    ("reply", "value", "raw", "detail"),
    [
        ("-0.5", 0.25, -0.5, "judge master: -0.5 on [-1, 1]"),
        ("+1", 1.0, 1.0, "judge master: 1 on [-1, 1]"),
        ("0", 0.5, 0.0, "judge master: 0 on [-1, 1]"),
        ("-1.5", 0.0, -1.0, "judge master: -1.5 on [-1, 1], clamped to -1"),
    ],
)
def test_signed_scale_keeps_the_raw_verdict_and_a_0_to_1_value(
    reply: str, value: float, raw: float, detail: str,
) -> None:
    score, _ = run_judge(STANCE, reply=reply)
    assert (score.value, score.raw, score.detail) == (value, raw, detail)


def test_a_reply_without_a_number_leaves_the_stance_unscored() -> None:
    score, _ = run_judge(STANCE, reply="I can't tell.")
    assert (score.value, score.raw) == (None, None)
    assert score.error is not None and "no number in the reply" in score.error


def test_the_judge_request_names_the_candidate_it_grades() -> None:
    _, (request,) = run_judge(STANCE)
    assert request.variables["model"] == {"name": "small", "id": "org/small-1", "label": "Small One"}
    assert request.variables["amount"] == 50


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({**STANCE, "layout": "per_message"}, "layout must be one of standalone, conversation"),
        ({**STANCE, "system": "x"}, "layout: conversation sends the prompt as the leading system message"),
        ({**STANCE, "parse": {"number": "middle"}}, "parse.number must be one of first, last"),
    ],
)
def test_bad_layout_options_are_rejected(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JudgeScorer.parse(ScorerSpec(name="score", type="llm_judge", options=options, key="scorers[0]"))
