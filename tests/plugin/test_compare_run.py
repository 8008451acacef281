"""bench compare and --bench-baseline end to end: scripted runs compared, exit statuses, bad input, -n 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.cli import main

TASKS = 40


def suite(worse: str = "none") -> str:
    """``TASKS`` cases that all pass (``pass_threshold: 0``); the cases whose number matches ``worse`` score 0.5."""
    return (
        "models:\n  bot:\n    provider: scripted\n    script:\n"
        f"      - {{regex: '^Say ({worse})$', reply: 'ok'}}\n"
        "      - {reply: 'ok!'}\n"
        f"matrix:\n  n: {list(range(1, TASKS + 1))}\n"
        "pass_threshold: 0\n"
        "tasks:\n  - {id: 'q-{{ n }}', prompt: 'Say {{ n }}'}\n"
        "scorers:\n  - {type: contains, value: ok}\n  - {type: contains, value: '!'}\n"
    )


WORSE = "[1-9]|1[0-2]"  # 12 of 40 cases lose half their score: the mean drops 0.15


def run(pytester: pytest.Pytester, text: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"suites/demo": text})
    return pytester.runpytest("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "--bench-html", "off", *args)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_bench_compare_exits_1_on_a_regression_and_writes_both_files(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    run(pytester, suite(), "--bench-output", "base").assert_outcomes(passed=TASKS)
    run(pytester, suite(WORSE), "--bench-output", "now").assert_outcomes(passed=TASKS)
    capsys.readouterr()
    assert main(["compare", "base", "now/results.jsonl"]) == 1
    out = capsys.readouterr().out
    assert "compare: regressed (1 regressed of 1 suite x model comparison; 40 cases compared)" in out
    assert "demo bot: regressed: mean score -0.1500 [" in out
    comparison = read_json(pytester.path / "now" / "compare.json")
    (row,) = comparison["comparisons"]
    assert (row["verdict"], row["score"]["verdict"], row["cases"]) == ("regressed", "regressed", TASKS)
    assert row["pass_rate"]["difference"] == 0
    assert (pytester.path / "now" / "compare.md").read_text().startswith("## Comparison with the baseline: regressed")


def test_bench_compare_of_a_run_with_itself_exits_0_into_the_folder_asked_for(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    run(pytester, suite(), "--bench-output", "base")
    assert main(["compare", "base", "base", "-o", "out", "--margin", "0.05", "--confidence", "0.9"]) == 0
    comparison = read_json(pytester.path / "out" / "compare.json")
    assert comparison["verdict"] != "regressed" and comparison["matching"]["compared"] == TASKS
    assert comparison["settings"]["margin"] == 0.05 and comparison["settings"]["confidence"] == 0.9


def test_a_named_run_is_a_side_by_its_name(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    run(pytester, suite(), "--bench-run", "main")
    run(pytester, suite(WORSE))
    assert main(["compare", "main", "bench-results"]) == 1
    assert read_json(pytester.path / "bench-results" / "compare.json")["baseline"]["source"] == str(
        Path("bench-results", "runs", "main", "results.jsonl"))
    # a named run started afresh is compared with what it held before
    result = run(pytester, suite(WORSE), "--bench-run", "main", "--bench-fresh", "--bench-baseline", "main")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert read_json(pytester.path / "bench-results" / "runs" / "main" / "compare.json")["verdict"] == "regressed"


@pytest.mark.parametrize(("given", "expected"), [
    (["compare", "missing", "now"], "bench compare: missing: no such results file or folder, nor a named run in "
                                    "bench-results/runs"),
    (["compare", "broken.jsonl", "now"], "bench: broken.jsonl:1: expected a case record"),
    (["compare", "other/results.jsonl", "now"], "bench compare: the baseline other/results.jsonl has no case of "
                                                "now/results.jsonl: the baseline has suite suites/other.yaml"),
    (["compare", "now", "now", "--margin", "2"], "bench compare: margin: expected a number from 0 to below 1"),
])
def test_bench_compare_exits_2_on_input_it_cannot_compare_and_says_why(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], given: list[str], expected: str
) -> None:
    run(pytester, suite(), "--bench-output", "now")
    pytester.path.joinpath("broken.jsonl").write_text('{"no": "nodeid"}\n{"x": 1}\n')
    pytester.mkdir("other")
    records = (pytester.path / "now" / "results.jsonl").read_text().replace("suites/demo.yaml", "suites/other.yaml")
    pytester.path.joinpath("other", "results.jsonl").write_text(records)
    capsys.readouterr()
    assert main(given) == 2
    captured = capsys.readouterr()
    assert expected in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_a_baseline_from_another_version_of_the_suite_is_refused_with_what_changed(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    run(pytester, suite(), "--bench-output", "base")
    run(pytester, suite().replace("'Say {{ n }}'", "'Tell {{ n }}'"), "--bench-output", "now")
    capsys.readouterr()
    assert main(["compare", "base", "now"]) == 2
    err = capsys.readouterr().err
    assert "the baseline base/results.jsonl is from another version of the suite: each of the 40 cases it shares " \
           "with now/results.jsonl asked or was scored otherwise (prompt in 40; e.g. suites/demo.yaml::q-1" in err


def test_a_run_with_a_baseline_fails_on_a_regression_though_every_case_passed(pytester: pytest.Pytester) -> None:
    run(pytester, suite(), "--bench-output", "base")
    pytester.makeini("[pytest]\nbench_baseline = base\n")
    result = run(pytester, suite(WORSE))
    result.assert_outcomes(passed=TASKS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*results: *bench-results*", "compare: regressed (1 regressed of 1 *",
                                 "  demo bot: regressed: mean score -0.1500 [[]*",
                                 "comparison: *compare.md, compare.json"])
    assert read_json(pytester.path / "bench-results" / "compare.json")["verdict"] == "regressed"


def test_with_exit_on_gates_the_gates_alone_decide_though_the_comparison_regressed(pytester: pytest.Pytester) -> None:
    run(pytester, suite(), "--bench-output", "base")
    holding = run(pytester, suite(WORSE), "--bench-baseline", "base", "--bench-exit-on-gates",
                  "--bench-gate", "pass_rate>=0.9")
    holding.stdout.fnmatch_lines(["compare: regressed (1 regressed of 1 *"])
    assert holding.ret == pytest.ExitCode.OK
    broken = run(pytester, suite(WORSE), "--bench-baseline", "base", "--bench-exit-on-gates",
                 "--bench-gate", "{figure: mean, max_drop: 0.02}")
    assert broken.ret == pytest.ExitCode.TESTS_FAILED


def test_a_run_compared_with_its_own_folder_reads_the_baseline_before_writing_over_it(
    pytester: pytest.Pytester,
) -> None:
    run(pytester, suite())
    result = run(pytester, suite(WORSE), "--bench-baseline", "bench-results")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    comparison = read_json(pytester.path / "bench-results" / "compare.json")
    assert comparison["comparisons"][0]["score"]["baseline"] == 1.0


def test_a_baseline_that_cannot_be_compared_ends_the_run_with_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, suite(), "--bench-baseline", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-baseline: nowhere: no such results file or folder, nor a named run in *"])
    run(pytester, suite(), "--bench-output", "base")
    result = run(pytester, suite().replace("'Say {{ n }}'", "'Tell {{ n }}'"), "--bench-baseline", "base")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["bench compare: the baseline *base*results.jsonl is from another version of the suite*"])
    assert not (pytester.path / "bench-results" / "compare.json").exists()


def without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_timing(item) for key, item in value.items() if key != "latency_s"}
    if isinstance(value, list):
        return [without_timing(item) for item in value]
    return value


@pytest.mark.slow
def test_two_workers_give_the_same_comparison_as_one_process(pytester: pytest.Pytester) -> None:
    repeated = suite(WORSE).replace("pass_threshold: 0\n", "pass_threshold: 0\nruns: 2\n")
    run(pytester, suite().replace("pass_threshold: 0\n", "pass_threshold: 0\nruns: 2\n"), "--bench-output", "base")
    run(pytester, repeated, "--bench-baseline", "base").assert_outcomes(passed=2 * TASKS)
    alone = (pytester.path / "bench-results" / "compare.json").read_text()
    run(pytester, repeated, "--bench-baseline", "base", "-n", "2").assert_outcomes(passed=2 * TASKS)
    shared = (pytester.path / "bench-results" / "compare.json").read_text()
    assert without_timing(json.loads(shared)) == without_timing(json.loads(alone))
    assert json.loads(alone)["comparisons"][0]["tasks"][0]["cases"] == 2
