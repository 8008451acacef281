"""The bundled agent_tasks suite runs offline.

The careful agent passes every task, the sloppy one fails every task, and between them they go through every
path (tool failures of each kind, recovery, a refusal, gated follow-ups, a budget stop, the judge gate).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

SUITE = Path(__file__).resolve().parents[2] / "suites" / "agent_tasks"


def run_bundled(pytester: pytest.Pytester, *args: str, **outcomes: int) -> dict[str, dict[str, Any]]:
    shutil.copytree(SUITE, pytester.path / "suites" / "agent_tasks")
    pytester.runpytest("suites/agent_tasks", "-p", "no:cacheprovider", *args).assert_outcomes(**outcomes)
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r for line in lines}


def components(record: dict[str, Any]) -> dict[str, float]:
    return {c["name"]: c["value"] for c in record["scores"]["components"]}


def test_careful_agent_passes_nine_tasks_over_three_tiers(pytester: pytest.Pytester) -> None:
    found = run_bundled(pytester, passed=9)
    assert Counter(r["tags"][0] for r in found.values()) == {"tier=t1": 3, "tier=t2": 3, "tier=t3": 3}
    for record in found.values():
        assert record["scores"]["composite_detail"].startswith("0.4*C + 0.3*T + 0.2*B + 0.1*J = ")
        assert components(record)["C"] == 1.0
    trip = found["t2-trip-weather[careful-run1]"]["agent"]["tool_calls"]
    assert [(c["name"], c["ok"]) for c in trip[:3]] == [
        ("get_forecast", False), ("get_forecast", True), ("get_forecast", True),
    ]
    deploy = found["t3-impossible-deploy[careful-run1]"]
    assert deploy["agent"]["tool_calls"][-1]["error"] == "'kubectl' is not allowed; programs you may run: python3, ls"
    followup = found["t3-csv-followup[careful-run1]"]["turns"]
    assert [t["skipped"] for t in followup] == [False, False, True]
    table = (pytester.path / "bench-results" / "agent_tasks.csv").read_text().splitlines()
    assert table[0] == "model,tier,runs,C,T,B,J" and len(table) == 4


def test_sloppy_agent_fails_every_task_for_the_reasons_recorded(pytester: pytest.Pytester) -> None:
    found = run_bundled(pytester, "--bench-models", "careful,sloppy", passed=9, failed=9)
    sloppy = {key.split("[")[0]: r for key, r in found.items() if "[sloppy" in key}
    for record in sloppy.values():
        detail = record["scores"]["composite_detail"]
        assert (detail.endswith("J dropped: gate C >= 0.9999 not met")
                and detail.startswith("(0.4*C + 0.3*T + 0.2*B) / 0.9"))
    errors = [c["error"] for r in sloppy.values() for c in r["agent"]["tool_calls"] if not c["ok"]]
    kinds = {"outside the workspace", "timed out after 2 s", "'content' is a required property",
             "is not a valid regular expression", "there is no tool named 'get_weather'", "'rm' is not allowed"}
    assert {kind for kind in kinds if any(kind in e for e in errors)} == kinds
    assert sloppy["t3-log-cleanup"]["agent"]["budget"]["stopped"] == "max_steps: stopped after 6 model calls"
    assert components(sloppy["t3-log-cleanup"])["B"] == 0.0
    assert [t["skipped"] for t in sloppy["t3-csv-followup"]["turns"]] == [False, True, False]
    assert components(sloppy["t3-impossible-deploy"])["C"] == 0.0
    for task, record in sloppy.items():
        careful = found[f"{task}[careful-run1]"]
        assert record["composite"] < careful["composite"] - 0.3, task
