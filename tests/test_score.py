"""Scoring a whole case: concurrency, composite and verdict, validation that points into the YAML."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from typing import Any

import pytest

import bench_plugin.core.registry
from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, JudgeError, TransientProviderError
from bench_plugin.scoring import registry
from bench_plugin.scoring.bind import ScoringBinder
from bench_plugin.scoring.context import ComponentScore, ScoreSet, ScoringContext
from bench_plugin.scoring.registry import get_scorer, scorer_types
from bench_plugin.scoring.score import score_case
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, GateSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer

JUDGE = ModelSpec(name="judge", provider=ProviderSpec(name="offline", type="scripted"), id="j-1", label="j-1")


def scorer(name: str, type_name: str, line: int, **options: Any) -> ScorerSpec:
    return ScorerSpec(name=name, type=type_name, options=options, key=f"scorers[{line}]", line=line)


def make_case(
    *scorers: ScorerSpec, composite: CompositeSpec | None = None, pass_threshold: float = 0.7
) -> CaseSpec:
    return CaseSpec(
        suite="demo",
        path="suites/demo.yaml",
        task="capital",
        model_name="m",
        model=None,
        run=1,
        messages=(Message("user", "Capital of France?"),),
        scorers=scorers,
        composite=composite or CompositeSpec(line=30),
        pass_threshold=pass_threshold,
        variables={},
        judges={"judge": JUDGE},
        templates=TemplateRenderer(None),
    )


async def _reply_8(request: CompletionRequest) -> Completion:
    return Completion(text="Rating: [[8]]")


def validate_case_scoring(case: CaseSpec) -> None:
    ScoringBinder(registry.SCORER_TYPES).bind(case)


def score(case: CaseSpec, response: str = "Paris", call_model: Any = _reply_8) -> ScoreSet:
    context = ScoringContext(case=case, response=response, transcript=(), call_model=call_model)
    return asyncio.run(score_case(context, ScoringBinder(registry.SCORER_TYPES).bind(case)))


CONTAINS = scorer("C", "contains", 10, value="Paris")
JUDGED = scorer("J", "llm_judge", 14, judge="judge", prompt="{{ answer }}")


# ----------------------------------------------------------------------------- score_case


def test_case_with_no_scorers_passes_without_a_composite() -> None:
    result = score(make_case())
    assert (result.composite, result.passed, result.components) == (None, True, ())


def test_components_keep_suite_order_and_the_mean_decides() -> None:
    result = score(make_case(CONTAINS, JUDGED))
    assert [c.name for c in result.components] == ["C", "J"]
    assert result.composite == pytest.approx((1.0 + 7 / 9) / 2, abs=1e-6)
    assert result.passed is True
    assert result.composite_detail.startswith("mean(C, J) = ")


def test_composite_below_threshold_fails() -> None:
    result = score(make_case(CONTAINS, pass_threshold=0.7), response="Lyon")
    assert (result.composite, result.passed) == (0.0, False)


def test_composite_equal_to_threshold_passes() -> None:
    case = make_case(CONTAINS, composite=CompositeSpec(formula="0.7*C"), pass_threshold=0.7)
    assert score(case).passed is True


def test_judges_run_concurrently() -> None:
    started = 0
    both_started = asyncio.Event()

    async def slow_judge(request: CompletionRequest) -> Completion:
        nonlocal started
        started += 1
        if started == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=2)  # times out if the calls were sequential
        return Completion(text="[[10]]")

    case = make_case(JUDGED, scorer("J2", "llm_judge", 18, judge="judge", prompt="again"))
    result = score(case, call_model=slow_judge)
    assert result.composite == 1.0


def test_unscored_judge_makes_the_case_unscored_with_the_reason() -> None:
    async def vague(request: CompletionRequest) -> Completion:
        return Completion(text="Looks fine to me.")

    result = score(make_case(CONTAINS, JUDGED), call_model=vague)
    assert (result.composite, result.passed) == (None, None)
    assert result.unscored_reason is not None
    assert result.unscored_reason.startswith("J: could not read a score from the judge reply")


def test_clawbench_gate_decides_the_verdict() -> None:
    composite = CompositeSpec(
        formula="0.6*C + 0.4*J", gates=(GateSpec("J", "C >= 0.9999"),), on_missing="renormalize"
    )
    result = score(make_case(CONTAINS, JUDGED, composite=composite), response="Lyon")
    assert result.composite == 0.0
    assert "J dropped: gate C >= 0.9999 not met" in result.composite_detail


def test_provider_error_propagates_after_the_other_scorers_finish() -> None:
    async def broken(request: CompletionRequest) -> Completion:
        raise TransientProviderError("HTTP 503", status=503)

    with pytest.raises(TransientProviderError):
        score(make_case(CONTAINS, JUDGED), call_model=broken)


def test_judge_error_from_a_plugin_scorer_is_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    class Undecided:
        def validate(self, spec: ScorerSpec) -> None:
            return None

        async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
            raise JudgeError("panel split 2-2")

    monkeypatch.setattr(registry, "SCORER_TYPES", registry.SCORER_TYPES.with_registered({"panel": Undecided()}))
    result = score(make_case(scorer("P", "panel", 5)))
    assert result.components[0].error == "panel split 2-2"
    assert result.unscored_reason == "P: panel split 2-2"


# ----------------------------------------------------------------------------- validate_case_scoring


def validation_error(case: CaseSpec) -> CaseError:
    with pytest.raises(CaseError) as info:
        validate_case_scoring(case)
    return info.value


def test_valid_case_passes_validation() -> None:
    validate_case_scoring(make_case(CONTAINS, JUDGED, composite=CompositeSpec(formula="0.5*C + 0.5*J")))


def test_unknown_scorer_type_reports_file_line_and_choices() -> None:
    error = validation_error(make_case(scorer("X", "contain", 7, value="x")))
    assert (error.path, error.line, error.key) == ("suites/demo.yaml", 7, "scorers[7].type")
    assert "unknown scorer type 'contain'; did you mean 'contains'?" in error.message
    assert str(error).startswith("suites/demo.yaml:8: scorers[7].type:")


def test_bad_option_reports_the_scorer_line() -> None:
    error = validation_error(make_case(scorer("R", "regex", 9, pattern="(")))
    assert (error.line, error.key) == (9, "scorers[9]")
    assert error.message.startswith("regex: pattern /(/ does not compile")


def test_duplicate_scorer_names_point_at_the_second() -> None:
    error = validation_error(make_case(CONTAINS, scorer("C", "regex", 12, pattern="x")))
    assert (error.line, error.key) == (12, "scorers[12].name")
    assert "used twice (first at line 11)" in error.message


def test_unknown_judge_is_caught_before_any_call() -> None:
    error = validation_error(make_case(scorer("J", "llm_judge", 4, judge="gpt5", prompt="x")))
    assert error.key == "scorers[4].judge"
    assert "unknown judge 'gpt5' (judges: judge)" in error.message


def test_composite_error_reports_the_composite_line() -> None:
    error = validation_error(make_case(CONTAINS, composite=CompositeSpec(formula="0.5*C + 0.5*K", line=30)))
    assert (error.line, error.key) == (30, "composite")
    assert "unknown component 'K'" in error.message


# ----------------------------------------------------------------------------- registry


def test_builtin_types_are_listed_in_documented_order() -> None:
    assert scorer_types()[:10] == [
        "contains",
        "not_contains",
        "regex",
        "equals",
        "json_valid",
        "json_schema",
        "json_path",
        "length",
        "numeric",
        "llm_judge",
    ]


class PluginScorer:
    def validate(self, spec: ScorerSpec) -> None:
        return None

    async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
        return ComponentScore(name=spec.name, value=0.5)


@pytest.fixture
def plugin_entry_point(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    point = EntryPoint(name="vibes", value=f"{__name__}:PluginScorer", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(bench_plugin.core.registry, "_group",
                        lambda group: {"vibes": point} if group == registry.ENTRY_POINT_GROUP else {})
    monkeypatch.setattr(registry.SCORER_TYPES, "_loaded", {})  # loaded types are kept per process
    yield


@pytest.mark.usefixtures("plugin_entry_point")
def test_third_party_scorer_loads_from_its_entry_point() -> None:
    assert "vibes" in scorer_types()
    assert isinstance(get_scorer("vibes"), PluginScorer)
    result = score(make_case(scorer("V", "vibes", 3)))
    assert result.composite == 0.5


@pytest.mark.usefixtures("plugin_entry_point")
def test_unknown_type_lists_third_party_types_too() -> None:
    with pytest.raises(
        ValueError, match=r"valid types: contains, .*, llm_judge, llm_judge_panel, llm_judge_pairwise.*, vibes"
    ):
        get_scorer("nope")
