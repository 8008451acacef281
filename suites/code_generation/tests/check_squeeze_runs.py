"""Tests of squeeze_runs: each run of one character becomes the character and the run's length."""

from solution import squeeze_runs


def test_empty_text():
    assert squeeze_runs("") == ""


def test_runs_of_several_characters():
    assert squeeze_runs("aaabcc") == "a3b1c2"


def test_a_character_that_comes_back_starts_a_new_run():
    assert squeeze_runs("aabaa") == "a2b1a2"


def test_long_runs_use_every_digit():
    assert squeeze_runs("z" * 12) == "z12"
