"""The bench command validates suites and rebuilds reports without pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench_plugin.cli import CLOSED_PIPE_EXIT, main

REPO = Path(__file__).resolve().parents[1]


def test_validate_bundled_suites_finds_no_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(REPO / "suites")]) == 0
    assert "capitals.yaml: 16 cases, 0 with problems" in capsys.readouterr().out


def test_validate_reports_broken_suite_with_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.yaml").write_text("models:\n  a: {provider: echo}\ntasks:\n  - {id: t, promt: x}\n")
    assert main(["validate", str(tmp_path)]) == 1
    assert "bad.yaml:4: tasks[0].promt: unknown key 'promt'" in capsys.readouterr().err


def test_validate_names_a_paid_model_without_a_price_and_no_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "priced.yaml").write_text("""\
providers:
  paid: {type: openai_compatible, base_url: 'https://api.example.com/v1'}
  openai: {type: openai_compatible, base_url: 'https://api.openai.com/v1'}
  local: {type: openai_compatible, base_url: 'http://127.0.0.1:9/v1'}
models:
  new: {provider: paid, id: brand-new-model}
  declared: {provider: paid, id: brand-new-model, pricing: {input_per_mtok: 1, output_per_mtok: 2}}
  known: {provider: openai, id: gpt-4o}
  mine: {provider: local, id: llama}
tasks:
  - {id: t, prompt: hi}
scorers:
  - {type: contains, value: hi}
""")
    assert main(["validate", str(tmp_path)]) == 0  # a note, not a problem: the run works
    out = capsys.readouterr().out
    assert "priced.yaml: 4 cases, 0 with problems" in out
    notes = [line for line in out.splitlines() if ": note: " in line]
    assert len(notes) == 1 and notes[0].endswith(
        "priced.yaml: note: model new: no known price for 'brand-new-model' at https://api.example.com/v1; declare "
        "pricing: for the model in the suite (its cost stays unknown, and a --bench-budget-usd run stops at its "
        "first call)")


def test_report_rebuilds_markdown_from_results(tmp_path: Path) -> None:
    record = {"nodeid": "s.yaml::t[m-run1]", "suite": "s", "path": "s.yaml", "task": "t", "model": "m",
              "model_id": "m", "model_label": "m", "provider": "echo", "run": 1, "status": "passed",
              "composite": 1.0, "scores": {"components": [{"name": "C", "value": 1.0}]}}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    assert main(["report", str(tmp_path / "results.jsonl")]) == 0
    assert "| m | 1 | 100.0% | 1.0000 | 1.0000 |" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "summary.json").read_text())["totals"]["passed"] == 1


def test_schema_prints_the_suite_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"].startswith("bench_plugin suite")


def test_report_computes_the_suite_aggregates_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "s.yaml").write_text(
        "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"
        "scorers:\n  - {name: C, type: contains, value: hi}\n"
        "aggregates:\n  tables:\n    - {name: c, by: [model], csv: c.csv, columns: [{name: n, fn: count}, "
        "{name: mean_c, fn: mean, of: C}]}\n"
    )
    record = {"nodeid": "s.yaml::t[m-run1]", "suite": "s", "path": "s.yaml", "task": "t", "model": "m",
              "model_id": "m", "model_label": "m", "provider": "echo", "run": 1, "status": "passed",
              "composite": 1.0, "scores": {"components": [{"name": "C", "value": 1.0}]}}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    monkeypatch.chdir(tmp_path)  # suite paths in records are relative to where pytest ran
    assert main(["report", "results.jsonl", "-o", "out"]) == 0
    assert (tmp_path / "out" / "c.csv").read_bytes() == b"model,n,mean_c\r\nm,1,1.0000\r\n"


def case_record(task: str, model: str, status: str = "passed", composite: float | None = 1.0) -> dict[str, object]:
    return {"nodeid": f"s.yaml::{task}[{model}-run1]", "suite": "s", "path": "s.yaml", "task": task, "model": model,
            "model_id": model, "model_label": model, "provider": "echo", "run": 1, "status": status,
            "composite": composite, "scores": {"components": [{"name": "C", "value": composite}]}}


def write_results(path: Path, records: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_report_reads_several_result_sets_and_counts_a_case_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    first = write_results(tmp_path / "a.jsonl", [case_record("t1", "m"), case_record("t2", "m", "failed", 0.0)])
    # a re-run of t2 and the same t1 again: t2's later reading replaces the first
    second = write_results(tmp_path / "b.jsonl", [case_record("t1", "m"), case_record("t2", "m")])
    assert main(["report", str(first), str(second), str(second), "-o", str(tmp_path / "out")]) == 0
    totals = json.loads((tmp_path / "out" / "summary.json").read_text())["totals"]
    assert (totals["passed"], totals["failed"]) == (2, 0)
    assert "4 duplicate records left out" in capsys.readouterr().err


def test_report_on_shards_equals_report_on_their_merge(tmp_path: Path) -> None:
    records = [case_record(f"t{i}", model, composite=i / 4) for i in range(4) for model in ("m", "n")]
    shards = [write_results(tmp_path / f"shard{i}" / "results.jsonl", records[i::2]) for i in range(2)]
    merged = write_results(tmp_path / "merged" / "results.jsonl", records)
    assert main(["report", *map(str, shards), "-o", str(tmp_path / "from-shards")]) == 0
    assert main(["report", str(merged), *map(str, shards), "-o", str(tmp_path / "from-merge")]) == 0
    for name in ("report.md", "summary.json"):
        assert (tmp_path / "from-shards" / name).read_text() == (tmp_path / "from-merge" / name).read_text(), name


def test_report_asks_where_to_write_when_results_are_in_different_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    shards = [write_results(tmp_path / f"shard{i}" / "results.jsonl", [case_record(f"t{i}", "m")]) for i in range(2)]
    assert main(["report", *map(str, shards)]) == 2
    assert "choose where the reports go with -o FOLDER" in capsys.readouterr().err
    assert not (tmp_path / "shard0" / "report.md").exists()


def test_report_names_a_results_file_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text('{"nodeid": "x"}\n[1, 2]\n{"nodeid": "y"}\n')
    assert main(["report", str(bad), str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    # lines that are not case records are left out, each named, and counted (issue 29)
    assert main(["report", str(bad), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"{bad}:1: incomplete case record" in err and f"{bad}:2: expected a case record" in err
    assert f"{bad} holds no case" in err and "3 records left out" in err


def test_audit_prints_the_audit_of_stored_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = case_record("t1", "m", "error", None) | {
        "scores": None, "error": {"kind": "http_500", "type": "TransientProviderError", "message": "HTTP 500"}}
    results = write_results(tmp_path / "results.jsonl", [broken, case_record("t2", "m")])
    assert main(["audit", str(results), str(results)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# Audit\n") and "`s.yaml::t1[m-run1]`" in out.out
    assert "2 duplicate records left out" in out.err
    assert not (tmp_path / "report.md").exists()  # the audit writes nothing


@pytest.mark.parametrize("with_results", [True, False], ids=["results-and-journal", "journal-only"])
def test_merge_of_a_killed_named_run_reads_its_journals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], with_results: bool
) -> None:
    """A CI shard killed by a timeout: the cases it finished are in its journal, not yet in results.jsonl."""
    run = tmp_path / "runs" / "nightly"
    if with_results:
        write_results(run / "results.jsonl", [case_record("t1", "m"), case_record("t2", "m", "error", None)])
    # the journal of the killed session: t2 re-run (--bench-retry-errors) and t3 finished
    write_results(run / "results.jsonl.4242.journal", [case_record("t2", "m"), case_record("t3", "m")])
    assert main(["merge", str(run), "-o", str(tmp_path / "merged")]) == 0
    err = capsys.readouterr().err
    assert "also read results.jsonl.4242.journal: cases a session of the run finished before it was stopped" in err
    merged = [json.loads(line) for line in (tmp_path / "merged" / "results.jsonl").read_text().splitlines()]
    expected = ["t1", "t2", "t3"] if with_results else ["t2", "t3"]
    assert sorted(r["task"] for r in merged) == expected
    assert {r["task"]: r["status"] for r in merged}["t2"] == "passed"  # the journal's reading is the newer


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    """``bench schema | head -c 200``: the reader is gone before the schema is written; no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE, as after head has read its 200 bytes
    try:
        done = subprocess.run([sys.executable, "-c", "import sys; from bench_plugin.cli import main; "
                               "sys.exit(main(['schema']))"], stdout=write_end, stderr=subprocess.PIPE, check=False)
    finally:
        os.close(write_end)
    assert done.stderr.decode() == ""
    assert done.returncode == CLOSED_PIPE_EXIT


def test_validate_says_a_path_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nosuch")]) == 2
    assert f"bench validate: {tmp_path / 'nosuch'} does not exist" in capsys.readouterr().err


def test_validate_warns_of_a_key_variable_that_is_not_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run would fail every call with ``auth``; validate says so before it, without calling any model."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env of the project's is read
    (tmp_path / "s.yaml").write_text("models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n")
    assert main(["validate", str(tmp_path), "--bench-models", "openai:gpt-4o-mini"]) == 0
    err = capsys.readouterr().err
    assert "warning: model openai:gpt-4o-mini: environment variable OPENAI_API_KEY is not set" in err
