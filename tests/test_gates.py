"""Turn gates: a scripted turn is sent only when its conditions hold on the last answer."""

from __future__ import annotations

import pytest

from bench_plugin.suite.gates import check_gate, evaluate_gate


@pytest.mark.parametrize(
    ("when", "text", "held"),
    [
        ({"regex": r"(?i)\byes\b"}, "Yes, I agree.", True),
        ({"regex": r"(?i)\byes\b"}, "No.", False),
        ({"not_regex": r"\d"}, "no digits", True),
        ({"not_regex": r"\d"}, "4 digits", False),
        ({"contains": "DONE"}, "all DONE", True),
        ({"contains": "DONE"}, "all done", False),
        ({"not_contains": "sorry"}, "Here you are", True),
        ({"not_contains": "sorry"}, "I am sorry", False),
        ({}, "anything", True),
    ],
)
def test_each_kind_of_condition(when: dict[str, str], text: str, held: bool) -> None:
    assert evaluate_gate(when, text)[0] is held


def test_every_condition_must_hold_and_the_first_failure_is_the_reason() -> None:
    when = {"contains": "plan", "regex": "step \\d"}
    assert evaluate_gate(when, "my plan: step 1") == (True, "")
    assert evaluate_gate(when, "my plan") == (False, "regex /step \\d/ did not match the last answer")
    assert evaluate_gate(when, "step 1") == (False, "the last answer does not contain 'plan'")


def test_no_earlier_answer_is_an_empty_text() -> None:
    assert evaluate_gate({"regex": "."}, "")[0] is False
    assert evaluate_gate({"not_regex": "."}, "")[0] is True


def test_check_gate_rejects_bad_regexes_unknown_kinds_and_non_text() -> None:
    with pytest.raises(ValueError, match=r"regex /\(/ does not compile"):
        check_gate({"regex": "("})
    with pytest.raises(ValueError, match="unknown gate 'matches'"):
        check_gate({"matches": "x"})
    with pytest.raises(TypeError, match="contains must be a string"):
        check_gate({"contains": 3})  # type: ignore[dict-item]
