"""The bundled MT-Bench suite reproduces the paper's table offline.

It skips models it has no verdicts for, and with a real judge grades any model through FastChat's own prompts.
"""

from __future__ import annotations

import csv
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench_plugin.mock.server import MockServer
from bench_plugin.scoring.judge.parse_rules import read_with_rule

SUITE_DIR = Path(__file__).resolve().parents[2] / "suites" / "mt_bench"

# The table of the dataset's README (recomputed from GPT-4's recorded scores), in the paper's order.
PUBLISHED = """\
model           overall turn_1 turn_2 writing roleplay reasoning math   coding extraction stem   humanities
gpt-4           8.9906  8.9563 9.0250 9.6500  8.9000   9.0000    6.8000 8.5500 9.3750     9.7000 9.9500
gpt-3.5-turbo   7.9437  8.0750 7.8125 9.2000  8.4000   5.6500    6.3000 6.9000 8.8500     8.7000 9.5500
claude-v1       7.9000  8.1500 7.6500 9.5000  8.5000   5.9500    4.8000 6.2500 8.8000     9.7000 9.7000
vicuna-13b-v1.3 6.3875  6.8125 5.9625 9.2500  7.1750   5.8500    2.6000 3.2500 5.5500     7.9750 9.4500
alpaca-13b      4.5312  4.9750 4.0875 6.7000  5.4500   3.5000    1.0500 2.3500 4.1500     5.2000 7.8500
llama-13b       2.6063  3.2625 1.9500 3.7000  4.0500   2.5500    1.0500 1.1000 2.5000     2.5500 3.3500
"""


MT_BENCH_PARSE = yaml.safe_load((SUITE_DIR / "mt_bench.yaml").read_text(encoding="utf-8"))["scorers"][0]["parse"]


def published() -> list[list[str]]:
    return [line.split() for line in PUBLISHED.splitlines()]


@pytest.fixture
def mt_bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(SUITE_DIR, pytester.path / "suites" / "mt_bench")
    return pytester


def csv_rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def results(pytester: pytest.Pytester, folder: str = "bench-results") -> list[dict[str, Any]]:
    lines = (pytester.path / folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def assert_table_reproduced(folder: Path) -> None:
    header, *rows = published()
    written = csv_rows(folder / "mt_bench.csv")
    assert written[0] == [*header, "scored"]
    assert [row[0] for row in written[1:]] == [row[0] for row in rows], "not in the paper's order"
    for want, got in zip(rows, written[1:], strict=True):
        for column, want_cell, got_cell in zip(header[1:], want[1:], got[1:], strict=False):  # got ends in "scored"
            assert got_cell == want_cell, f"{want[0]} {column}: {got_cell} != {want_cell}"
        assert got[-1] == "80"


def test_offline_run_reproduces_every_figure_of_the_published_table(mt_bench: pytest.Pytester) -> None:
    result = mt_bench.runpytest("suites/mt_bench", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=480)
    result.stdout.fnmatch_lines(["results: *(results.jsonl, report.md, summary.json, dashboard.html, mt_bench.csv)"])
    output = mt_bench.path / "bench-results"
    assert_table_reproduced(output)
    report = (output / "report.md").read_text(encoding="utf-8")
    table = [line for line in report.splitlines() if line.startswith("| ") and line.endswith("| 80 |")]
    assert table == ["| " + " | ".join(row) + " | 80 |" for row in published()[1:]]


def test_reconstructed_verdicts_read_back_as_the_recorded_scores() -> None:
    categories = {q["question_id"]: q["category"] for q in jsonl(SUITE_DIR / "question.jsonl").values()}
    lines = [json.loads(line) for line in (SUITE_DIR / "judgments" / "gpt-4_single.jsonl").read_text().splitlines()]
    assert len(lines) == 6 * 80 * 2
    for line in lines:
        assert read_with_rule(line["judgment"], MT_BENCH_PARSE) == line["score"]
        math = categories[line["question_id"]] in ("reasoning", "math", "coding")
        name = ("single-math-v1" if math else "single-v1") + ("-multi-turn" if line["turn"] == 2 else "")
        assert line["judge"] == ["gpt-4", name]


def test_each_turn_is_judged_with_its_recorded_verdict(mt_bench: pytest.Pytester) -> None:
    mt_bench.runpytest("suites/mt_bench", "-p", "no:cacheprovider", "-k", "math-111 and gpt-4").assert_outcomes(
        passed=1
    )
    (record,) = results(mt_bench)
    components = record["scores"]["components"]
    assert [(c["name"], c["raw"], c["judge_output"]) for c in components] == [
        ("score", 1.5, None),
        ("score.t1", 2.0, "Rating: [[2]]"),
        ("score.t2", 1.0, "Rating: [[1]]"),
    ]
    assert record["turns"][0]["user"].startswith("The vertices of a triangle")
    assert record["tags"] == ["category=math"]


def test_model_without_recorded_verdicts_is_skipped_before_it_is_called(mt_bench: pytest.Pytester) -> None:
    result = mt_bench.runpytest(
        "suites/mt_bench", "-p", "no:cacheprovider", "-rs", "--bench-models", "koala-13b", "-k", "writing-81"
    )
    result.assert_outcomes(skipped=1)
    reason = (
        "replay_miss: judge 'gpt-4-judge' replays recorded verdicts and gpt-4_single.jsonl has none for model "
        "'koala-13b', task '81'; to judge this model, name a real judge: --bench-judge PROVIDER:MODEL"
    )
    result.stdout.fnmatch_lines([f"SKIPPED*{reason}"])
    (record,) = results(mt_bench)
    assert record["status"] == "skipped" and record["usage"]["calls"] == 0 and record["scores"] is None


# ----------------------------------------------------------------------------- a real judge

def fastchat_messages(
    name: str, questions: list[str], answers: list[str], refs: list[str] | None,
) -> list[dict[str, str]]:
    """What FastChat's run_judge_single sends for one judgment (system prompt, then the user prompt)."""
    prompts = {p["name"]: p for p in map(json.loads, (SUITE_DIR / "judge_prompts.jsonl").read_text().splitlines())}
    prompt = prompts[name]
    multi_turn = name.endswith("-multi-turn")
    kwargs = {}
    if refs is not None:
        kwargs["ref_answer_1"] = refs[0]
        if multi_turn:
            kwargs["ref_answer_2"] = refs[1]
    if multi_turn:
        user = prompt["prompt_template"].format(
            question_1=questions[0], question_2=questions[1], answer_1=answers[0], answer_2=answers[1], **kwargs
        )
    else:
        user = prompt["prompt_template"].format(question=questions[0], answer=answers[0], **kwargs)
    return [{"role": "system", "content": prompt["system_prompt"]}, {"role": "user", "content": user}]


def jsonl(path: Path) -> dict[int, dict[str, Any]]:
    return {r["question_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def test_real_judge_grades_any_model_through_fastchat_prompts(
    mt_bench: pytest.Pytester, mock_server: MockServer,
) -> None:
    judge, fresh = f"judge-{uuid.uuid4().hex[:8]}", f"fresh-{uuid.uuid4().hex[:8]}"
    # math prompts get a single-bracket rating: read through the [N] fallback, as FastChat does
    mock_server.add_rule({"model": judge, "match": "Start of Reference Answer", "reply": "Mostly wrong. Rating: [3]"})
    mock_server.add_rule({"model": judge, "reply": "Good. Rating: [[7.5]]"})
    result = mt_bench.runpytest(
        "suites/mt_bench", "-p", "no:cacheprovider", "-k", "writing-81 or math-111",
        "--bench-models", f"koala-13b,vllm:{fresh}", "--bench-judge", f"vllm:{judge}",
        "--bench-base-url", f"vllm={mock_server.openai_base_url}",
    )
    result.assert_outcomes(passed=4)
    questions = jsonl(SUITE_DIR / "question.jsonl")
    references = jsonl(SUITE_DIR / "reference_answer" / "gpt-4.jsonl")
    koala = jsonl(SUITE_DIR / "model_answer" / "koala-13b.jsonl")
    requests = [r["body"] for r in mock_server.requests if r["model"] == judge]
    assert len(requests) == 8
    assert all(body["temperature"] == 0 and body["max_tokens"] == 2048 for body in requests)
    sent = [body["messages"] for body in requests]
    for qid, name, refs in ((81, "single-v1", None), (111, "single-math-v1", references[111]["choices"][0]["turns"])):
        turns = questions[qid]["turns"]
        for answers in (koala[qid]["choices"][0]["turns"], [f"echo: {turns[0]}", f"echo: {turns[1]}"]):
            assert fastchat_messages(name, turns, answers, refs) in sent
            assert fastchat_messages(f"{name}-multi-turn", turns, answers, refs) in sent
    # the fresh model answered both turns, seeing the first exchange when answering the second
    calls = [r["body"]["messages"] for r in mock_server.requests if r["model"] == fresh]
    writing = sorted((m for m in calls if m[0]["content"] == questions[81]["turns"][0]), key=len)
    assert writing == [
        [{"role": "user", "content": questions[81]["turns"][0]}],
        [{"role": "user", "content": questions[81]["turns"][0]},
         {"role": "assistant", "content": f"echo: {questions[81]['turns'][0]}"},
         {"role": "user", "content": questions[81]["turns"][1]}],
    ]
    scores = {(r["model"], r["task"]): r["scores"]["components"][0]["raw"] for r in results(mt_bench)}
    assert scores == {("koala-13b", "writing-81"): 7.5, (f"vllm:{fresh}", "writing-81"): 7.5,
                      ("koala-13b", "math-111"): 3.0, (f"vllm:{fresh}", "math-111"): 3.0}


@pytest.mark.slow
def test_xdist_run_reproduces_the_same_table(mt_bench: pytest.Pytester) -> None:
    mt_bench.runpytest_subprocess("suites/mt_bench", "-p", "no:cacheprovider", "-n", "2").assert_outcomes(passed=480)
    assert_table_reproduced(mt_bench.path / "bench-results")
