"""Tests of running_max: the largest value seen so far, at each position."""

from solution import running_max


def test_empty_list_gives_empty_list():
    assert running_max([]) == []


def test_rising_values_are_kept():
    assert running_max([1, 2, 3]) == [1, 2, 3]


def test_a_drop_keeps_the_earlier_maximum():
    assert running_max([3, 1, 2, 5, 4]) == [3, 3, 3, 5, 5]


def test_negative_values():
    assert running_max([-4, -7, -2]) == [-4, -4, -2]


def test_the_input_is_left_alone():
    values = [2, 1]
    running_max(values)
    assert values == [2, 1]
