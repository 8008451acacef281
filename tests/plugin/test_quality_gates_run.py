"""Quality gates in a run: items after the cases, in junitxml, selectable, the same in one process and under xdist.

With --bench-exit-on-gates they alone decide the exit status.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench_plugin.cli import main as bench

# ten tasks; the scripted model fails q-3 and q-7: 20% failing cases
SUITE = """\
models:
  bot:
    provider: scripted
    script:
      - {task: "q-[37]", reply: "no"}
      - {reply: "yes"}
matrix:
  n: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
tasks:
  - {id: "q-{{ n }}", prompt: "question {{ n }}", tags: [quiz]}
scorers:
  - {type: equals, value: "yes", name: correct}
quality_gates:
  - pass_rate >= 0.7
  - {figure: mean, component: correct, min: 0.5, model: bot}
"""
GATES = ["suites/demo.yaml::gate[pass_rate>=0.7]", "suites/demo.yaml::gate[model=bot,mean(correct)>=0.5]"]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", **{"suites/demo": SUITE})
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "--bench-html", "off", *args)


def shows(result: pytest.RunResult, *lines: str) -> None:
    """Each line is in the terminal output, whole (gate ids hold brackets, which fnmatch reads as patterns)."""
    output = result.stdout.lines
    for line in lines:
        assert any(line in shown for shown in output), line


def gate_cases(path: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """The gate test cases of a junitxml file: name -> (outcome, properties)."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.get("name", "").startswith("gate["):
            outcome = "failed" if case.find("failure") is not None else "skipped" if case.find(
                "skipped") is not None else "passed"
            properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
            found[case.get("name", "")] = (outcome, properties)
    return found


def test_gates_are_items_after_the_cases_with_their_figure_and_verdict_in_junitxml(suite: pytest.Pytester) -> None:
    recorder = suite.inline_run("suites", "-p", "no:cacheprovider", "--bench-html", "off", "--junitxml", "j.xml")
    calls = [report.nodeid for report in recorder.getreports("pytest_runtest_logreport") if report.when == "call"]
    assert calls[-2:] == GATES and len(calls) == 12
    recorder.assertoutcome(passed=10, failed=2)
    assert recorder.ret == 1  # without --bench-exit-on-gates a failed case fails the session, as ever
    junit = gate_cases(suite.path / "j.xml")
    assert junit["gate[pass_rate>=0.7]"] == ("passed", {
        "bench_gate": "pass_rate>=0.7", "bench_gate_figure": "pass_rate", "bench_gate_outcome": "held",
        "bench_gate_models": "bot=0.8000 (held)"})


def test_with_exit_on_gates_a_run_with_failing_cases_and_no_gate_broken_exits_0(suite: pytest.Pytester) -> None:
    result = run(suite, "--bench-exit-on-gates")
    result.assert_outcomes(passed=10, failed=2)  # the failed cases still show as FAILED
    assert result.ret == 0
    shows(result, "HELD suites/demo.yaml::gate[pass_rate>=0.7]: pass_rate>=0.7 holds",
          "exit status 0 from the quality gates (--bench-exit-on-gates): all 2 hold; failed cases do not decide it")


def test_with_exit_on_gates_a_broken_gate_exits_1_with_its_reason(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\naddopts = --bench-cache off\nbench_exit_on_gates = true\nbench_gates = pass_rate>=0.9\n")
    result = run(suite)
    result.assert_outcomes(passed=10, failed=3)
    assert result.ret == 1
    shows(result, "BROKEN suites/demo.yaml::gate[pass_rate>=0.9]: pass_rate>=0.9 broken for bot",
          "    bot: pass_rate = 0.8 over 10 cases: below 0.9",
          "exit status 1 from the quality gates (--bench-exit-on-gates): 1 of 3 broken;")


def test_gates_are_selected_like_any_item(suite: pytest.Pytester) -> None:
    only_cases = run(suite, "-k", "not gate")
    only_cases.assert_outcomes(passed=8, failed=2, deselected=2)
    collected = run(suite, "--collect-only", "-q", "-m", "bench_gate")
    shows(collected, *GATES, "2/12 tests collected (10 deselected)")
    alone = run(suite, "-k", "gate and 0.7")  # with none of its cases, a gate has nothing to read
    alone.assert_outcomes(skipped=1, deselected=11)


def test_a_gate_naming_an_unknown_figure_is_a_collection_error_with_a_did_you_mean(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.makefile(".yaml", **{"suites/demo": SUITE.replace("pass_rate >= 0.7", "pass_rat >= 0.7")})
    result = run(suite)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    shows(result, "suites/demo.yaml:14: quality_gates[0]: unknown figure 'pass_rat'; did you mean 'pass_rate'?")
    assert bench(["validate", str(suite.path / "suites")]) == 1
    assert "unknown figure 'pass_rat'" in capsys.readouterr().err


def test_a_gate_option_that_cannot_be_read_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = run(suite, "--bench-gate", "pass_rate > 0.8")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-gate 'pass_rate > 0.8': cannot read the gate*"])


def regressing(pytester: pytest.Pytester, failing: str) -> None:
    """Forty cases; the scripted model fails those whose task id matches the glob ``failing``."""
    text = (SUITE.replace('"q-[37]"', f'"{failing}"').replace("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", str(list(range(40))))
            .replace("  - pass_rate >= 0.7\n", "").replace("min: 0.5, model: bot}", "max_drop: 0.02}"))
    pytester.makefile(".yaml", **{"suites/demo": text})


def test_a_relative_gate_breaks_on_a_regression_from_the_baseline_and_holds_against_itself(
    pytester: pytest.Pytester,
) -> None:
    regressing(pytester, "q-*3")  # q-3, q-13, q-23, q-33: 4 of 40 fail
    run(pytester, "--bench-output", "main").assert_outcomes(passed=36, failed=4, skipped=1)
    same = run(pytester, "--bench-baseline", "main", "--bench-exit-on-gates")
    assert same.ret == 0
    shows(same, "bot: drop +0.0000 [-0.0928, +0.0928] at 95%, p (Holm) 1, 40 paired cases in 40 clusters: inconclusive")
    regressing(pytester, "q-*[0-4]")  # now 20 of 40 fail
    worse = run(pytester, "--bench-baseline", "main/results.jsonl", "--bench-exit-on-gates")
    assert worse.ret == 1
    shows(worse, "BROKEN suites/demo.yaml::gate[drop(mean(correct))<=0.02]: drop(mean(correct))<=0.02 broken for bot",
          "bot: drop +0.4000 [", "paired cases in 40 clusters: regressed (margin 0.02)")


def test_without_a_baseline_a_relative_gate_is_skipped_and_a_missing_one_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    regressing(pytester, "q-*3")
    run(pytester).assert_outcomes(passed=36, failed=4, skipped=1)
    missing = run(pytester, "--bench-baseline", "nowhere")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--bench-baseline: nowhere: no such results file or folder*"])


def test_in_a_shard_the_gates_wait_for_the_merged_results(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    for shard in (1, 2):
        result = run(suite, "--bench-shard", f"{shard}/2", "--bench-output", f"s{shard}", "-rs")
        shows(result, "a shard (--bench-shard) holds part of the cases")
    assert bench(["gates", "s1/results.jsonl", "s2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "HELD suites/demo.yaml::gate[pass_rate>=0.7]: pass_rate>=0.7 holds" in printed
    assert printed[-1] == "2 gates: 2 hold, 0 broken, 0 skipped"
    assert bench(["gates", "s1", "s2", "--gate", "pass_rate>=0.9"]) == 1
    assert "    bot: pass_rate = 0.8 over 10 cases: below 0.9" in capsys.readouterr().out
    assert bench(["gates", "s1", "s2", "--baseline", "nowhere"]) == 2
    assert "bench: --bench-baseline nowhere: no results found" in capsys.readouterr().err


@pytest.mark.slow
def test_gates_under_xdist_are_judged_by_the_controller_as_in_one_process(suite: pytest.Pytester) -> None:
    run(suite, "--bench-output", "main", "--bench-gate", "pass_rate>=0.9")
    args = ["--bench-gate", "pass_rate>=0.9", "--bench-gate", "{figure: pass_rate, max_drop: 0.02}",
            "--bench-baseline", "main"]
    one = run(suite, "--junitxml", "one.xml", *args)
    two = run(suite, "-n", "2", "--junitxml", "two.xml", *args)
    one.assert_outcomes(passed=11, failed=3)
    two.assert_outcomes(passed=11, failed=3)
    assert one.ret == two.ret == 1
    assert gate_cases(suite.path / "one.xml") == gate_cases(suite.path / "two.xml")
    assert len(gate_cases(suite.path / "two.xml")) == 4
    holding = run(suite, "-n", "2", "--bench-exit-on-gates")
    holding.assert_outcomes(passed=10, failed=2)
    assert holding.ret == 0
