"""Verdicts that are not numbers (letter grades, booleans, labels) read through every parse rule and scored by a map."""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.core.errors import JudgeError
from bench_plugin.scoring.judge.judge_reply import parse_reply_reader
from bench_plugin.scoring.judge.llm_judge import parse_scale
from bench_plugin.scoring.judge.parse_rules import compile_parse_rule, read_with_rule
from bench_plugin.scoring.judge.verdict_maps import NAMED_VERDICTS, VerdictMap, label_rule, parse_verdict_map

LETTERS = parse_verdict_map("letter_grade")


def grade(text: str, rule: dict[str, Any] | None = None, verdict: Any = "letter_grade") -> float:
    return read_with_rule(text, rule, parse_verdict_map(verdict))


def test_letter_grade_is_read_from_the_regex_group_that_failed_as_a_number_before() -> None:
    rule = {"regex": r"GRADE: ([CPI])"}
    with pytest.raises(JudgeError, match="is 'C', not a number"):
        read_with_rule("Looks right.\nGRADE: C", rule)
    assert grade("Looks right.\nGRADE: C", rule) == 1.0
    assert grade("Half of it.\nGRADE: P", rule) == 0.5
    assert grade("GRADE: I", rule) == 0.0


def test_json_boolean_is_read_with_true_false_and_pass_fail() -> None:
    reply = '```json\n{"reason": "ok", "pass": true, "score": 0.8}\n```'
    with pytest.raises(JudgeError, match=r"field 'pass' is true, not a number.*true_false"):
        read_with_rule(reply, {"json_field": "pass"})
    assert grade(reply, {"json_field": "pass"}, "true_false") == 1.0
    assert grade('{"pass": false}', {"json_field": "pass"}, "pass_fail") == 0.0
    assert grade('{"verdict": "PASS"}', {"json_field": "verdict"}, "pass_fail") == 1.0


def test_number_rules_read_labels_too() -> None:
    # the last number of the reply, looked up as a label: a judge answering 0 or 1
    assert grade("I think the answer is 1", {"number": "last"}, {"map": {"1": 1, "0": 0}}) == 1.0
    assert grade("Verdict: yes", {"regex": r"Verdict: (\w+)"}, "yes_no") == 1.0


def test_a_table_cell_is_read_as_a_label() -> None:
    report = "| Model | Grade |\n|---|---|\n| **Alpha** | **C** |\n| Beta | I |\n"
    table = {"table": {"column": "Grade", "row": "Alpha"}}
    assert grade(report, table) == 1.0
    assert grade(report, {"table": {"column": "Grade", "row": "Beta"}}) == 0.0
    # as a number the cell still reads its first number, as before
    assert read_with_rule("| Model | Score |\n|---|---|\n| Alpha | **92**/100 |\n",
                         {"table": {"column": "Score", "row": "Alpha"}}) == 92.0


def test_without_a_parse_rule_a_map_reads_the_last_grade_line() -> None:
    reply = "I must answer GRADE: C or GRADE: I. The answer misses the date.\n\nGRADE: I"
    assert grade(reply) == 0.0
    assert grade("**Verdict:** `pass`", verdict="pass_fail") == 1.0
    assert grade("Final: [[P]]") == 0.5
    with pytest.raises(JudgeError, match="no 'GRADE: X', 'VERDICT: X' or \\[\\[X\\]\\]"):
        grade("It is correct.")


def test_the_longest_label_wins_so_incorrect_is_not_read_as_correct() -> None:
    assert grade("GRADE: INCORRECT") == 0.0
    assert grade("GRADE: Correct") == 1.0
    assert grade("grade: c") == 1.0
    with pytest.raises(JudgeError):
        grade("GRADE: Cat")  # a label must end where the word ends


def test_a_label_outside_the_map_is_unread_and_names_the_labels() -> None:
    with pytest.raises(JudgeError, match=r"'B', not one of the map labels \(A, C\)"):
        grade("Choice: B", {"regex": r"Choice: (\w)"}, {"map": {"A": 1, "C": 0}})


def test_a_label_outside_the_map_falls_back() -> None:
    rule = {"regex": r"Choice: (\w)", "fallback": {"json_field": "choice"}}
    assert grade('Choice: B {"choice": "A"}', rule, {"map": {"A": 1, "C": 0}}) == 1.0


def test_case_is_kept_when_asked() -> None:
    labels = parse_verdict_map({"map": {"A": 1, "a": 0}, "ignore_case": False})
    assert labels is not None
    assert read_with_rule("VERDICT: a", None, labels) == 0.0
    with pytest.raises(ValueError, match="differ only in case"):
        parse_verdict_map({"map": {"A": 1, "a": 0}})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("letter", "did you mean 'letter_grade'"),
        ({"map": {True: 1, False: 0}}, r"an unquoted yes, no, on, off, true or false\); quote it"),
        ({"map": {"C": "one"}}, r"verdict.map.C must be a number"),
        ({"map": {}}, "must be a mapping of labels to scores"),
        ({"map": {"C": 1, "I": 1}}, "every label the score 1"),
        ({"labels": {"C": 1}}, "unknown key\\(s\\) labels"),
        (3, "must be a name such as letter_grade"),
    ],
)
def test_bad_verdict_options_say_what_is_expected(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_verdict_map(value)


def test_number_is_the_default() -> None:
    assert parse_verdict_map(None) is None
    assert parse_verdict_map("number") is None


def test_the_scale_of_a_map_goes_from_its_lowest_to_its_highest_score() -> None:
    assert parse_scale({}, None, LETTERS) == (0.0, 1.0)
    assert parse_scale({}, None, parse_verdict_map({"map": {"good": 5, "bad": 1}})) == (1.0, 5.0)
    assert parse_scale({"scale": [0, 10]}, None, LETTERS) == (0.0, 10.0)
    assert parse_scale({}, None) == (1.0, 10.0)


def test_a_report_reader_keeps_the_label() -> None:
    reading = parse_reply_reader({"verdict": "letter_grade"}).read("The answer is right.\nGRADE: C", ())
    assert (reading.raw, reading.label, reading.error) == (1.0, "C", None)
    unread = parse_reply_reader({"verdict": "letter_grade"}).read("No idea.", ())
    assert unread.raw is None and unread.error is not None and "GRADE" in unread.error
    defaulted = parse_reply_reader({"verdict": "letter_grade", "parse": {"default": 0}}).read("No idea.", ())
    assert defaulted.raw == 0 and "declared default 0" in defaulted.note


def test_named_maps_are_documented_ones() -> None:
    assert list(NAMED_VERDICTS) == ["letter_grade", "pass_fail", "yes_no", "true_false"]
    assert NAMED_VERDICTS["letter_grade"]["C"] == 1 and NAMED_VERDICTS["letter_grade"]["P"] == 0.5


def test_label_rule_reads_brackets_when_no_line_names_a_label() -> None:
    rule = label_rule(VerdictMap("map", {"A": 1.0, "B": 0.0, "C": 0.5}))
    assert rule.find("Assistant A is better: [[A]]") == "A"
    assert rule.find("[[B]] ... VERDICT: C") == "C"  # a verdict line wins over brackets


def test_a_map_reader_without_rule_is_the_label_rule() -> None:
    reader = compile_parse_rule(None, LETTERS)
    verdict = reader.reading("GRADE: P")
    assert (verdict.score, verdict.label) == (0.5, "P")
