"""Tests of brackets_balanced: (), [] and {} open and close in order; other characters do not matter."""

from solution import brackets_balanced


def test_no_brackets_is_balanced():
    assert brackets_balanced("plain text") is True


def test_nested_pairs():
    assert brackets_balanced("{a[b(c)d]e}") is True


def test_crossed_pairs_are_not_balanced():
    assert brackets_balanced("([)]") is False


def test_an_unclosed_bracket_is_not_balanced():
    assert brackets_balanced("((x)") is False


def test_a_closing_bracket_first_is_not_balanced():
    assert brackets_balanced(")(") is False
