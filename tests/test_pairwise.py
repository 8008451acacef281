"""llm_judge_pairwise: two answers side by side, in both orders; a win only when both orders agree."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec, ThinkingSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.bind import ScoringBinder
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.pairwise import PairwiseScorer, outcome_of, parse_choice_rule
from bench_plugin.scoring.registry import SCORER_TYPES
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer

PROVIDER = ProviderSpec(name="offline", type="scripted")
CANDIDATE = ModelSpec(name="small", provider=PROVIDER, id="small-1", label="Small")
BASELINE = ModelSpec(name="gpt35", provider=PROVIDER, id="gpt-3.5-turbo", label="GPT-3.5", thinking=ThinkingSpec())
JUDGE = ModelSpec(name="gpt4", provider=PROVIDER, id="gpt-4", label="GPT-4")
PROMPT = "Question: {{ question }}\n[A] {{ answer_a }}\n[B] {{ answer_b }}\nVerdict as [[A]], [[B]] or [[C]] for a tie."


def make_case(scorers: tuple[ScorerSpec, ...] = (), **variables: Any) -> CaseSpec:
    return CaseSpec(
        suite="demo", path="suites/demo.yaml", task="capital", model_name="small", model=CANDIDATE, run=1,
        messages=(Message("user", "Capital of France?"),), scorers=scorers, composite=CompositeSpec(),
        pass_threshold=0.5, variables=variables, judges={"gpt4": JUDGE}, models={"small": CANDIDATE, "gpt35": BASELINE},
        templates=TemplateRenderer(None),
    )


class FakeCalls:
    """The judge picks by what it sees: ``prefer`` (a text) wins wherever it stands; the baseline answers."""

    def __init__(self, prefer: str | None, reply_for: dict[int, str] | None = None) -> None:
        self.prefer = prefer
        self.reply_for = reply_for or {}
        self.requests: list[CompletionRequest] = []

    async def __call__(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        if request.model.name == "gpt35":
            return Completion(text="<think>easy</think>Paris, of course.", usage=Usage(10, 5))
        order = request.variables["order"]
        if order in self.reply_for:
            return Completion(text=self.reply_for[order], usage=Usage(50, 5))
        a, b = request.variables["answer_a"], request.variables["answer_b"]
        choice = "C" if self.prefer is None else "A" if self.prefer in a else "B" if self.prefer in b else "C"
        return Completion(text=f"Reasoning... [[{choice}]]", usage=Usage(50, 5))


def run_pairwise(options: dict[str, Any], fake: FakeCalls, response: str = "Paris.") -> ComponentScore:
    spec = ScorerSpec(name="P", type="llm_judge_pairwise", options=options, key="scorers[0]", line=4)
    case = make_case((spec,), baseline="Lyon.")
    transcript = (*case.messages, Message("assistant", response))
    context = ScoringContext(case=case, response=response, transcript=transcript, call_model=fake)
    return asyncio.run(PairwiseScorer.parse(spec).score(context))


def read_choice(text: str, rule: dict[str, Any]) -> str | None:
    return parse_choice_rule(rule).read(text)


def check_pairwise(options: dict[str, Any]) -> None:
    PairwiseScorer.parse(ScorerSpec(name="P", type="llm_judge_pairwise", options=options, key="scorers[0]"))


def validate_case_scoring(case: CaseSpec) -> None:
    ScoringBinder(SCORER_TYPES).bind(case)


BASE = {"judge": "gpt4", "prompt": PROMPT, "against": {"model": "gpt35"}}


@pytest.mark.parametrize(
    ("first", "second", "outcome"),
    [
        ("first", "second", 1.0),  # candidate chosen as A, then as B
        ("second", "first", 0.0),  # the other answer chosen in both positions
        ("first", "first", 0.5),  # position A both times: the orders disagree
        ("second", "second", 0.5),
        ("tie", "second", 0.5),
        ("tie", "tie", 0.5),
        (None, "second", None),
    ],
)
def test_a_win_needs_both_orders(first: str | None, second: str | None, outcome: float | None) -> None:
    assert outcome_of(first, second) == outcome


def test_verdicts_are_read_with_mt_bench_brackets_or_a_declared_rule() -> None:
    assert read_choice("After thought: [[B]]", {}) == "second"
    assert read_choice("[[C]]", {}) == "tie"
    assert read_choice("I prefer neither.", {}) is None
    rule = {"regex": r"Winner: (\w+)", "first": "one", "second": "two", "tie": "draw"}
    assert read_choice("Winner: two", rule) == "second"
    assert read_choice("Winner: three", rule) is None


def test_the_candidate_wins_when_chosen_in_both_positions() -> None:
    fake = FakeCalls(prefer="Paris.")  # the candidate's exact answer
    score = run_pairwise(BASE, fake, response="Paris.")
    assert (score.value, score.raw) == (1.0, 1.0)
    assert score.detail == "vs GPT-3.5: win (candidate as A: chose Small; candidate as B: chose Small)"
    record = score.extra["pairwise"]
    assert record["against"] == "GPT-3.5" and record["other_answer"] == "Paris, of course."  # thinking removed
    assert [order["verdict"] for order in record["orders"]] == ["first", "second"]
    assert score.extra["participants"] == {"Small": 1.0, "GPT-3.5": 0.0}
    judged = [r for r in fake.requests if r.model.name == "gpt4"]
    assert judged[0].messages[-1].content.startswith("Question: Capital of France?\n[A] Paris.\n[B] Paris, of course.")
    assert "[A] Paris, of course.\n[B] Paris." in judged[1].messages[-1].content
    baseline = next(r for r in fake.requests if r.model.name == "gpt35")
    assert baseline.messages == (Message("user", "Capital of France?"),)
    assert score.usage == {"input_tokens": 110, "output_tokens": 15, "latency_s": 0.0, "calls": 3}


def test_position_bias_makes_a_tie() -> None:
    fake = FakeCalls(prefer=None, reply_for={1: "[[A]]", 2: "[[A]]"})  # always the first answer shown
    score = run_pairwise(BASE, fake)
    assert score.value == 0.5
    assert score.detail == "vs GPT-3.5: tie (candidate as A: chose Small; candidate as B: chose GPT-3.5)"


def test_the_candidate_loses_when_the_other_answer_wins_both_orders() -> None:
    score = run_pairwise(
        {**BASE, "against": {"answer": "{{ baseline }}", "label": "lyon-bot"}}, FakeCalls(prefer="Lyon.")
    )
    assert score.value == 0.0 and score.extra["pairwise"]["other_answer"] == "Lyon."
    assert score.extra["participants"] == {"Small": 0.0, "lyon-bot": 1.0}


def test_an_unreadable_verdict_in_either_order_leaves_the_case_unscored() -> None:
    score = run_pairwise(BASE, FakeCalls(prefer="Paris.", reply_for={2: "Both are fine answers."}))
    assert score.value is None
    assert score.error == ("no pairwise verdict could be read (candidate as A: chose Small; "
                           "candidate as B: no verdict)")
    assert "pairwise" in score.extra and "participants" not in score.extra


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({**BASE, "against": {}}, "needs against: {model: NAME}"),
        ({**BASE, "against": {"model": "a", "answer": "b"}}, "needs against"),
        ({**BASE, "against": {"model": "a", "who": "b"}}, "against has unknown key(s) who"),
        ({**BASE, "parse": {"regex": "("}}, "does not compile"),
        ({**BASE, "parse": {"first": "A", "second": "A"}}, "must differ"),
        ({**BASE, "scale": [1, 10]}, "unknown option 'scale' for llm_judge_pairwise"),
    ],
)
def test_bad_pairwise_options_are_rejected(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        check_pairwise(options)
    assert message in str(info.value)


def test_an_unknown_baseline_model_fails_the_case_at_collection() -> None:
    spec = ScorerSpec(name="P", type="llm_judge_pairwise", options={**BASE, "against": {"model": "gpt3"}},
                      key="scorers[0]", line=4)
    with pytest.raises(CaseError) as info:
        validate_case_scoring(make_case((spec,)))
    assert "unknown model 'gpt3' for against" in str(info.value)
    assert info.value.hint is not None and "did you mean 'gpt35'?" in info.value.hint
