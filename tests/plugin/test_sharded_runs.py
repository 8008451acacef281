"""--bench-shard i/n splits the cases across machines; bench merge puts the shards' results back together."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.cli import main as bench
from suites import CAPITALS  # type: ignore[import-not-found]

VOLATILE = {"latency_s", "duration_s", "started_at", "elapsed_s", "mean_latency_s", "timestamp"}
SECONDS = re.compile(r"\b\d+\.\d+ s\b")  # latency cells of report.md

COUNTING = """\
suite: counting
models:
  parrot: {provider: echo}
  mimic: {provider: echo}
matrix:
  n: NUMBERS
tasks:
  - {id: "say-{{ n }}", prompt: "Say {{ n }}"}
scorers:
  - {type: contains, value: "1"}
""".replace("NUMBERS", str(list(range(30))))


@pytest.fixture
def suites(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS, "suites/counting": COUNTING})
    return pytester


def without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def records(folder: Path) -> list[Any]:
    return [without_timing(json.loads(line)) for line in (folder / "results.jsonl").read_text().splitlines()]


def nodeids(folder: Path) -> list[str]:
    return [record["nodeid"] for record in records(folder)]


def reports(folder: Path) -> tuple[Any, str]:
    summary = without_timing(json.loads((folder / "summary.json").read_text()))
    return summary, SECONDS.sub("- s", (folder / "report.md").read_text())


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "--bench-html", "off", *args)


def test_three_shards_run_every_case_once_and_their_merge_is_the_single_run(suites: pytest.Pytester) -> None:
    run(suites, "--bench-runs", "2", "--bench-output", "single").assert_outcomes(passed=52, failed=76)
    single = nodeids(suites.path / "single")
    shards = []
    for i in (1, 2, 3):
        result = run(suites, "--bench-runs", "2", "--bench-shard", f"{i}/3", "--bench-output", f"shard{i}")
        shards.append(nodeids(suites.path / f"shard{i}"))
        result.stdout.fnmatch_lines([f"*{128 - len(shards[-1])} deselected*"])
    assert sorted(nodeid for shard in shards for nodeid in shard) == sorted(single)  # each case exactly once
    assert all(len(shard) > 20 for shard in shards)
    run(suites, "--bench-runs", "2", "--bench-shard", "2/3", "--bench-output", "again")
    assert nodeids(suites.path / "again") == shards[1]  # deterministic

    assert bench(["merge", "shard1/results.jsonl", "shard2/results.jsonl", "shard3/results.jsonl", "-o", "merged"]) == 0
    merged = suites.path / "merged"
    assert records(merged) == records(suites.path / "single")
    assert reports(merged) == reports(suites.path / "single")


def test_merge_leaves_out_duplicates_each_case_once(
    suites: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    run(suites, "--bench-output", "single")
    for i in (1, 2):
        run(suites, "--bench-shard", f"{i}/2", "--bench-output", f"shard{i}")
    files = ["shard1/results.jsonl", "single/results.jsonl", "shard2/results.jsonl", "shard1/results.jsonl"]
    capsys.readouterr()
    assert bench(["merge", *files, "-o", "merged"]) == 0
    out, err = capsys.readouterr()
    assert records(suites.path / "merged") == records(suites.path / "single")
    assert reports(suites.path / "merged") == reports(suites.path / "single")
    assert f"{len(nodeids(suites.path / 'single')) + len(nodeids(suites.path / 'shard1'))} duplicate" in err
    assert "4 result sets, 64 cases" in out


def test_merge_into_one_of_its_inputs(suites: pytest.Pytester) -> None:
    run(suites, "--bench-output", "single")
    for i in (1, 2):
        run(suites, "--bench-shard", f"{i}/2", "--bench-output", f"shard{i}")
    assert bench(["merge", "shard1/results.jsonl", "shard2/results.jsonl", "-o", "shard1"]) == 0
    assert records(suites.path / "shard1") == records(suites.path / "single")


def test_a_case_keeps_its_shard_under_k_selection(suites: pytest.Pytester) -> None:
    run(suites, "--bench-shard", "2/3", "--bench-output", "whole")
    run(suites, "--bench-shard", "2/3", "-k", "parrot", "--bench-output", "parrot")
    whole = nodeids(suites.path / "whole")
    assert nodeids(suites.path / "parrot") == [n for n in whole if "parrot" in n]


def test_ordinary_tests_run_on_every_shard(suites: pytest.Pytester) -> None:
    suites.makepyfile(test_plain="def test_one():\n    pass\n")
    for i in (1, 2):
        result = suites.runpytest("suites", "test_plain.py", "--bench-shard", f"{i}/2", "-v", "-p", "no:cacheprovider")
        result.stdout.fnmatch_lines(["*test_plain.py::test_one PASSED*"])


@pytest.mark.parametrize("value", ["4/3", "0/2", "two"])
def test_a_bad_shard_is_a_usage_error(suites: pytest.Pytester, value: str) -> None:
    result = run(suites, "--bench-shard", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--bench-shard: expected I/N with 1 <= I <= N, such as 2/3, got '{value}'*"])


@pytest.mark.slow
def test_a_shard_is_the_same_under_xdist(suites: pytest.Pytester) -> None:
    run(suites, "--bench-shard", "3/3", "--bench-output", "serial")
    result = suites.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--bench-html", "off", "-n", "2",
                                         "--bench-shard", "3/3", "--bench-output", "xdist")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert records(suites.path / "xdist") == records(suites.path / "serial")


def test_merge_of_a_missing_file_says_so(suites: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench(["merge", "nowhere/results.jsonl", "-o", "merged"]) == 2
    assert "nowhere/results.jsonl" in capsys.readouterr().err
    assert not (suites.path / "merged").exists()


def test_merge_says_what_it_leaves_out_and_takes_a_runs_folder(
    suites: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A torn last line and an empty file were dropped in silence; a folder was "[Errno 21] Is a directory"."""
    run(suites, "--bench-shard", "1/2", "--bench-output", "one")
    run(suites, "--bench-shard", "2/2", "--bench-output", "two")
    torn = suites.path / "two" / "results.jsonl"
    whole = len(nodeids(suites.path / "two")) - 1
    torn.write_bytes(torn.read_bytes()[:-40])
    (suites.path / "empty.jsonl").write_text("")
    assert bench(["merge", "one", str(torn), "empty.jsonl", "-o", "merged"]) == 0
    err = capsys.readouterr().err
    assert f"{torn}: its last line is cut off (a run killed while writing it): that case is left out" in err
    assert "empty.jsonl holds no case" in err
    assert len(nodeids(suites.path / "merged")) == len(nodeids(suites.path / "one")) + whole
    assert bench(["merge", "suites", "-o", "again"]) == 2
    assert "suites is a folder without a results.jsonl" in capsys.readouterr().err


def test_a_record_of_the_wrong_kind_is_named_with_its_line(
    suites: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid JSON line whose composite was text ended bench merge, and a resumed run, in a Python traceback.

    bench merge leaves that line out, saying so and counting it (issue 29); the other cases are merged.
    """
    run(suites, "--bench-output", "out")
    path = suites.path / "out" / "results.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = json.dumps({**json.loads(lines[2]), "composite": "high"})
    path.write_text("\n".join(lines) + "\n")
    assert bench(["merge", str(path), "-o", "merged"]) == 0
    expected = "not a case record this version can read: 'composite' should be a number or null, got 'high'"
    err = capsys.readouterr().err
    assert f"{path}:3: {expected}; that line is left out" in err and "1 record left out" in err
    assert len(nodeids(suites.path / "merged")) == len(lines) - 1


def test_a_shards_report_expects_of_each_model_the_cases_it_was_selected_for(suites: pytest.Pytester) -> None:
    """Each shard's report counted the cases of other shards that another model had as missing: 37 / 78."""
    run(suites, "--bench-shard", "1/2", "--bench-output", "one")
    summary = json.loads((suites.path / "one" / "summary.json").read_text())
    counting = next(suite for suite in summary["suites"] if suite["suite"] == "counting")
    ran = Counter(record["model"] for record in records(suites.path / "one") if "counting" in record["nodeid"])
    assert {row["model"]: row["expected"] for row in counting["models"]} == dict(ran)
    assert all(row["missing"] == 0 for row in counting["models"])
    assert "Normalised divides by each model's expected cases" in (suites.path / "one" / "report.md").read_text()
    # the merge of the shards expects every case of every model, as a single run does
    run(suites, "--bench-shard", "2/2", "--bench-output", "two")
    assert bench(["merge", "one/results.jsonl", "two/results.jsonl", "-o", "merged"]) == 0
    merged = json.loads((suites.path / "merged" / "summary.json").read_text())
    rows = next(suite for suite in merged["suites"] if suite["suite"] == "counting")["models"]
    assert {row["model"]: (row["expected"], row["missing"]) for row in rows} == {"parrot": (30, 0), "mimic": (30, 0)}
