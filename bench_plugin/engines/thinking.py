"""Reasoning text: split a reply into what the model thought and what it answered."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench_plugin.suite.spec import ThinkingSpec


@dataclass(frozen=True)
class ThinkingSplit:
    """A reply split by ``split_thinking``.

    ``format_valid`` is None when the model declares no ``thinking:`` (nothing was checked).
    """

    answer: str
    thinking: str | None = None
    format_valid: bool | None = None


def split_thinking(text: str, spec: ThinkingSpec | None) -> ThinkingSplit:
    """Split ``text`` at the model's thinking tags.

    The format is valid when exactly one of the declared tag pairs is present, its opening and
    closing tags appear once each (compared case-insensitively) and in that order. Then the
    thinking is the stripped text between the tags and the answer the stripped text after the
    closing tag. Otherwise the answer is the whole text, unchanged, and the thinking None.

    Example:
        >>> split_thinking("<think>2+2</think> 4", ThinkingSpec())
        ThinkingSplit(answer='4', thinking='2+2', format_valid=True)
    """
    if spec is None:
        return ThinkingSplit(answer=text)
    found = [(_find_all(text, opening), _find_all(text, closing)) for opening, closing in spec.tags]
    present = [(opens, closes) for opens, closes in found if opens or closes]
    if len(present) != 1:
        return ThinkingSplit(answer=text, format_valid=False)
    opens, closes = present[0]
    if len(opens) != 1 or len(closes) != 1 or closes[0].start() < opens[0].end():
        return ThinkingSplit(answer=text, format_valid=False)
    thinking = text[opens[0].end() : closes[0].start()].strip()
    return ThinkingSplit(answer=text[closes[0].end() :].strip(), thinking=thinking, format_valid=True)


def _find_all(text: str, tag: str) -> list[re.Match[str]]:
    # a regex rather than text.lower(): lowercasing may change lengths, and so the offsets
    return list(re.finditer(re.escape(tag), text, re.IGNORECASE)) if tag else []
