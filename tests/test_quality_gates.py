"""Quality gates as specs (written, checked, named) and as verdicts over records, absolute and against a baseline."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.plugin.gate_judge import gates_exit_status
from bench_plugin.report.quality_gates import (
    BROKEN,
    HELD,
    SKIPPED,
    BaselineError,
    judge_gate,
    read_baseline,
    resolve_baseline,
)
from bench_plugin.results.record import ERROR, FAILED, PASSED, UNSCORED, CaseRecord
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.quality_gates import (
    QualityGateSpec,
    build_quality_gates,
    gate_nodeid,
    is_gate_nodeid,
    parse_gate,
    suite_quality_gates,
)

SUITE = """\
models:
  bot: {provider: echo}
  other: {provider: echo}
tasks:
  - {id: t, prompt: hi, tags: [hard], scorers: [{type: contains, value: hi, name: correct}]}
quality_gates:
GATES
"""


def loaded(gates: str, tmp_path: Path) -> Any:
    return load_suite_text(SUITE.replace("GATES", gates), path=tmp_path / "demo.yaml", display_path="suites/demo.yaml")


def gates_of(gates: str, tmp_path: Path) -> tuple[QualityGateSpec, ...]:
    suite = loaded(gates, tmp_path)
    spec = build_suite(suite)
    return suite_quality_gates(suite, expand_suite(spec), spec.models)


def problem(gates: str, tmp_path: Path) -> str:
    with pytest.raises(SuiteError) as info:
        gates_of(gates, tmp_path)
    return str(info.value)


def record(nodeid: str, status: str, *, model: str = "bot", task: str = "t", composite: float | None = None,
           cluster: str | None = None, tags: tuple[str, ...] = ()) -> CaseRecord:
    score = composite if composite is not None else (1.0 if status == PASSED else 0.0)
    return CaseRecord(nodeid=nodeid, suite="demo", path="suites/demo.yaml", task=task, model=model, model_id=model,
                      model_label=model, provider="echo", run=1, status=status, tags=list(tags), cluster=cluster,
                      composite=score if status in (PASSED, FAILED) else None,
                      scores={"components": [{"name": "correct", "value": score}]})


# -- written and checked ---------------------------------------------------------------------------------------


def test_an_expression_and_a_mapping_read_as_gates_with_readable_labels() -> None:
    assert parse_gate("pass_rate >= 0.8", origin="x").label == "pass_rate>=0.8"
    assert parse_gate("mean(correct)>=.7", origin="x").label == "mean(correct)>=0.7"
    assert parse_gate("error_rate <= 0.05", origin="x").maximum == 0.05
    scoped = parse_gate({"figure": "mean", "min": 0.5, "max": 0.9, "model": "bot", "tag": "hard"}, origin="x")
    assert scoped.label == "model=bot,tag=hard,mean>=0.5,mean<=0.9"
    relative = parse_gate({"figure": "mean", "max_drop": 0.02}, origin="x")
    assert relative.relative and relative.label == "drop(mean)<=0.02" and relative.on_inconclusive == "pass"
    assert parse_gate({"figure": "error_rate", "max_drop": 0.01}, origin="x").label == "rise(error_rate)<=0.01"


@pytest.mark.parametrize(("entry", "message"), [
    ("pass_rate > 0.8", "cannot read the gate 'pass_rate > 0.8': write FIGURE >= NUMBER"),
    ("pas_rate >= 0.8", "unknown figure 'pas_rate'; did you mean 'pass_rate'?"),
    ("pass_rate(correct) >= 0.8", "'pass_rate' has no component: a component's figure is its mean"),
    ({"figure": "mean"}, "a gate needs a bound: 'min', 'max' or 'max_drop'"),
    ({"figure": "mean", "min": 0.5, "max_drop": 0.1}, "a gate is absolute ('min', 'max') or relative"),
    ({"figure": "mean", "max_drop": 0.1, "on_inconclusive": "maybe"}, "on_inconclusive: expected pass or fail"),
    ({"figure": "mean", "min": 0.1, "modle": "x"}, "unknown key 'modle'; did you mean 'model'?"),
])
def test_a_gate_that_cannot_be_read_says_how_to_write_it(entry: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_gate(entry, origin="x")
    assert message in str(info.value)


def test_an_unknown_figure_is_an_error_at_its_line_with_a_did_you_mean(tmp_path: Path) -> None:
    message = problem("  - pass_rate >= 0.8\n  - means >= 0.5\n", tmp_path)
    assert message.splitlines()[0].startswith("suites/demo.yaml:8: quality_gates[1]: unknown figure 'means'")
    assert "did you mean 'mean'?" in message


def test_an_unknown_component_is_an_error_at_its_line_with_a_did_you_mean(tmp_path: Path) -> None:
    message = problem("  - mean(corect) >= 0.5\n", tmp_path)
    assert message.splitlines()[0] == "suites/demo.yaml:7: quality_gates[0]: unknown component 'corect'"
    assert "did you mean 'correct'?" in message


def test_an_unknown_model_or_tag_is_an_error_with_a_did_you_mean(tmp_path: Path) -> None:
    message = problem("  - {figure: pass_rate, min: 0.5, model: bott}\n", tmp_path)
    assert "suites/demo.yaml:7: quality_gates[0]: unknown model 'bott'" in message
    assert "did you mean 'bot'?" in message
    assert "no case has the tag 'hrd'" in problem("  - {figure: pass_rate, min: 0.5, tag: hrd}\n", tmp_path)


def test_the_schema_names_the_figures_a_mapping_may_use(tmp_path: Path) -> None:
    message = problem("  - {figure: pass_rat, min: 0.5}\n", tmp_path)
    assert "quality_gates[0]" in message and "pass_rate" in message


def test_gates_from_the_options_follow_the_suites_own_and_count_once(tmp_path: Path) -> None:
    extra = (parse_gate("pass_rate>=0.8", origin="--bench-gate"), parse_gate("mean>=0.5", origin="--bench-gate"))
    gates = build_quality_gates(loaded("  - pass_rate >= 0.8\n", tmp_path), extra)
    assert [gate.label for gate in gates] == ["pass_rate>=0.8", "mean>=0.5"]
    assert gates[0].origin == "suites/demo.yaml" and gates[0].line == 6  # 0-based: printed as line 7


def test_a_gate_id_never_reads_as_a_case_id() -> None:
    gate = parse_gate({"figure": "mean", "min": 0.5, "model": "x-run3"}, origin="x")
    assert is_gate_nodeid(gate_nodeid("suites/demo.yaml", gate))
    assert not is_gate_nodeid("suites/demo.yaml::gate[bot-run1]")  # a task named gate
    assert not is_gate_nodeid("suites/demo.yaml::t[bot-run1]")


# -- absolute verdicts ------------------------------------------------------------------------------------------


def test_an_absolute_gate_holds_per_model_and_breaks_on_the_model_below() -> None:
    records = [record(f"a{i}", PASSED if i < 8 else FAILED) for i in range(10)]
    records += [record(f"b{i}", PASSED if i < 6 else FAILED, model="other") for i in range(10)]
    verdict = judge_gate(parse_gate("pass_rate >= 0.7", origin="x"), records)
    assert verdict.outcome == BROKEN
    assert [(figure.model, figure.value, figure.outcome) for figure in verdict.models] == [
        ("bot", 0.8, HELD), ("other", 0.6, BROKEN)]
    assert verdict.reason == "pass_rate>=0.7 broken for other"
    only_bot = judge_gate(parse_gate({"figure": "pass_rate", "min": 0.7, "model": "bot"}, origin="x"), records)
    assert only_bot.outcome == HELD


def test_unscored_and_errored_cases_count_only_in_the_error_rate() -> None:
    records = [record("a", PASSED), record("b", UNSCORED), record("c", ERROR), record("d", FAILED, composite=0.5)]
    assert judge_gate(parse_gate("mean >= 0.75", origin="x"), records).models[0].value == 0.75
    assert judge_gate(parse_gate("error_rate <= 0.2", origin="x"), records).models[0].value == 0.25
    assert judge_gate(parse_gate("mean(correct) >= 0.7", origin="x"), records).outcome == HELD


def test_a_gate_with_no_case_to_read_is_skipped() -> None:
    verdict = judge_gate(parse_gate({"figure": "mean", "min": 0.5, "tag": "hard"}, origin="x"), [record("a", PASSED)])
    assert verdict.outcome == SKIPPED


# -- against a baseline -----------------------------------------------------------------------------------------

MAX_DROP = {"figure": "pass_rate", "max_drop": 0.02}


def runs_with_drop(cases: int, dropped: int, seed: int = 7) -> tuple[list[CaseRecord], dict[str, CaseRecord]]:
    """A baseline passing 80% of ``cases`` (each its own cluster), and a run that fails ``dropped`` more of them."""
    rng = random.Random(seed)
    passing = [rng.random() < 0.8 for _ in range(cases)]
    passed_before = [i for i, ok in enumerate(passing) if ok]
    lost = set(rng.sample(passed_before, dropped))
    baseline = {f"c{i}": record(f"c{i}", PASSED if ok else FAILED, task=f"t{i}") for i, ok in enumerate(passing)}
    current = [record(f"c{i}", PASSED if ok and i not in lost else FAILED, task=f"t{i}")
               for i, ok in enumerate(passing)]
    return current, baseline


def test_a_five_point_regression_on_300_cases_is_regressed_and_breaks_the_gate() -> None:
    current, baseline = runs_with_drop(300, 15)
    verdict = judge_gate(parse_gate(MAX_DROP, origin="x"), current, baseline)
    assert verdict.outcome == BROKEN
    assert verdict.models[0].outcome == "regressed" and verdict.models[0].value == pytest.approx(0.05)


def test_the_same_model_twice_is_unchanged() -> None:
    current, baseline = runs_with_drop(300, 0)
    verdict = judge_gate(parse_gate(MAX_DROP, origin="x"), current, baseline)
    assert (verdict.outcome, verdict.models[0].outcome, verdict.models[0].value) == (HELD, "unchanged", 0.0)


def test_a_five_point_drop_on_20_cases_is_inconclusive_which_fails_only_when_the_gate_says_so() -> None:
    current, baseline = runs_with_drop(20, 1)
    verdict = judge_gate(parse_gate(MAX_DROP, origin="x"), current, baseline)
    assert (verdict.outcome, verdict.models[0].outcome) == (HELD, "inconclusive")
    strict = judge_gate(parse_gate({**MAX_DROP, "on_inconclusive": "fail"}, origin="x"), current, baseline)
    assert strict.outcome == BROKEN


def test_cases_of_one_cluster_are_one_unit_of_the_comparison() -> None:
    current, baseline = runs_with_drop(300, 15)
    clustered = [CaseRecord(**{**r.to_dict(), "cluster": f"q{i // 30}"}) for i, r in enumerate(current)]
    verdict = judge_gate(parse_gate(MAX_DROP, origin="x"), clustered, baseline)
    assert "in 10 clusters" in verdict.models[0].text


def test_no_baseline_skips_a_relative_gate_and_an_unreadable_one_breaks_it(tmp_path: Path) -> None:
    gate = parse_gate(MAX_DROP, origin="x")
    assert judge_gate(gate, [record("a", PASSED)], None).outcome == SKIPPED
    broken = judge_gate(gate, [record("a", PASSED)], BaselineError("--bench-baseline x: no results found"))
    assert (broken.outcome, broken.reason) == (BROKEN, "--bench-baseline x: no results found")


def test_a_baseline_with_no_matching_case_breaks_the_gate() -> None:
    verdict = judge_gate(parse_gate(MAX_DROP, origin="x"), [record("a", PASSED)], {"zz": record("zz", PASSED)})
    assert verdict.outcome == BROKEN and "no case matches the baseline" in verdict.models[0].text


def test_the_baseline_is_a_results_file_an_output_folder_or_a_named_run(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    (folder / "runs" / "main").mkdir(parents=True)
    for path in (folder / "results.jsonl", folder / "runs" / "main" / "results.jsonl"):
        path.write_text(json.dumps(record("a", PASSED).to_dict()) + "\n")
    assert resolve_baseline("out/results.jsonl", folder, tmp_path) == folder / "results.jsonl"
    assert resolve_baseline(str(folder), folder, tmp_path) == folder / "results.jsonl"
    assert resolve_baseline("main", folder, tmp_path) == folder / "runs" / "main" / "results.jsonl"
    assert list(read_baseline(folder / "results.jsonl")) == ["a"]
    with pytest.raises(BaselineError, match="--bench-baseline gone: no results found"):
        resolve_baseline("gone", folder, tmp_path)
    (tmp_path / "bad.jsonl").write_text("{}\n[]\n")
    with pytest.raises(BaselineError, match=r"cannot read .*bad.jsonl.*:1: expected a case record"):
        read_baseline(tmp_path / "bad.jsonl")


def test_the_exit_status_the_gates_give() -> None:
    gate = parse_gate("pass_rate >= 0.5", origin="x")
    held, broken, skipped = (judge_gate(gate, [record("a", status)]) for status in (PASSED, FAILED, UNSCORED))
    assert gates_exit_status([held, skipped], selected=True)[0] == pytest.ExitCode.OK
    assert gates_exit_status([held, broken], selected=True) == (
        pytest.ExitCode.TESTS_FAILED,
        "exit status 1 from the quality gates (--bench-exit-on-gates): 1 of 2 broken; failed cases do not decide it")
    assert gates_exit_status([skipped], selected=True) == (
        None, "no quality gate was judged: the exit status is pytest's (--bench-exit-on-gates)")
    assert gates_exit_status([], selected=False) == (None, None)  # a session without gates says nothing
