"""The Elo leaderboard of a suite: its spec, sessions from records, the files, and persistence across runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.report.leaderboard import (
    render_leaderboard,
    session_id,
    sessions_from_records,
    update_leaderboard,
)
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.leaderboard import (
    EloSettings,
    LeaderboardSpec,
    build_leaderboard,
    read_suite_leaderboards,
)
from bench_plugin.suite.loader import load_suite_text

SPEC = LeaderboardSpec(suite="bench", of="J", dir="bench", title="🌀 Bench Elo Leaderboard",
                       tagline="Measuring what can't be measured.")


def record(model: str, task: str, participants: dict[str, float] | None, *, run: int = 1, raw: float | None = None,
           status: str = "passed", started: str = "2025-12-03T10:15:00+00:00", response: str = "") -> CaseRecord:
    component: dict[str, Any] = {"name": "J", "value": None if raw is None else raw / 100, "raw": raw}
    if participants is not None:
        component["participants"] = participants
    return CaseRecord(nodeid=f"suites/bench.yaml::{task}[{model}-run{run}]", suite="bench", path="suites/bench.yaml",
                      task=task, model=model, model_id=model, model_label=model.title(), provider="scripted", run=run,
                      status=status, scores={"components": [component]}, started_at=started, response=response)


SESSION_1 = {"Claude Opus 4.5": 90, "Gemini 3 Pro": 94, "GPT 5.1": 89, "Grok 4": 88, "DeepSeek R1": 87}
SESSION_2 = {"Claude Opus 4.5": 70, "Gemini 3 Pro": 80}


def test_each_scored_case_with_participants_is_a_session() -> None:
    records = [
        record("opus", "classic", SESSION_1),
        record("gemini", "classic", SESSION_2),
        record("gpt", "classic", {"GPT 5.1": 80}),  # one participant: nothing to compare
        record("grok", "classic", SESSION_1, status="unscored"),  # the consensus failed: no session
    ]
    sessions = sessions_from_records(SPEC, records)
    assert [s["scores"] for s in sessions] == [SESSION_1, SESSION_2]
    assert sessions[0] == {"id": session_id("suites/bench.yaml::classic[opus-run1]", "2025-12-03T10:15:00+00:00",
                                            [records[0]]),
                           "timestamp": "2025-12-03T10:15:00+00:00", "scenario": "classic", "scores": SESSION_1}
    assert sessions[0]["id"].startswith("suites/bench.yaml::classic[opus-run1]@2025-12-03T10:15:00+00:00#")


def test_runs_in_the_same_second_are_told_apart_by_their_records() -> None:
    same_start = [record("opus", "classic", SESSION_1, response=answer) for answer in ("A", "B")]
    first, second = (sessions_from_records(SPEC, [one]) for one in same_start)
    assert first[0]["id"] != second[0]["id"]
    assert sessions_from_records(SPEC, [same_start[0]]) == first  # the same record gives the same id
    rejudged = record("opus", "classic", {**SESSION_1, "Grok 4": 86}, response="A")
    assert sessions_from_records(SPEC, [rejudged])[0]["id"] == first[0]["id"]  # other scores, the same session


def test_a_rejudged_run_rescores_its_sessions_instead_of_adding_them(tmp_path: Path) -> None:
    """Its records were new sessions: every re-judge counted the same cases again and moved the ratings."""
    runs = [[record("opus", "classic", SESSION_1, response="x")],
            [record("opus", "museum", SESSION_2, started="2025-12-04T09:00:00+00:00", response="y")]]
    for run in runs:
        update_leaderboard(SPEC, run, tmp_path)
    rescored = {**SESSION_1, "Grok 4": 99}
    update_leaderboard(SPEC, [record("opus", "classic", rescored, response="x")], tmp_path)
    saved = json.loads((tmp_path / "bench" / "leaderboard.json").read_text())
    assert [session["scores"] for session in saved["sessions"]] == [rescored, SESSION_2]
    fresh = tmp_path / "fresh"  # as if the first run had been judged so
    update_leaderboard(SPEC, [record("opus", "classic", rescored, response="x")], fresh)
    update_leaderboard(SPEC, runs[1], fresh)
    assert saved == json.loads((fresh / "bench" / "leaderboard.json").read_text())


def test_cases_of_one_task_and_run_make_a_session_by_model() -> None:
    spec = LeaderboardSpec(suite="bench", of="J", dir="bench", sessions="cases")
    records = [record("a", "q1", None, raw=80), record("b", "q1", None, raw=60), record("a", "q1", None, run=2, raw=50),
               record("b", "q1", None, run=2, raw=70), record("c", "q2", None, raw=90)]
    sessions = sessions_from_records(spec, records)
    assert [(s["scenario"], s["scores"]) for s in sessions] == [("q1", {"A": 80, "B": 60}), ("q1", {"A": 50, "B": 70})]


def test_the_leaderboard_is_kept_across_runs_and_a_rebuild_adds_nothing(tmp_path: Path) -> None:
    first = [record("opus", "classic", SESSION_1, started="2025-12-03T10:15:00+00:00")]
    summary = update_leaderboard(SPEC, first, tmp_path)
    saved = json.loads((tmp_path / "bench" / "leaderboard.json").read_text())
    assert saved["elo_ratings"]["Claude Opus 4.5"] == 1531.9
    assert summary["added"] == 1 and summary["total"] == 1
    assert summary["ratings"][0] == {"model": "Gemini 3 Pro", "elo": 1563.0, "change": 63.0, "sessions": 1}
    # the next run starts from the saved ratings
    second = [record("opus", "museum", SESSION_2, started="2025-12-04T09:00:00+00:00")]
    summary = update_leaderboard(SPEC, second, tmp_path)
    saved = json.loads((tmp_path / "bench" / "leaderboard.json").read_text())
    assert len(saved["sessions"]) == 2
    opus = saved["model_history"]["Claude Opus 4.5"]
    assert opus[1]["elo_before"] == 1531.9 and opus[1]["score"] == 70
    assert opus[1]["elo_after"] == round(1531.9 + opus[1]["elo_change"], 1)
    assert saved["elo_ratings"]["Grok 4"] == saved["model_history"]["Grok 4"][0]["elo_after"]  # not in session 2
    assert summary["added"] == 1 and summary["total"] == 2
    assert [row["change"] for row in summary["ratings"] if row["model"] == "Grok 4"] == [None]
    # rebuilding the second run's reports (bench report) finds its session already there
    again = update_leaderboard(SPEC, second, tmp_path)
    assert json.loads((tmp_path / "bench" / "leaderboard.json").read_text()) == saved
    assert again["added"] == 0 and again["total"] == 2  # it says so
    assert [(r["model"], r["elo"], r["sessions"]) for r in again["ratings"]] == \
        [(r["model"], r["elo"], r["sessions"]) for r in summary["ratings"]]
    assert {r["change"] for r in again["ratings"]} == {None}


def test_leaderboard_md_follows_backroomsbench() -> None:
    board = {
        "elo_ratings": {"A": 1531.9, "B": 1468.4, "C": 1500.1, "D": 1490.0},
        "sessions": [{"timestamp": f"t{n}", "scenario": f"s{n}", "scores": {"A": 90, "B": 80 + n}} for n in range(7)],
        "model_history": {"A": [{"elo_change": 31.9}], "B": [{"elo_change": -31.6}, {"elo_change": -15.2}],
                          "C": [{"elo_change": 0.1}], "D": []},
    }
    text = render_leaderboard(board, SPEC)
    assert text.startswith("# 🌀 Bench Elo Leaderboard\n\n*\"Measuring what can't be measured.\"*\n\n---\n\n"
                           "## Current Rankings\n\n| Rank | Model | Elo | Trend | Sessions |\n"
                           "|------|-------|-----|-------|----------|\n"
                           "| 1 | 🥇 A | 1532 | 🔺 +32 | 1 |\n"
                           "| 2 | 🥈 C | 1500 | 🔺 +0 | 1 |\n"
                           "| 3 | 🥉 D | 1490 | ➖ | 0 |\n"  # noqa: RUF001 - the leaderboard's no-change emoji
                           "| 4 | B | 1468 | 🔻 -15 | 2 |\n")
    recent = text.split("## Recent Sessions\n\n")[1]
    assert recent.startswith("### t6 - s6\n\n- **A**: 90\n- **B**: 86\n\n### t5 - s5\n")
    assert "### t1 - s1" not in recent  # the last five, newest first
    assert text.endswith("*Elo ratings use K=32. Models start at 1500.*  \n*Total sessions: 7*\n")
    textbook = LeaderboardSpec(suite="x", of="J", dir="x", elo=EloSettings(expected_from="ratings"))
    assert "Expected scores come from the ratings." in render_leaderboard(board, textbook)


SUITE = """\
suite: duel
models:
  a: {provider: echo}
judges:
  j: {provider: scripted, script: [{reply: "[[5]]"}]}
tasks:
  - id: t
    prompt: hi
    scorers:
      - {name: Q, type: llm_judge, judge: j, prompt: "{{ answer }}"}
scorers:
  - {name: J, type: llm_judge, judge: j, prompt: "{{ answer }}"}
leaderboard:
"""


def test_the_spec_takes_the_documented_defaults_and_keys() -> None:
    loaded = load_suite_text(SUITE + "  of: Q\n", path=Path("duel.yaml"), display_path="suites/duel.yaml")
    build_suite(loaded)
    spec = build_leaderboard(loaded)
    assert spec == LeaderboardSpec(suite="duel", of="Q", dir="duel", title="duel Elo Leaderboard")
    assert spec.elo == EloSettings(k=32, initial=1500, expected_from="session_scores", decimals=1)
    custom = SUITE + ("  of: J\n  sessions: cases\n  k: 16\n  initial: 1000\n  expected_from: ratings\n  round: 2\n"
                      "  dir: boards/duel\n  recent: 3\n")
    spec = build_leaderboard(load_suite_text(custom, path=Path("duel.yaml"), display_path="suites/duel.yaml"))
    assert spec is not None
    assert (spec.sessions, spec.dir, spec.recent) == ("cases", "boards/duel", 3)
    assert spec.elo == EloSettings(k=16, initial=1000, expected_from="ratings", decimals=2)


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("  of: JJ\n",
         "suites/duel.yaml:14: leaderboard.of: unknown component 'JJ'\n  > 14 |   of: JJ\n"
         "  hint: did you mean 'J'? components: J, Q"),
        ("  of: J\n  expected_from: rating\n", "leaderboard.expected_from"),
        ("  of: J\n  k: 0\n", "leaderboard.k"),
        ("  sessions: cases\n", "leaderboard: missing required key 'of'"),
    ],
)
def test_leaderboard_mistakes_point_at_the_yaml(tail: str, message: str) -> None:
    loaded = load_suite_text(SUITE + tail, path=Path("duel.yaml"), display_path="suites/duel.yaml")
    with pytest.raises(SuiteError) as info:
        build_suite(loaded)
    assert message in str(info.value)


def test_leaderboards_are_read_again_from_the_suite_files(tmp_path: Path) -> None:
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "duel.yaml").write_text(SUITE + "  of: J\n")
    (tmp_path / "suites" / "plain.yaml").write_text(SUITE.replace("leaderboard:\n", ""))
    found = read_suite_leaderboards(["suites/duel.yaml", "suites/plain.yaml", "suites/gone.yaml"], tmp_path)
    assert list(found) == ["suites/duel.yaml"] and found["suites/duel.yaml"].of == "J"
