"""No path comes from data: a record's suite, task or model name never picks where a file is written.

A results file is input (a colleague's, a shard, a CI artifact). Its ``suite`` names the pairwise CSV, and its
suite, task and model name a conversation's log; ``bench report`` and ``bench merge`` write them inside the
output folder whatever those names hold: ``../``, an absolute path, 150 characters, a NUL, a device name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.cli import main
from bench_plugin.core.safe_names import MAX_NAME_CHARS, safe_file_name

PAIRWISE = Path(__file__).parent / "golden" / "pairwise_two_cases.jsonl"
HOSTILE_NAMES = ["../../../elsewhere/victim", "/tmp/absolute-victim", "x" * 150, "nul\x00byte", "NUL", "CON.csv",
                 "..", ".", "", "a/../../b", "ünïcødé"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_name_becomes_one_bounded_file_name(name: str) -> None:
    safe = safe_file_name(name, ".csv")
    assert "/" not in safe and "\\" not in safe and "\x00" not in safe
    assert not safe.startswith(".") and len(safe) <= MAX_NAME_CHARS and safe.endswith(".csv")
    assert safe.split(".")[0].lower() not in {"nul", "con"}


def test_safe_names_are_kept_and_changed_ones_stay_apart() -> None:
    assert safe_file_name("mt_bench", ".csv") == "mt_bench.csv"
    assert safe_file_name("task[model-run1]", ".md") == "task[model-run1].md"
    assert safe_file_name("a/b") != safe_file_name("a_b")  # the digest tells them apart
    assert safe_file_name("y" * 150) != safe_file_name("y" * 151)


def hostile_records(suite: str, task: str = "writing-81", model: str | None = None) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in PAIRWISE.read_text(encoding="utf-8").splitlines()]
    for record in records:
        record["suite"] = suite
        record["task"] = task
        if model is not None:
            record["model"] = model
    return records


def written_files(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize("command", ["report", "merge"])
@pytest.mark.parametrize("suite", ["../../../elsewhere/victim", "ABSOLUTE", "s" * 150, "nul\x00byte", "NUL"])
def test_bench_report_and_merge_write_only_inside_the_output_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str, suite: str
) -> None:
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    suite = str(tmp_path / "victim") if suite == "ABSOLUTE" else suite
    results = work / "in.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in hostile_records(suite)), encoding="utf-8")
    assert main([command, str(results), "-o", "out"]) == 0, capsys.readouterr()
    assert written_files(tmp_path) - {"a/b/c/in.jsonl"} == {f"a/b/c/out/{name}" for name in written_files(work / "out")}
    assert any(name.endswith(".csv") for name in written_files(work / "out"))  # the pairwise table, inside


def test_conversation_logs_of_hostile_names_stay_in_the_conversations_folder(tmp_path: Path) -> None:
    from bench_plugin.report.conversation_log import log_paths

    folder = tmp_path / "out" / "conversations"
    names = [("../../x", "../y", "/etc/z"), ("s" * 150, "t" * 150, "m" * 150), ("NUL", "a\x00", "..")]
    for suite, task, model in names:
        markdown, data = log_paths({"suite": suite, "task": task, "model": model, "run": 1}, folder)
        for path in (markdown, data):
            assert path.parent.parent == folder and len(path.name) <= MAX_NAME_CHARS
            assert len(path.parent.name) <= MAX_NAME_CHARS and not path.parent.name.startswith(".")
