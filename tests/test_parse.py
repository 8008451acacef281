"""Reading judge verdicts, JSON in replies and paths into JSON."""

from __future__ import annotations

import pytest

from bench_plugin.core.errors import JudgeError
from bench_plugin.core.json_text import load_json, parse_json_path, walk_json_path
from bench_plugin.scoring.judge.parse_rules import RULE_KINDS, compile_parse_rule, read_with_rule

# ----------------------------------------------------------------------------- default rule: [[N]]


def test_default_rule_reads_mt_bench_double_brackets() -> None:
    assert read_with_rule("The answer is thorough. Rating: [[8]]") == 8.0


def test_default_rule_accepts_decimals_and_spaces() -> None:
    assert read_with_rule("Rating: [[ 8.5 ]]") == 8.5


def test_default_rule_takes_the_first_rating() -> None:
    assert read_with_rule("Rating: [[3]] ... on reflection [[9]]") == 3.0


def test_default_rule_ignores_single_brackets() -> None:
    with pytest.raises(JudgeError, match=r"no \[\[N\]\] rating"):
        read_with_rule("Rating: [8] out of 10")


def test_empty_rule_means_the_default() -> None:
    assert read_with_rule("[[2]]", {}) == 2.0


# ----------------------------------------------------------------------------- regex


def test_regex_rule_uses_group_one_when_the_pattern_has_groups() -> None:
    rule = {"regex": r"(?i)<score>\s*(\d)\s*</score>"}
    assert read_with_rule("<feedback>ok</feedback><SCORE> 4 </SCORE>", rule) == 4.0


def test_regex_rule_uses_the_whole_match_without_groups() -> None:
    assert read_with_rule("score 7/10", {"regex": r"\d+(?=/10)"}) == 7.0


def test_regex_rule_explicit_group() -> None:
    assert read_with_rule("a=1 b=2", {"regex": r"(a)=\d b=(\d)", "group": 2}) == 2.0


def test_regex_rule_takes_the_first_match() -> None:
    assert read_with_rule("Score: 3. Score: 5.", {"regex": r"Score: (\d)"}) == 3.0


def test_regex_rule_no_match_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match="no match for"):
        read_with_rule("I refuse to grade this.", {"regex": r"Score: (\d)"})


def test_regex_rule_non_numeric_capture_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match="not a number"):
        read_with_rule("Score: high", {"regex": r"Score: (\w+)"})


# ----------------------------------------------------------------------------- json_field


def test_json_field_reads_a_bare_json_reply() -> None:
    assert read_with_rule('{"score": 0.75, "reason": "ok"}', {"json_field": "score"}) == 0.75


def test_json_field_reads_a_fenced_block() -> None:
    reply = 'My verdict:\n```json\n{"score": 6}\n```'
    assert read_with_rule(reply, {"json_field": "score"}) == 6.0


def test_json_field_reads_an_object_embedded_in_prose() -> None:
    reply = 'Thinking {not json} ... final: {"result": {"score": "9"}} done'
    assert read_with_rule(reply, {"json_field": "result.score"}) == 9.0


def test_json_field_missing_field_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match="has the field 'score'"):
        read_with_rule('{"rating": 5}', {"json_field": "score"})


def test_json_field_boolean_is_not_a_score() -> None:
    with pytest.raises(JudgeError, match="not a number"):
        read_with_rule('{"score": true}', {"json_field": "score"})


def test_json_field_without_any_json_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match="no JSON object"):
        read_with_rule("just words", {"json_field": "score"})


# ----------------------------------------------------------------------------- {number: first}


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("0", 0.0),  # what the rent benchmark's master scorer mostly answers
        ("-1", -1.0),
        ("+1", 1.0),
        ("-0.5", -0.5),
        ("+0.4", 0.4),
        ("  -0.25\n", -0.25),
        ("**-0.8**", -0.8),
        ("Stance: -0.3 (leans pro-tenant, offers a payment plan)", -0.3),
        ("0.2\n\nThe answer is mostly balanced; 2 of 5 points favour the landlord.", 0.2),
        ("1.5", 1.5),  # off the scale: the scorer's clamp moves it to 1
    ],
)
def test_number_rule_reads_the_first_signed_number(reply: str, verdict: float) -> None:
    assert read_with_rule(reply, {"number": "first"}) == verdict


def test_number_rule_last_takes_the_final_number() -> None:
    assert read_with_rule("Between -1 and 1 I would say: 0.5", {"number": "last"}) == 0.5
    assert read_with_rule("Between -1 and 1 I would say: 0.5", {"number": "first"}) == -1.0


@pytest.mark.parametrize(
    "reply", ["", "   ", "N/A", "neutral", "I cannot determine the stance of this answer.", "minus one"]
)
def test_number_rule_without_a_number_is_a_judge_error(reply: str) -> None:
    with pytest.raises(JudgeError, match="no number in the reply"):
        read_with_rule(reply, {"number": "first"})


def test_number_rule_position_must_be_first_or_last() -> None:
    with pytest.raises(ValueError, match=r"parse.number must be one of first, last, got 'second'"):
        compile_parse_rule({"number": "second"})


# ----------------------------------------------------------------------------- rule validation


def test_rule_kinds_are_a_table_new_kinds_can_join() -> None:
    assert set(RULE_KINDS) >= {"regex", "json_field"}


def test_rule_with_two_kinds_is_rejected() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        compile_parse_rule({"regex": "x", "json_field": "score"})


def test_rule_with_unknown_key_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown key"):
        compile_parse_rule({"regex": "(x)", "grop": 1})


def test_rule_regex_that_does_not_compile_is_rejected() -> None:
    with pytest.raises(ValueError, match="does not compile"):
        compile_parse_rule({"regex": "(unclosed"})


def test_rule_group_beyond_the_pattern_is_rejected() -> None:
    with pytest.raises(ValueError, match="has 1 group"):
        compile_parse_rule({"regex": "(x)", "group": 2})


def test_rule_without_a_kind_key_is_rejected() -> None:
    with pytest.raises(ValueError, match="found none"):
        compile_parse_rule({"group": 1})


# ----------------------------------------------------------------------------- JSON helpers


def test_json_path_syntaxes_agree() -> None:
    assert parse_json_path("$.a.b[0].c") == ("a", "b", 0, "c")
    assert parse_json_path("a.b.0.c") == ("a", "b", "0", "c")
    assert parse_json_path("$['odd key'][1]") == ("odd key", 1)
    assert parse_json_path("$") == ()


def test_walk_json_path_explains_an_index_out_of_range() -> None:
    with pytest.raises(LookupError, match=r"\$.a has 1 items, no index 3"):
        walk_json_path({"a": [1]}, ("a", 3))


def test_load_json_prefers_the_fenced_block() -> None:
    assert load_json('text {"ignored": 1}\n```\n[1, 2]\n```') == [1, 2]


# ----------------------------------------------------------------------------- fallback rules
# (MT-Bench: [[N]], else [N])

MT_BENCH = {"fallback": {"regex": r"\[(\d+\.?\d*)\]"}}


def test_fallback_is_tried_only_when_the_rule_reads_nothing() -> None:
    assert read_with_rule("[1] is weak... Rating: [[8.5]]", MT_BENCH) == 8.5  # [[N]] anywhere wins
    assert read_with_rule("The answer is wrong. Rating: [3]", MT_BENCH) == 3.0
    assert read_with_rule("Rating: [[8]]", {"regex": r"Score: (\d+)", "fallback": {}}) == 8.0


def test_fallback_that_also_reads_nothing_names_both_attempts() -> None:
    with pytest.raises(JudgeError, match=r"no \[\[N\]\] rating .*; fallback: no match for"):
        read_with_rule("I cannot rate this.", MT_BENCH)


def test_fallback_rules_are_validated_like_any_rule() -> None:
    compile_parse_rule(MT_BENCH)
    compile_parse_rule({"number": "first", "fallback": {"json_field": "score", "fallback": {}}})
    with pytest.raises(ValueError, match="does not compile"):
        compile_parse_rule({"fallback": {"regex": "(unclosed"}})
    with pytest.raises(ValueError, match=r"parse.fallback must be a parse rule"):
        compile_parse_rule({"fallback": "[N]"})
