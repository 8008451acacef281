"""The llm_judge scorer with a fake call_model: prompts, verdicts, scale, unscored replies, errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, TransientProviderError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.llm_judge import JudgeScorer
from bench_plugin.scoring.judge.prompt import judge_names
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer

PROVIDER = ProviderSpec(name="offline", type="scripted")
JUDGE = ModelSpec(name="gpt4o", provider=PROVIDER, id="gpt-4o", label="gpt-4o")
CANDIDATE = ModelSpec(name="small", provider=PROVIDER, id="small-1", label="Small One")


def make_case(root: Path | None = None, **variables: Any) -> CaseSpec:
    return CaseSpec(
        suite="demo",
        path="suites/demo.yaml",
        task="capital",
        model_name="small",
        model=CANDIDATE,
        run=2,
        messages=(Message("system", "Be brief."), Message("user", "What is the capital of France?")),
        scorers=(),
        composite=CompositeSpec(),
        pass_threshold=0.5,
        variables=variables,
        judges={"gpt4o": JUDGE},
        templates=TemplateRenderer(root),
    )


class FakeJudge:
    """Answers every judge call with a fixed reply and remembers the requests."""

    def __init__(self, reply: str = "Rating: [[8]]", error: Exception | None = None) -> None:
        self.reply = reply
        self.error = error
        self.requests: list[CompletionRequest] = []

    async def __call__(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return Completion(text=self.reply, usage=Usage(input_tokens=120, output_tokens=30), latency_s=1.5)


def run_judge(
    options: dict[str, Any],
    fake: FakeJudge | None = None,
    case: CaseSpec | None = None,
    response: str = "Paris.",
) -> tuple[ComponentScore, FakeJudge]:
    fake = fake or FakeJudge()
    case = case or make_case()
    spec = ScorerSpec(name="J", type="llm_judge", options=options, key="scorers[2]", line=20)
    transcript = (*case.messages, Message("assistant", response))
    context = ScoringContext(case=case, response=response, transcript=transcript, call_model=fake)
    return asyncio.run(JudgeScorer.parse(spec).score(context)), fake


BASIC = {"judge": "gpt4o", "prompt": "Q: {{ question }}\nA: {{ answer }}"}


def test_verdict_is_normalised_onto_the_scale() -> None:
    score, _ = run_judge(BASIC)
    assert score.value == pytest.approx((8 - 1) / 9, abs=1e-6)
    assert score.raw == 8.0
    assert score.detail == "judge gpt-4o: 8/10"
    assert score.judge_output == "Rating: [[8]]"


def test_usage_of_the_judge_call_is_recorded() -> None:
    score, _ = run_judge(BASIC)
    assert score.usage == {"input_tokens": 120, "output_tokens": 30, "latency_s": 1.5}


def test_request_goes_to_the_judge_model_with_purpose_judge() -> None:
    _, fake = run_judge(BASIC)
    (request,) = fake.requests
    assert request.model is JUDGE
    assert (request.purpose, request.task, request.run, request.turn) == ("judge", "capital", 2, 1)
    assert request.messages == (Message("user", "Q: What is the capital of France?\nA: Paris."),)


def test_template_variables_cover_the_conversation_and_the_case() -> None:
    options = {
        "judge": "gpt4o",
        "system": "You grade {{ model.label }} on {{ task }}.",
        "prompt": "{{ transcript }}|{{ messages | length }}|{{ country }}|{{ vars.country }}",
    }
    _, fake = run_judge(options, case=make_case(country="France"))
    system, user = fake.requests[0].messages
    assert system == Message("system", "You grade Small One on capital.")
    assert user.content == (
        "system: Be brief.\n\nuser: What is the capital of France?\n\nassistant: Paris.|3|France|France"
    )


def test_reference_is_rendered_and_none_when_absent() -> None:
    prompt = "{% if reference %}ref={{ reference }}{% else %}no reference{% endif %}"
    _, fake = run_judge(
        {"judge": "gpt4o", "prompt": prompt, "reference": "{{ gold }}"}, case=make_case(gold="Paris")
    )
    assert fake.requests[0].messages[-1].content == "ref=Paris"
    _, fake = run_judge({"judge": "gpt4o", "prompt": prompt})
    assert fake.requests[0].messages[-1].content == "no reference"


def test_reference_defaults_to_a_case_variable_named_reference() -> None:
    prompt = "ref={{ reference }}"
    _, fake = run_judge({"judge": "gpt4o", "prompt": prompt}, case=make_case(reference="Paris"))
    assert fake.requests[0].messages[-1].content == "ref=Paris"
    options = {"judge": "gpt4o", "prompt": prompt, "reference": "{{ reference | upper }}"}
    _, fake = run_judge(options, case=make_case(reference="Paris"))
    assert fake.requests[0].messages[-1].content == "ref=PARIS"


def test_answer_shadows_a_case_variable_of_the_same_name() -> None:
    _, fake = run_judge(
        {"judge": "gpt4o", "prompt": "{{ answer }} vs {{ vars.answer }}"}, case=make_case(answer="gold")
    )
    assert fake.requests[0].messages[-1].content == "Paris. vs gold"


def test_prompt_file_is_rendered_from_the_suite_folder(tmp_path: Path) -> None:
    (tmp_path / "judge.j2").write_text("Grade: {{ answer }}", encoding="utf-8")
    _, fake = run_judge({"judge": "gpt4o", "prompt_file": "judge.j2"}, case=make_case(root=tmp_path))
    assert fake.requests[0].messages[-1].content == "Grade: Paris."


def test_custom_scale_and_regex_rule() -> None:
    options = {**BASIC, "scale": [1, 5], "parse": {"regex": r"<score>\s*(\d)\s*</score>"}}
    score, _ = run_judge(options, FakeJudge("<feedback>good</feedback><score>4</score>"))
    assert score.value == 0.75
    assert score.detail == "judge gpt-4o: 4/5"


def test_unparseable_reply_is_unscored_not_zero() -> None:
    score, _ = run_judge(BASIC, FakeJudge("I'd say it is pretty good."))
    assert score.value is None
    assert score.unscored
    assert score.error is not None
    assert score.error.startswith("could not read a score from the judge reply: no [[N]] rating")
    assert score.judge_output == "I'd say it is pretty good."


def test_out_of_scale_verdict_is_unscored_without_clamp() -> None:
    score, _ = run_judge(BASIC, FakeJudge("Rating: [[12]]"))
    assert (score.value, score.raw) == (None, 12.0)
    assert score.error == "judge verdict 12 is outside the scale [1, 10] (set clamp: true to clamp it)"


def test_out_of_scale_verdict_is_clamped_when_asked() -> None:
    score, _ = run_judge({**BASIC, "clamp": True}, FakeJudge("Rating: [[12]]"))
    assert (score.value, score.raw) == (1.0, 10.0)  # raw is the verdict on the scale, after clamping
    assert score.detail == "judge gpt-4o: 12/10, clamped to 10"


def test_provider_error_propagates_for_the_runner_to_classify() -> None:
    with pytest.raises(TransientProviderError):
        run_judge(BASIC, FakeJudge(error=TransientProviderError("timeout", kind="timeout")))


def test_unknown_judge_is_a_case_error_naming_the_valid_judges() -> None:
    with pytest.raises(CaseError) as info:
        run_judge({**BASIC, "judge": "gpt4"})
    assert "unknown judge 'gpt4'; did you mean 'gpt4o'? judges: gpt4o" in str(info.value)
    assert (info.value.key, info.value.line) == ("scorers[2].judge", 20)


def test_judge_names_lists_the_judge_option() -> None:
    spec = ScorerSpec(name="J", type="llm_judge", options=BASIC, key="scorers[0]")
    assert judge_names(JudgeScorer.parse(spec)) == ["gpt4o"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prompt": "x"}, "needs judge"),
        ({"judge": "gpt4o"}, "exactly one of prompt"),
        ({"judge": "gpt4o", "prompt": "x", "prompt_file": "y"}, "exactly one of prompt"),
        ({**BASIC, "system": "a", "system_file": "b"}, "not both"),
        ({**BASIC, "scale": [10, 1]}, "must go from low to high"),
        ({**BASIC, "scale": [1]}, "two numbers"),
        ({**BASIC, "parse": {"regex": "("}}, "does not compile"),
        ({**BASIC, "clamp": "yes"}, "clamp must be true or false"),
        ({**BASIC, "rubrik": "x"}, "unknown option 'rubrik' for llm_judge; did you mean 'rubric'?"),
        ({**BASIC, "rubric": "x"}, "rubric must be a mapping"),
        ({**BASIC, "rubric": {"categories": [{"name": "Depth"}]}}, "needs max (its points) or scale"),
        ({**BASIC, "parse": {"regex": "(\\d+)", "default": "low"}}, "parse.default must be a number"),
        ({**BASIC, "participants": {"table": {"row": "x", "column": "Score"}}}, "reads every row; drop row"),
    ],
)
def test_bad_options_are_rejected_at_validation(options: dict[str, Any], message: str) -> None:
    spec = ScorerSpec(name="J", type="llm_judge", options=options, key="scorers[0]")
    with pytest.raises(ValueError) as info:
        JudgeScorer.parse(spec)
    assert message in str(info.value)
