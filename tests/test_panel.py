"""llm_judge_panel: several judges at once.

Their verdicts combined, their disagreement recorded, and a consensus model whose JSON is checked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, TransientProviderError
from bench_plugin.scoring.bind import ScoringBinder
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.consensus import ReplyShape, parse_consensus, reports_text, strip_code_fences
from bench_plugin.scoring.judge.panel import PanelScorer
from bench_plugin.scoring.judge.panel_combine import combine, combine_by_key, spread, strict_majority
from bench_plugin.scoring.registry import SCORER_TYPES
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer

PROVIDER = ProviderSpec(name="offline", type="scripted")
CANDIDATE = ModelSpec(name="gemini3", provider=PROVIDER, id="google/gemini-3-pro", label="Gemini 3 Pro")
JUDGES = {name: ModelSpec(name=name, provider=PROVIDER, id=f"{name}-id", label=label)
          for name, label in (("opus", "Opus"), ("gem", "Gem"), ("gpt", "GPT"), ("chair", "Chair"))}


def make_case(scorers: tuple[ScorerSpec, ...] = ()) -> CaseSpec:
    return CaseSpec(
        suite="demo", path="suites/demo.yaml", task="room", model_name="gemini3", model=CANDIDATE, run=1,
        messages=(Message("user", "Talk."),), scorers=scorers, composite=CompositeSpec(), pass_threshold=0.5,
        variables={}, judges=JUDGES, templates=TemplateRenderer(None),
    )


Reply = str | Callable[[CompletionRequest], str]


class FakeJudges:
    """Answers each judge by its model name; remembers every request."""

    def __init__(self, replies: dict[str, Reply], error: Exception | None = None) -> None:
        self.replies = replies
        self.error = error
        self.requests: list[CompletionRequest] = []

    async def __call__(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        if self.error is not None and request.model.name == "gpt":
            raise self.error
        reply = self.replies[request.model.name]
        text = reply(request) if callable(reply) else reply
        return Completion(text=text, usage=Usage(input_tokens=100, output_tokens=20), latency_s=1.0)

    def asked(self, name: str) -> list[CompletionRequest]:
        return [request for request in self.requests if request.model.name == name]


def run_panel(options: dict[str, Any], fake: FakeJudges) -> ComponentScore:
    spec = ScorerSpec(name="J", type="llm_judge_panel", options=options, key="scorers[0]", line=9)
    case = make_case((spec,))
    context = ScoringContext(case=case, response="...", transcript=(Message("user", "Talk."),), call_model=fake)
    return asyncio.run(PanelScorer.parse(spec).score(context))


def check_panel(options: dict[str, Any]) -> None:
    PanelScorer.parse(ScorerSpec(name="J", type="llm_judge_panel", options=options, key="scorers[0]"))


def validate_case_scoring(case: CaseSpec) -> None:
    ScoringBinder(SCORER_TYPES).bind(case)


BASE = {"judges": ["opus", "gem", "gpt"], "prompt": "{{ judge.label }}, rate this as Score: N/10.\n{{ answer }}",
        "parse": {"regex": r"Score: (\d+)"}}


# ----------------------------------------------------------------------------- pure aggregation


def test_verdicts_combine_by_mean_median_and_min() -> None:
    assert combine([8, 6, 10], "mean") == 8
    assert combine([8, 6, 10, 1], "median") == 7
    assert combine([8, 6, 10], "min") == 6


def test_a_majority_is_strict() -> None:
    assert strict_majority([True, True, False])
    assert not strict_majority([True, True, False, False])
    assert not strict_majority([])


def test_spread_needs_two_verdicts_and_keys_combine_over_the_judges_that_gave_them() -> None:
    assert spread([70, 52, 78]) == 26
    assert spread([70]) is None
    assert combine_by_key([{"A": 80, "B": None}, {"A": 70, "B": 60}], "mean") == {"A": 75, "B": 60}


# ----------------------------------------------------------------------------- numeric panels


def test_the_mean_leaves_out_an_unreadable_report_and_keeps_every_judge() -> None:
    fake = FakeJudges({"opus": "Score: 8", "gem": "I refuse to grade this.", "gpt": "Score: 5"})
    score = run_panel(BASE, fake)
    assert score.raw == 6.5 and score.value == pytest.approx((6.5 - 1) / 9, abs=1e-6)
    panel = score.extra["panel"]
    assert [judge["label"] for judge in panel["judges"]] == ["Opus", "Gem", "GPT"]
    assert panel["judges"][1]["value"] is None and "no match for" in panel["judges"][1]["error"]
    assert panel["judges"][1]["judge_output"] == "I refuse to grade this."
    assert panel["verdicts"] == 2 and panel["spread"] == 3 and panel["flagged"] is False
    assert score.detail == "panel mean of 2: Opus 8, Gem no verdict, GPT 5 -> 6.5/10; spread 3"
    assert score.usage["input_tokens"] == 300 and score.usage["calls"] == 3
    assert "## Report from Gem:\n\nI refuse to grade this." in (score.judge_output or "")
    # every judge was asked with its own name in the prompt
    assert fake.asked("gem")[0].messages[-1].content.startswith("Gem, rate this")
    assert fake.asked("gem")[0].variables["judge"] == {"name": "gem", "id": "gem-id", "label": "Gem"}


@pytest.mark.parametrize(("how", "raw"), [("median", 8.0), ("min", 3.0)])
def test_median_and_min(how: str, raw: float) -> None:
    fake = FakeJudges({"opus": "Score: 8", "gem": "Score: 9", "gpt": "Score: 3"})
    assert run_panel({**BASE, "aggregate": how}, fake).raw == raw


def test_a_spread_above_max_spread_is_flagged() -> None:
    fake = FakeJudges({"opus": "Score: 9", "gem": "Score: 8", "gpt": "Score: 2"})
    score = run_panel({**BASE, "max_spread": 5}, fake)
    assert score.extra["panel"]["flagged"] is True and score.extra["panel"]["spread"] == 7
    assert score.detail.endswith("; spread 7 > 5: judges disagree")
    assert score.value is not None  # a disagreement is recorded, not a reason to drop the case


def test_too_few_verdicts_leave_the_case_unscored_with_every_reason() -> None:
    fake = FakeJudges({"opus": "Score: 8", "gem": "no idea", "gpt": "nothing"})
    score = run_panel({**BASE, "min_judges": 2}, fake)
    assert score.value is None
    assert score.error is not None
    assert score.error.startswith("1 of 3 judges gave a usable report, 2 needed (min_judges): Gem: could not read")


def test_a_strict_majority_of_pass_votes() -> None:
    options = {**BASE, "aggregate": "majority", "pass_at": 0.6}  # value >= 0.6 means a verdict of 6.4 or more
    passing = run_panel(options, FakeJudges({"opus": "Score: 7", "gem": "Score: 9", "gpt": "Score: 2"}))
    assert (passing.value, passing.raw, passing.passed) == (1.0, pytest.approx(2 / 3), True)
    assert passing.detail.startswith("panel majority: 2 of 3 pass")
    failing = run_panel(options, FakeJudges({"opus": "Score: 7", "gem": "unreadable", "gpt": "Score: 2"}))
    assert (failing.value, failing.passed) == (0.0, False)  # 1 of the 2 verdicts: not more than half


def test_rubric_categories_are_kept_per_judge_and_combined() -> None:
    options = {**BASE, "scale": [0, 10], "parse": None, "rubric": {"categories": [{"name": "Depth", "max": 5},
                                                                                   {"name": "Style", "max": 5}]}}
    options = {key: value for key, value in options.items() if value is not None}
    fake = FakeJudges({"opus": "Depth: 4/5\nStyle: 3/5", "gem": "Depth: 2/5\nStyle: 5/5", "gpt": "Depth: 3/5"})
    score = run_panel(options, fake)
    judges = score.extra["panel"]["judges"]
    assert judges[0]["categories"] == {"Depth": 4, "Style": 3}
    assert judges[2]["value"] is None and judges[2]["categories"] == {"Depth": 3, "Style": None}
    assert score.raw == 7.0  # (7 + 7) / 2; GPT's total cannot be made without Style
    assert score.categories == {"Depth": 3, "Style": 4}
    assert score.extra["panel"]["categories"] == ["Depth", "Style"]


def test_a_failed_judge_call_is_an_infrastructure_error() -> None:
    fake = FakeJudges({"opus": "Score: 8", "gem": "Score: 8"}, error=TransientProviderError("timeout", kind="timeout"))
    with pytest.raises(TransientProviderError):
        run_panel(BASE, fake)


# ----------------------------------------------------------------------------- consensus

TABLE = "| Model | Score |\n|---|---|\n| Gemini 3 Pro (AI-1) | {0} |\n| Claude (AI-2) | {1} |"
CONSENSUS = {
    "judge": "chair",
    "prompt": "Please analyze these {{ reports | length }} evaluation reports:\n{{ reports_text }}",
    "required_keys": ["averaged_scores", "verdict"],
    "scores": "averaged_scores",
}
PANEL = {"judges": ["opus", "gem", "gpt"], "prompt": "Evaluate:\n{{ transcript }}", "scale": [0, 100],
         "participants": {"table": {"column": "Score"}}, "aggregate": "consensus", "consensus": CONSENSUS}


def reports(
    opus: str = TABLE.format(80, 70), gem: str = TABLE.format(90, 60), gpt: str = "Cut off mid-",
) -> dict[str, Reply]:
    return {"opus": opus, "gem": gem, "gpt": gpt}


def test_the_consensus_reads_the_usable_reports_and_gives_the_candidates_average() -> None:
    reply = '```json\n{"averaged_scores": {"Gemini 3 Pro": 85, "Claude": 65}, "verdict": "fine"}\n```'
    fake = FakeJudges({**reports(), "chair": reply})
    score = run_panel(PANEL, fake)
    assert score.raw == 85 and score.value == 0.85
    assert score.extra["participants"] == {"Gemini 3 Pro": 85, "Claude": 65}
    consensus = score.extra["panel"]["consensus"]
    assert consensus["data"]["verdict"] == "fine" and consensus["error"] is None
    asked = fake.asked("chair")[0]
    prompt = asked.messages[-1].content
    assert prompt.startswith("Please analyze these 2 evaluation reports:")
    assert "## Report from Opus:" in prompt and "## Report from Gem:" in prompt and "Cut off" not in prompt
    assert [report["label"] for report in asked.variables["reports"]] == ["Opus", "Gem"]
    assert asked.variables["reports"][0]["participants"] == {"Gemini 3 Pro": 80, "Claude (AI-2)": 70}
    assert score.detail.startswith("panel consensus of 2 (Opus 80, Gem 90, GPT no verdict; spread 10) -> 85/100")
    assert score.usage["calls"] == 4


def test_the_consensus_needs_two_usable_reports_by_default() -> None:
    fake = FakeJudges({**reports(gem="no table here"), "chair": "{}"})
    score = run_panel(PANEL, fake)
    assert (score.value is None and score.error is not None
            and score.error.startswith("1 of 3 judges gave a usable report, 2 needed"))
    assert fake.asked("chair") == []  # no consensus call for a panel that cannot have one


def test_without_reading_rules_every_non_empty_report_goes_to_the_consensus() -> None:
    options = {key: value for key, value in PANEL.items() if key != "participants"}
    fake = FakeJudges({**reports(gpt="A thoughtful report without a table."),
                       "chair": '{"averaged_scores": {"gemini 3 pro": 70}, "verdict": "ok"}'})
    score = run_panel(options, fake)
    assert score.raw == 70  # the key matched the candidate's label without regard to case
    assert "## Report from GPT:" in fake.asked("chair")[0].messages[-1].content
    assert all(judge["detail"] == "report only" for judge in score.extra["panel"]["judges"])


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Here is the summary: averages are 85 and 65.", "the consensus reply is not JSON: Expecting value at line 1"),
        ('["averaged_scores"]', "the consensus reply is JSON but not an object"),
        ('{"averaged_scores": {"Gemini 3 Pro": 85}}', "the consensus JSON lacks the required key(s) verdict"),
        ('{"averaged_scores": {"Claude": 65}, "verdict": "x"}', "consensus verdict: no participant is 'Gemini 3 Pro'"),
        ('{"averaged_scores": [85, 65], "verdict": "x"}', "consensus averaged_scores is not an object"),
        ('{"averaged_scores": {"Gemini 3 Pro": 185}, "verdict": "x"}',
         "consensus verdict 185 is outside the scale [0, 100]"),
    ],
)
def test_a_consensus_that_fails_its_checks_leaves_the_case_unscored(reply: str, message: str) -> None:
    score = run_panel(PANEL, FakeJudges({**reports(), "chair": reply}))
    assert score.value is None
    assert score.error is not None and message in score.error
    assert score.extra["panel"]["consensus"]["output"] == reply
    assert message in (score.extra["panel"]["consensus"]["error"] or "")


def test_the_consensus_schema_is_checked_and_its_complaint_reported() -> None:
    options = {**PANEL, "consensus": {**CONSENSUS, "schema": {
        "type": "object", "properties": {"overall_score": {"type": "number", "maximum": 100}}}}}
    reply = '{"averaged_scores": {"Gemini 3 Pro": 85}, "verdict": "x", "overall_score": "high"}'
    score = run_panel(options, FakeJudges({**reports(), "chair": reply}))
    assert score.error == (
        "the consensus JSON does not match the schema at overall_score: 'high' is not of type 'number'")


def test_a_score_path_gives_the_verdict_and_scores_still_feed_the_participants() -> None:
    options = {**PANEL, "consensus": {**CONSENSUS, "score": "overall_score"}}
    reply = json.dumps({"averaged_scores": {"Gemini 3 Pro": 85, "Claude": 65}, "verdict": "x", "overall_score": 77})
    score = run_panel(options, FakeJudges({**reports(), "chair": reply}))
    assert score.raw == 77 and score.extra["participants"] == {"Gemini 3 Pro": 85, "Claude": 65}


def test_fences_are_stripped_and_reports_framed_as_backroomsbench_frames_them() -> None:
    assert strip_code_fences('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert strip_code_fences('  {"a": 1} ') == '{"a": 1}'
    assert parse_consensus('```\n{"a": 1}\n```', ReplyShape(required_keys=("a",))) == {"a": 1}
    rule = "=" * 60
    assert reports_text([("A", "one"), ("B", "two")]) == (
        f"\n{rule}\n\n## Report from A:\n\none\n\n{rule}\n\n## Report from B:\n\ntwo\n\n{rule}\n"
    )


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({**BASE, "judges": ["opus"]}, "two or more names"),
        ({**BASE, "judges": ["opus", "opus"]}, "lists a judge twice"),
        ({**BASE, "aggregate": "vote"}, "aggregate must be one of mean, median, min, majority, consensus"),
        ({**BASE, "aggregate": "consensus"}, "aggregate: consensus and a consensus: mapping go together"),
        ({**BASE, "pass_at": 0.5}, "pass_at"),
        ({**BASE, "min_judges": 4}, "min_judges must be a whole number from 1 to 3"),
        ({**BASE, "max_spread": -1}, "max_spread must be a number"),
        ({**BASE, "judge": "opus"}, "unknown option 'judge' for llm_judge_panel; did you mean 'judges'?"),
        ({**BASE, "scale": [5, 1]}, "must go from low to high"),
        ({**PANEL, "consensus": {**CONSENSUS, "scores": None, "score": None}}, "must be a path"),
        ({**PANEL, "consensus": {"judge": "chair", "prompt": "x"}}, "consensus needs score:"),
        ({**PANEL, "consensus": {**CONSENSUS, "schema": {"type": "thing"}}},
         "consensus.schema is not a valid JSON Schema"),
        ({**PANEL, "consensus": {**CONSENSUS, "model": "x"}}, "consensus has unknown key(s) model"),
    ],
)
def test_bad_panel_options_are_rejected(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as info:
        check_panel(options)
    assert message in str(info.value)


def test_unknown_judges_of_a_panel_and_its_consensus_fail_the_case_at_collection() -> None:
    for options, name in (({**BASE, "judges": ["opus", "gemini"]}, "gemini"),
                          ({**PANEL, "consensus": {**CONSENSUS, "judge": "boss"}}, "boss")):
        spec = ScorerSpec(name="J", type="llm_judge_panel", options=options, key="scorers[0]", line=9)
        with pytest.raises(CaseError) as info:
            validate_case_scoring(make_case((spec,)))
        assert f"unknown judge '{name}'" in str(info.value)
