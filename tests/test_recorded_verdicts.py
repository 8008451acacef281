"""A replay judge without a verdict for the candidate skips the case before the candidate is called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_plugin.core.errors import ReplayMissError
from bench_plugin.run.recorded_verdicts import check_recorded_verdicts as check_bound
from bench_plugin.scoring.bind import ScoringBinder
from bench_plugin.scoring.registry import SCORER_TYPES
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.spec import CaseSpec

SUITE = """\
models:
  recorded: {provider: echo}
  newcomer: {provider: echo}
judges:
  old-judge:
    provider: replay
    replay: {file: verdicts.jsonl, model_key: "{{ model.name }}", fields: {response: verdict}}
tasks:
  - {id: q1, prompt: "Question 1"}
scorers:
  - {name: J, type: llm_judge, judge: old-judge, prompt: "{{ answer }}"}
"""


def cases(tmp_path: Path, options: BuildOptions | None = None, suite: str = SUITE) -> dict[str, CaseSpec]:
    (tmp_path / "verdicts.jsonl").write_text(json.dumps({"model": "recorded", "task": "q1", "verdict": "[[9]]"}) + "\n")
    path = tmp_path / "demo.yaml"
    path.write_text(suite)
    loaded = load_suite_text(suite, path=path, display_path="suites/demo.yaml")
    return {case.model_name: case for case in expand_suite(build_suite(loaded, options))}


def check_recorded_verdicts(case: CaseSpec) -> None:
    check_bound(case, ScoringBinder(SCORER_TYPES).bind(case))


def test_a_model_with_a_recorded_verdict_goes_ahead(tmp_path: Path) -> None:
    check_recorded_verdicts(cases(tmp_path)["recorded"])


def test_a_model_without_one_is_skipped_with_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(ReplayMissError) as info:
        check_recorded_verdicts(cases(tmp_path)["newcomer"])
    assert info.value.kind == "replay_miss"
    assert info.value.message == (
        "judge 'old-judge' replays recorded verdicts and verdicts.jsonl has none for model 'newcomer', task 'q1'; "
        "to judge this model, name a real judge: --bench-judge PROVIDER:MODEL"
    )


def test_a_real_judge_is_not_checked(tmp_path: Path) -> None:
    check_recorded_verdicts(cases(tmp_path, BuildOptions(judge="openai:gpt-4o"))["newcomer"])


@pytest.mark.parametrize(
    "scorer",
    [
        '{name: J, type: llm_judge, judge: old-judge, prompt: "{{ answer }} {{ tone }}", vars: {tone: calm}}',
        "{name: G, type: model_graded_qa, judge: old-judge, reference: Paris}",
    ],
)
def test_a_judge_behind_scorer_vars_or_a_grader_is_checked_too(tmp_path: Path, scorer: str) -> None:
    suite = SUITE.replace('  - {name: J, type: llm_judge, judge: old-judge, prompt: "{{ answer }}"}', f"  - {scorer}")
    found = cases(tmp_path, suite=suite)
    check_recorded_verdicts(found["recorded"])
    with pytest.raises(ReplayMissError):
        check_recorded_verdicts(found["newcomer"])
