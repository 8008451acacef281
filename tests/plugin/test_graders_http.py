"""The built-in graders over HTTP: a real judge on the loopback mock server gets our prompts and FastChat's."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from typing import Any

import pytest
from test_mt_bench import SUITE_DIR, fastchat_messages, jsonl

from bench_plugin.mock.server import MockServer


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def results(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


# the bundled suite's scorer, as one line of the named grader (references only for FastChat's math categories)
NAMED_SCORER = """\
scorers:
  - name: score
    type: mt_bench
    judge: gpt-4-judge
    per_turn: true
    reference:
      - "{{ ref_answer_1 if category in reference_categories else '' }}"
      - "{{ ref_answer_2 if category in reference_categories else '' }}"

pass_threshold: 0
"""


def test_mt_bench_by_name_sends_fastchats_own_messages(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    shutil.copytree(SUITE_DIR, pytester.path / "suites" / "mt_bench")
    suite = pytester.path / "suites" / "mt_bench" / "mt_bench.yaml"
    text = suite.read_text(encoding="utf-8")
    suite.write_text(re.sub(r"(?ms)^scorers:.*?^pass_threshold: 0[^\n]*\n", NAMED_SCORER, text), encoding="utf-8")
    assert "type: mt_bench" in suite.read_text(encoding="utf-8")
    judge = unique("judge")
    mock_server.add_rule({"model": judge, "match": "Start of Reference Answer", "reply": "Mostly wrong. Rating: [3]"})
    mock_server.add_rule({"model": judge, "reply": "Good. Rating: [[7.5]]"})
    result = pytester.runpytest(
        "suites/mt_bench", "-p", "no:cacheprovider", "-k", "writing-81 or math-111",
        "--bench-models", "koala-13b", "--bench-judge", f"vllm:{judge}",
        "--bench-base-url", f"vllm={mock_server.openai_base_url}",
    )
    result.assert_outcomes(passed=2)
    questions = jsonl(SUITE_DIR / "question.jsonl")
    references = jsonl(SUITE_DIR / "reference_answer" / "gpt-4.jsonl")
    koala = jsonl(SUITE_DIR / "model_answer" / "koala-13b.jsonl")
    sent = [r["body"]["messages"] for r in mock_server.requests if r["model"] == judge]
    assert len(sent) == 4
    for qid, name, refs in ((81, "single-v1", None), (111, "single-math-v1", references[111]["choices"][0]["turns"])):
        turns, answers = questions[qid]["turns"], koala[qid]["choices"][0]["turns"]
        assert fastchat_messages(name, turns, answers, refs) in sent
        assert fastchat_messages(f"{name}-multi-turn", turns, answers, refs) in sent
    scores = {r["task"]: [(c["name"], c["raw"], c.get("prompt")) for c in r["scores"]["components"]]
              for r in results(pytester)}
    assert scores == {
        "writing-81": [("score", 7.5, None), ("score.t1", 7.5, "single-v1"), ("score.t2", 7.5, "single-v1-multi-turn")],
        "math-111": [("score", 3.0, None), ("score.t1", 3.0, "single-math-v1"),
                     ("score.t2", 3.0, "single-math-v1-multi-turn")],
    }


def test_graders_over_http_with_the_model_under_test_grading_itself(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model, judge = unique("model"), unique("judge")
    # the model under test answers, then grades its own answer (model_graded_qa has no judge:)
    mock_server.add_rule({"model": model, "match": "Reference answer", "reply": "Right city.\nGRADE: C"})
    mock_server.add_rule({"model": model, "reply": "Paris, of course."})
    rubric_reply = '{"reason": "Short.", "pass": true, "score": 0.7}'
    mock_server.add_rule({"model": judge, "match": "Rubric", "reply": rubric_reply})
    mock_server.add_rule({"model": judge, "match": "VERDICT", "reply": "Adds detail.\nVERDICT: superset"})
    suite = f"""\
providers:
  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', timeout: 2, max_retries: 0}}
models:
  candidate: {{provider: local, id: {model}}}
judges:
  grader: {{provider: local, id: {judge}}}
tasks:
  - {{id: capital, prompt: "What is the capital of France?", vars: {{reference: Paris}}}}
scorers:
  - {{name: QA, type: model_graded_qa}}
  - {{name: R, type: llm_rubric, judge: grader, criteria: Answers in one short sentence, threshold: 0.5}}
  - {{name: F, type: factuality, judge: grader}}
"""
    pytester.makefile(".yaml", **{"suites/http_graders": suite})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    (record,) = results(pytester)
    components = {c["name"]: (c["value"], c["passed"]) for c in record["scores"]["components"]}
    assert components == {"QA": (1.0, True), "R": (0.7, True), "F": (1.0, True)}
    assert record["reason"] == "score 0.9000; passed: QA, R >= 0.5, F"
    grading = [r["body"]["messages"] for r in mock_server.requests if r["model"] == model][1]
    assert grading[-1]["content"].startswith("You are checking whether an answer to a question is correct")
    assert "[Answer to grade]\nParis, of course." in grading[-1]["content"]
    rubric = next(r["body"]["messages"] for r in mock_server.requests
                  if r["model"] == judge and "Rubric" in r["body"]["messages"][-1]["content"])
    assert "[Rubric]\nAnswers in one short sentence" in rubric[-1]["content"]
