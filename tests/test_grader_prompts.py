"""The built-in graders' prompts: MT-Bench's are FastChat's text unchanged, ours ask for the reply they read."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest

from bench_plugin.core.errors import JudgeError
from bench_plugin.scoring.graders.factuality import DEFAULT_SCORES, FACTUALITY_PROMPT, parse_scores
from bench_plugin.scoring.graders.llm_rubric import read_rubric_reply
from bench_plugin.scoring.graders.model_graded import grade_line, grade_map
from bench_plugin.scoring.graders.mt_bench import fastchat_prompts

REPO = Path(__file__).resolve().parents[1]
PACKAGED = REPO / "bench_plugin" / "scoring" / "graders" / "mt_bench_prompts.jsonl"


def test_packaged_mt_bench_prompts_are_the_bundled_suites_copy() -> None:
    assert PACKAGED.read_bytes() == (REPO / "suites" / "mt_bench" / "judge_prompts.jsonl").read_bytes()


@pytest.mark.parametrize("entry", [json.loads(line) for line in PACKAGED.read_text().splitlines()],
                         ids=lambda entry: entry["name"])
def test_jinja_form_renders_as_fastchats_str_format(entry: dict[str, str]) -> None:
    names = {"question", "answer", "answer_a", "answer_b", "ref_answer_1", "ref_answer_2", "question_1",
             "question_2", "answer_1", "answer_2", "answer_a_1", "answer_a_2", "answer_b_1", "answer_b_2"}
    values = {name: f"<{name} {{x}}>" for name in names}  # braces in a value stay as they are
    multi = entry["name"].endswith("-multi-turn")
    ours = {**values, "reference": values["ref_answer_1"]}
    if multi:
        ours.update(question=values["question_2"], answer=values["answer_2"])
    rendered = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        fastchat_prompts()[entry["name"]].template).render(**ours)
    assert rendered == entry["prompt_template"].format(**values)
    assert fastchat_prompts()[entry["name"]].system == entry["system_prompt"]


def test_letter_graders_ask_for_exactly_the_grades_they_read() -> None:
    assert grade_line(False).endswith("GRADE: C if the answer is correct, or GRADE: I if it is not.")
    assert "GRADE: P if it is partly correct" in grade_line(True)
    assert set(grade_map(False)) == {"C", "I", "correct", "incorrect"}
    assert grade_map(True)["P"] == 0.5


def test_factuality_asks_for_every_relation_it_scores() -> None:
    for relation in DEFAULT_SCORES:
        assert f"- {relation}:" in FACTUALITY_PROMPT
    assert parse_scores({"subset": 0.5})["subset"] == 0.5
    with pytest.raises(ValueError, match="unknown relation\\(s\\) agree; the relations are subset"):
        parse_scores({"agree": 1})


def test_rubric_reply_reads_words_and_rejects_what_it_cannot_use() -> None:
    assert read_rubric_reply('noise {"pass": "yes", "reason": "ok"}').passed is True
    assert read_rubric_reply('{"pass": "FAIL", "score": 0.3}').score == 0.3
    with pytest.raises(JudgeError, match="outside \\[0, 1\\]"):
        read_rubric_reply('{"pass": true, "score": 7}')
    with pytest.raises(JudgeError, match="neither pass nor score"):
        read_rubric_reply('{"pass": null}')
    with pytest.raises(JudgeError, match="not one of the pass labels"):
        read_rubric_reply('{"pass": "maybe"}')
