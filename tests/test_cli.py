"""The bench command validates suites and rebuilds reports without pytest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_plugin.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_validate_bundled_suites_finds_no_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(REPO / "suites")]) == 0
    assert "capitals.yaml: 16 cases, 0 with problems" in capsys.readouterr().out


def test_validate_reports_broken_suite_with_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.yaml").write_text("models:\n  a: {provider: echo}\ntasks:\n  - {id: t, promt: x}\n")
    assert main(["validate", str(tmp_path)]) == 1
    assert "bad.yaml:4: tasks[0].promt: unknown key 'promt'" in capsys.readouterr().err


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
