"""The bundled BackroomsBench runs offline through every judging path.

A 3-judge panel with the 100-point rubric, an unreadable report, judges who disagree, fenced and incomplete
consensus JSON, averaged scores per model, and an Elo leaderboard that carries over from one run to the next.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.cli import main as bench

SUITES = Path(__file__).resolve().parents[2] / "suites"
CATEGORIES = ["Philosophical Depth", "Linguistic Creativity", "Emergent Themes", "Authentic Voice",
              "Collaborative Meaning-Making"]


def run(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    if not (pytester.path / "suites" / "backroomsbench").exists():
        shutil.copytree(SUITES / "backroomsbench", pytester.path / "suites" / "backroomsbench")
    result = pytester.runpytest("suites/backroomsbench", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(
        ["*results: *(results.jsonl, report.md, summary.json, dashboard.html, backroomsbench/LEADERBOARD.md*"])
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r["scores"]["components"][0] for line in lines}


def board(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (pytester.path / "bench-results" / "backroomsbench" / "leaderboard.json").read_text()
    )
    return data


def test_backroomsbench_judges_every_session_with_a_panel_and_a_consensus(pytester: pytest.Pytester) -> None:
    found = run(pytester)
    alpha = found["classic[alpha-run1]"]
    judges = alpha["panel"]["judges"]
    assert [judge["label"] for judge in judges] == ["Claude Opus 4.5", "Gemini 3 Pro", "GPT 5.1"]
    assert list(judges[0]["categories"]) == sorted(CATEGORIES)  # results.jsonl sorts keys; the panel keeps the order
    assert alpha["panel"]["categories"] == CATEGORIES
    assert judges[0]["categories"]["Philosophical Depth"] == 21
    assert judges[0]["participants"] == {"Alpha": 88, "Beta": 74, "Gamma": 69}  # "**Alpha** (AI-1)" -> Alpha
    assert alpha["raw"] == 87.3 and alpha["value"] == 0.873  # the consensus: (88 + 84 + 90) / 3
    assert alpha["participants"] == {"Alpha": 87.3, "Beta": 68.0, "Gamma": 68.0}
    assert alpha["panel"]["consensus"]["data"]["verdict"] == "A room that listens to itself."

    # one judge's report cannot be read: left out of the consensus, which averages the other two
    gamma = found["museum[gamma-run1]"]
    gemini = gamma["panel"]["judges"][1]
    assert gemini["value"] is None and "no line mentions 'Individual Model Assessment'" in gemini["error"]
    assert gamma["panel"]["verdicts"] == 2 and gamma["raw"] == 75.5  # (77 + 74) / 2
    assert "## Report from Gemini 3 Pro" not in gamma["panel"]["consensus"]["output"]

    # the judges disagree about Beta in the classic room: 74, 78, 52
    beta = found["classic[beta-run1]"]
    assert beta["panel"]["spread"] == 26 and beta["panel"]["flagged"] is True
    assert "spread 26 > 15: judges disagree" in beta["detail"]

    # a consensus in a code fence is read; one without a required key leaves its case unscored
    assert found["classic[gamma-run1]"]["panel"]["consensus"]["output"].startswith("```json")
    assert found["classic[gamma-run1]"]["raw"] == 68.0
    unscored = found["museum[beta-run1]"]
    assert unscored["value"] is None and unscored["error"] == "the consensus JSON lacks the required key(s) verdict"

    report = (pytester.path / "bench-results" / "report.md").read_text()
    assert "| Alpha | 2 | 79.3000 | 87.3000 | 71.3000 |" in report  # averaged score per model
    assert ("3 judges (Claude Opus 4.5, Gemini 3 Pro, GPT 5.1) over 6 cases; 1 report without a verdict; "
            "spread of the verdicts: mean 8.833, largest 26; 1 over max_spread 15.") in report
    assert "- `suites/backroomsbench/backroomsbench.yaml::classic[beta-run1]`: spread 26" in report
    assert "| Philosophical Depth | " in report and "Krippendorff's α (interval)" in report  # noqa: RUF001 - the report prints a Greek alpha
    assert "5 sessions added this run, 5 in all; K=32, start 1500, expected scores from session_scores." in report
    assert "museum[beta-run1]`: J: the consensus JSON lacks the required key(s) verdict" in report


def test_the_elo_leaderboard_carries_over_to_the_next_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(pytester)
    first = board(pytester)
    assert len(first["sessions"]) == 5  # the unscored session moves nobody
    # classic[alpha]: Alpha 87.3 beats 68.0 twice, E = 1/(1+10^(-19.3/400)) = 0.52772: 2 * 32 * 0.47228 = +30.2
    assert first["model_history"]["Alpha"][0]["elo_change"] == 30.2
    assert sum(first["elo_ratings"].values()) == pytest.approx(4500, abs=0.2)
    markdown = (pytester.path / "bench-results" / "backroomsbench" / "LEADERBOARD.md").read_text()
    assert markdown.startswith("# 🌀 BackroomsBench Elo Leaderboard\n\n*\"Measuring what can't be measured.\"*")
    assert "| 1 | 🥇 Alpha | 1528 |" in markdown and markdown.endswith("*Total sessions: 5*\n")

    run(pytester)
    second = board(pytester)
    assert len(second["sessions"]) == 10
    assert second["model_history"]["Alpha"][5]["elo_before"] == first["elo_ratings"]["Alpha"]
    assert second["elo_ratings"] != first["elo_ratings"]

    # rebuilding the reports of the last run does not count its sessions again
    monkeypatch.chdir(pytester.path)
    assert bench(["report", "bench-results/results.jsonl"]) == 0
    assert board(pytester) == second
