"""Tests of nth_prime: the n-th prime number, counting from 1."""

import pytest
from solution import nth_prime


def test_the_first_prime_is_two():
    assert nth_prime(1) == 2


def test_the_sixth_prime():
    assert nth_prime(6) == 13


def test_the_hundredth_prime():
    assert nth_prime(100) == 541


def test_n_below_one_is_refused():
    with pytest.raises(ValueError):
        nth_prime(0)
