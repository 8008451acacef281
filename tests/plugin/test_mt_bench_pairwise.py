"""The bundled MT-Bench pairwise suite reproduces FastChat's show_result.py table from GPT-4's recorded replies.

Replayed answers and judge replies go through the pairwise scorer with FastChat's rules (a win needs the
same winner in both orders, a failed call drops the game); the test compares every figure of the table
FastChat printed, and checks that a real judge gets exactly FastChat's messages.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer
from bench_plugin.report.pairwise_table import render_pairwise_table
from bench_plugin.report.statistics import PairwiseGame, position_bias

SUITE_DIR = Path(__file__).resolve().parents[2] / "suites" / "mt_bench_pairwise"
JUDGMENTS = SUITE_DIR / "model_judgment" / "gpt-4_pair.phi-3-vs-phi-3-dpo.jsonl"


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_question(path: Path) -> dict[int, dict[str, Any]]:
    return {row["question_id"]: row for row in jsonl(path)}


def reference_table(name: str) -> list[list[str]]:
    """The rows FastChat's show_result.py printed: model, win, loss, tie and the three rates."""
    lines = (SUITE_DIR / "reference" / name).read_text(encoding="utf-8").splitlines()
    start = next(index for index, line in enumerate(lines) if line.strip() == "model") + 1
    return [line.split() for line in lines[start:] if line.strip()]


def git_blob(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def rebuilt_replay_lines() -> list[dict[str, Any]]:
    """judgments/gpt-4_pair.jsonl as README.md says it is made: one line per game and order."""
    lines = []
    for row in jsonl(JUDGMENTS):
        for game in ("g1", "g2"):
            failed = row[f"{game}_judgment"] == "$ERROR$"
            lines.append({
                "question_id": row["question_id"], "model_1": row["model_1"], "model_2": row["model_2"],
                "game": f"{row['question_id']}/{game}", "judge": row["judge"], "turn": row["turn"],
                "winner": row[f"{game}_winner"], "judgment": None if failed else row[f"{game}_judgment"],
                "error": "the judge call failed (FastChat recorded $ERROR$)" if failed else None,
            })
    return lines


def fastchat_outcome(row: dict[str, Any]) -> float:
    """model_1's result in show_result.py: a tie unless both orders name the same winner."""
    if row["g1_winner"] == "tie" or row["g1_winner"] != row["g2_winner"]:
        return 0.5
    return 1.0 if row["g1_winner"] == "model_1" else 0.0


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(SUITE_DIR, pytester.path / "suites" / "mt_bench_pairwise")
    return pytester


def test_bundled_files_are_the_recorded_run() -> None:
    # git blob ids from README.md: byte-exact copies of the fork's files
    assert git_blob(JUDGMENTS) == "32bc56288915dd68a6e241b1cc4fac1649ddf11a"
    assert git_blob(SUITE_DIR / "model_answer" / "phi-3.jsonl") == "0535a601d9de7c6878f4487d560b06b7fe66a272"
    assert git_blob(SUITE_DIR / "model_answer" / "phi-3-dpo.jsonl") == "42334d79e5623e5c8e9373bb69c4928a3e129cc6"
    mt_bench = SUITE_DIR.parent / "mt_bench"
    for name in ("question.jsonl", "judge_prompts.jsonl", "reference_answer/gpt-4.jsonl"):
        assert (SUITE_DIR / name).read_bytes() == (mt_bench / name).read_bytes(), name
    rows = jsonl(JUDGMENTS)
    assert len(rows) == 75 and sorted({row["question_id"] for row in rows}) == [
        qid for qid in range(81, 161) if qid not in range(126, 131)
    ]


def test_replay_file_is_rebuilt_from_the_recorded_judgments() -> None:
    assert jsonl(SUITE_DIR / "judgments" / "gpt-4_pair.jsonl") == rebuilt_replay_lines()


def test_offline_run_reproduces_the_fastchat_table(suite: pytest.Pytester) -> None:
    result = suite.runpytest("suites/mt_bench_pairwise", "-p", "no:cacheprovider", "-rsx")
    result.assert_outcomes(passed=73, skipped=5, xfailed=2)
    result.stdout.fnmatch_lines([
        "results: *mt_bench_pairwise.csv*",
        "SKIPPED*replay_miss: no recorded answer for model 'phi-3', task '126/g1'*",
        "XFAIL*coding-124*recorded_failure: the judge call failed (FastChat recorded $ERROR$)*task '124/g2'*",
        "XFAIL*coding-125*recorded_failure: the judge call failed (FastChat recorded $ERROR$)*task '125/g1'*",
    ])
    output = suite.path / "bench-results"
    with (output / "mt_bench_pairwise.csv").open(newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    assert header == ["scorer", "model", "win", "loss", "tie", "win_rate", "loss_rate", "win_rate_adjusted"]
    assert [row[1:] for row in rows] == reference_table("show_result.pairwise-all.txt")
    assert [row[0] for row in rows] == ["P", "P"]
    # the baseline table is the same figures without the baseline's own row
    assert [rows[0][1:]] == reference_table("show_result.pairwise-baseline.baseline-phi-3.txt")

    # every game through the scorer gives the case FastChat's result for that row
    recorded = by_question(JUDGMENTS)
    records = {r["nodeid"]: r for r in jsonl(output / "results.jsonl")}
    for qid, row in recorded.items():
        record = next(r for r in records.values() if r["variables"]["question_id"] == qid)
        if "error" in (row["g1_winner"], row["g2_winner"]):
            assert record["status"] == "error" and record["error"]["kind"] == "recorded_failure", qid
            continue
        (component,) = record["scores"]["components"]
        assert component["value"] == fastchat_outcome(row), qid
        assert [order["judge_output"] for order in component["pairwise"]["orders"]] == [
            row["g1_judgment"], row["g2_judgment"]]

    summary = json.loads((output / "summary.json").read_text(encoding="utf-8"))
    (section,) = summary["suites"]
    (pairwise,) = section["ratings"]["pairwise"]
    assert (pairwise["component"], pairwise["games"], pairwise["dropped"]) == ("P", 73, 0)
    ratings = {entry["model"]: entry for entry in pairwise["bradley_terry"]}
    assert list(ratings) == ["phi-3-dpo", "phi-3"]  # the better win_rate_adjusted rates higher
    for entry in ratings.values():
        assert entry["games"] == 73 and entry["ci_low"] < entry["rating"] < entry["ci_high"]
    assert ratings["phi-3"]["ci_high"] > ratings["phi-3-dpo"]["ci_low"]  # 20 wins to 18: not separable
    assert ratings["phi-3-dpo"]["rating"] + ratings["phi-3"]["rating"] == pytest.approx(2000, abs=1e-4)
    # position bias over the 73 games' verdicts: FastChat's rows less the two with a failed call
    games = [PairwiseGame.from_fastchat(row) for row in recorded.values()]
    expected = position_bias(games, drop_error_games=True)
    assert (expected.first, expected.second, expected.n) == (78, 43, 121)
    bias = pairwise["position_bias"]
    assert (bias["first"], bias["second"], bias["n"]) == (78, 43, 121)
    assert bias["rate"] == pytest.approx(78 / 121, abs=1e-6) and bias["p_value"] < 0.01

    lines = render_pairwise_table(section)
    assert "| phi-3-dpo | 20 | 18 | 35 | 0.273973 | 0.246575 | 0.513699 |" in lines
    assert "| phi-3 | 18 | 20 | 35 | 0.246575 | 0.273973 | 0.486301 |" in lines
    assert any(line.startswith("Position bias: the judge picked the answer shown first in 78 of 121 ")
               for line in lines)


def test_report_md_shows_the_fastchat_table(suite: pytest.Pytester) -> None:
    suite.runpytest("suites/mt_bench_pairwise", "-p", "no:cacheprovider").assert_outcomes(
        passed=73, skipped=5, xfailed=2)
    report = (suite.path / "bench-results" / "report.md").read_text(encoding="utf-8")
    for row in reference_table("show_result.pairwise-all.txt"):
        assert "| " + " | ".join(row) + " |" in report
    assert "Position bias: the judge picked the answer shown first in 78 of 121 " in report


def test_a_real_judge_gets_fastchat_messages_in_both_orders(
    suite: pytest.Pytester, mock_server: MockServer,
) -> None:
    judge = f"judge-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": judge, "match": "Start of Reference Answer", "reply": "B is right. [[B]]"})
    mock_server.add_rule({"model": judge, "reply": "A reads better. [[A]]"})
    result = suite.runpytest(
        "suites/mt_bench_pairwise", "-p", "no:cacheprovider", "-k", "writing-81 or math-111",
        "--bench-judge", f"vllm:{judge}", "--bench-base-url", f"vllm={mock_server.openai_base_url}",
    )
    result.assert_outcomes(passed=2)
    prompts = {p["name"]: p for p in jsonl(SUITE_DIR / "judge_prompts.jsonl")}
    recorded = by_question(JUDGMENTS)
    requests = [r["body"] for r in mock_server.requests if r["model"] == judge]
    assert len(requests) == 4
    assert all(body["temperature"] == 0 and body["max_tokens"] == 2048 for body in requests)
    sent = [body["messages"] for body in requests]
    for qid in (81, 111):
        row = recorded[qid]
        system = prompts[row["judge"][1]]["system_prompt"]
        for game in ("g1", "g2"):  # the exact user prompts FastChat sent, as the recorded file keeps them
            assert [{"role": "system", "content": system}, {"role": "user", "content": row[f"{game}_user_prompt"]}] \
                in sent, (qid, game)
    # a judge that always prefers A, and B with a reference: position A twice is a tie, B twice too
    values = {r["task"]: r["scores"]["components"][0]["value"] for r in jsonl(suite.path / "bench-results" /
                                                                               "results.jsonl")}
    assert values == {"writing-81": 0.5, "math-111": 0.5}


@pytest.mark.slow
def test_xdist_run_writes_the_same_table(suite: pytest.Pytester) -> None:
    suite.runpytest_subprocess("suites/mt_bench_pairwise", "-p", "no:cacheprovider", "-n", "2").assert_outcomes(
        passed=73, skipped=5, xfailed=2)
    text = (suite.path / "bench-results" / "mt_bench_pairwise.csv").read_text(encoding="utf-8")
    assert [line.split(",")[1:] for line in text.splitlines()[1:]] == reference_table("show_result.pairwise-all.txt")
