"""The bundled conversation suites run offline and go through every path.

The stop sequence, each command and each limit, invitations, templates with placeholders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

SUITES = Path(__file__).resolve().parents[2] / "suites"


def run_bundled(pytester: pytest.Pytester, name: str, **outcomes: int) -> dict[str, dict[str, Any]]:
    shutil.copytree(SUITES / name, pytester.path / "suites" / name)
    pytester.runpytest(f"suites/{name}", "-p", "no:cacheprovider").assert_outcomes(**outcomes)
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r for line in lines}


def test_universal_backrooms_runs_its_seven_templates_and_cli_ends_with_the_stop_sequence(
    pytester: pytest.Pytester,
) -> None:
    found = run_bundled(pytester, "universal_backrooms", passed=7)
    templates = ["cli", "student", "science", "fugue", "gallery", "ethics", "cli_with_world_interface"]
    assert sorted(found) == [f"{t}[sim-run1]" for t in sorted(templates)]
    world = found["cli_with_world_interface[sim-run1]"]["conversation"]
    assert [p["model"] for p in world["participants"]] == ["sim", "world"]  # the stand-in world served seat 2
    cli = found["cli[sim-run1]"]["conversation"]
    assert cli["ended"] == {"reason": "stop_sequence", "by": "Sim 1", "round": 2,
                            "detail": "Sim 1 has ended the conversation with ^C^C."}
    speakers = [e["speaker"] for e in cli["entries"] if e["kind"] == "message"]
    assert speakers == ["Sim 1", "Sim 2", "Sim 1"]  # Sim 2 never speaks in round 2
    first = cli["participants"][0]
    assert first["system"] == "" and "Hello Sim 1" in first["context"][0]["content"]
    assert first["context"][-1]["content"].endswith("simulator@scripted:~/$")  # {lm2_company}
    for name in ("student", "science", "fugue", "gallery", "ethics"):
        assert found[f"{name}[sim-run1]"]["conversation"]["ended"]["reason"] == "max_turns"
    ethics = found["ethics[sim-run1]"]["conversation"]["participants"]
    assert [m["role"] for m in ethics[0]["context"]] == ["user", "assistant", "user"]
    assert [m["role"] for m in ethics[1]["context"]] == ["assistant", "user", "assistant"]


def test_backrooms_rotates_the_model_under_test_and_exercises_every_command(pytester: pytest.Pytester) -> None:
    found = run_bundled(pytester, "backrooms", passed=3)
    assert sorted(found) == ["classic[alpha-run1]", "classic[beta-run1]", "classic[gamma-run1]"]
    for record in found.values():
        conversation = record["conversation"]
        seats = [p["model"] for p in conversation["participants"]]
        assert seats[0] == record["model"] and seats[3] == "delta" and len(set(seats)) == 4
        outcomes = {(e["event"], e["ok"]) for e in conversation["entries"] if e["kind"] == "event"}
        assert outcomes >= {
            ("temperature", True), ("temperature", False), ("prompt", True), ("prompt", False),
            ("mute_self", True), ("skip", True), ("add_ai", True), ("add_ai", False), ("join", True), ("end", True),
        }
        failures = [e["content"] for e in conversation["entries"] if e["kind"] == "event" and e["ok"] is False]
        assert any("has used !temperature 1 time, the limit" in text for text in failures)
        assert any("the conversation is full: 4 participants, at most 4" in text for text in failures)
        assert record["composite"] == pytest.approx(0.3 + 0.7 * 0.78)
        markdown = (
            pytester.path / "bench-results" / "conversations" / "backrooms"
            / f"{record['task']}[{record['model']}-run1].md"
        )
        assert "> *event (failed):*" in markdown.read_text()
