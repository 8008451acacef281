"""split_thinking: reasoning text is split from the answer only when exactly one tag pair is present."""

from __future__ import annotations

import pytest

from bench_plugin.core.endpoints import ThinkingSpec
from bench_plugin.core.transcript import ThinkingSplit, split_thinking
from bench_plugin.suite.models import thinking_from_entry

THINK = ThinkingSpec()
TWO_PAIRS = ThinkingSpec(tags=(("<think>", "</think>"), ("<|start_of_scratchpad|>", "<|end_of_scratchpad|>")))


def test_valid_pair_gives_the_stripped_text_after_the_closing_tag() -> None:
    assert split_thinking("<think> 2 + 2 is 4 </think>\n\n The answer is 4. ", THINK) == ThinkingSplit(
        answer="The answer is 4.", thinking="2 + 2 is 4", format_valid=True
    )


def test_tags_are_compared_case_insensitively() -> None:
    split = split_thinking("<THINK>hmm</Think>Paris", THINK)
    assert (split.answer, split.thinking, split.format_valid) == ("Paris", "hmm", True)


@pytest.mark.parametrize(
    "text",
    [
        "<think>a</think><think>b</think>Paris",  # two pairs
        "<think>a</think></think>Paris",  # closing tag twice
        "<think>never closed Paris",  # missing closing tag
        "Paris</think>",  # missing opening tag
        "</think>Paris<think>",  # in the wrong order
    ],
)
def test_invalid_format_keeps_the_whole_text_as_the_answer(text: str) -> None:
    assert split_thinking(text, THINK) == ThinkingSplit(answer=text, thinking=None, format_valid=False)


def test_missing_tags_are_an_invalid_format() -> None:
    assert split_thinking("Just Paris.", THINK) == ThinkingSplit("Just Paris.", None, False)


def test_without_thinking_nothing_is_checked() -> None:
    assert split_thinking("<think>a</think>b", None) == ThinkingSplit("<think>a</think>b", None, None)


def test_any_declared_pair_may_be_used_but_only_one() -> None:
    scratch = "<|start_of_scratchpad|>plan<|end_of_scratchpad|> done"
    assert split_thinking(scratch, TWO_PAIRS) == ThinkingSplit("done", "plan", True)
    both = "<think>a</think> " + scratch
    assert split_thinking(both, TWO_PAIRS).format_valid is False


def test_offsets_survive_text_whose_lowercase_is_longer() -> None:
    # "İ".lower() is two characters: offsets taken from a lowercased copy would cut the answer
    assert split_thinking("İİİ<think>x</think>answer", THINK).answer == "answer"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (None, None),
        (False, None),
        (True, THINK),
        ({}, THINK),
        ({"tags": [["<r>", "</r>"]]}, ThinkingSpec(tags=(("<r>", "</r>"),))),
    ],
)
def test_thinking_option_forms(entry: object, expected: ThinkingSpec | None) -> None:
    assert thinking_from_entry(entry) == expected
