"""Did-you-mean hints for a word that is not among the valid choices: the one copy every message uses."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The valid choice ``word`` was most likely meant to be; a choice equal but for case comes first.

    Example:
        >>> closest("promt", ["prompt", "system"])
        'prompt'
    """
    options = list(choices)
    same_but_case = [choice for choice in options if choice.lower() == word.lower()]
    if same_but_case:
        return same_but_case[0]
    close = difflib.get_close_matches(word, options, n=1, cutoff=cutoff)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"did you mean 'X'?"``, or an empty string when nothing is close."""
    match = closest(word, choices)
    return f"did you mean {match!r}?" if match is not None else ""


def choices_hint(word: str, choices: Iterable[str], *, label: str = "choose from") -> str:
    """``"did you mean 'X'? choose from: a, b, c"`` (without the first part when nothing is close)."""
    options = list(choices)
    listing = f"{label}: {', '.join(options) or 'none'}"
    guess = did_you_mean(word, options)
    return f"{guess} {listing}" if guess else listing
