"""Deterministic text vectors for offline embeddings: hashed character trigrams, normalised.

The offline providers (echo, scripted, replay) and the mock server's ``/v1/embeddings`` answer with
these, so a ``similar`` scorer runs with no network and gives the same number everywhere. They
measure spelling, not meaning: the same words in another order score 1.0, texts that share
most words and word pieces come out close ("... capital of France is Paris" and "... is Lyon"
about 0.84), unrelated texts near 0.1. Pure Python: the mock server imports it without numpy.
"""

from __future__ import annotations

import math
import zlib

DIMENSIONS = 512
"""Length of a vector unless the caller asks for another (the mock honours ``dimensions``)."""


def hashed_vector(text: str, dimensions: int = DIMENSIONS) -> tuple[float, ...]:
    """The text's character-trigram counts hashed into ``dimensions`` buckets, with length 1.

    Words are lower-cased and padded with a space each side, so ``"cat"`` counts `` ca``, ``cat``
    and ``at ``. A text without letters or digits is the zero vector.

    Example:
        >>> round(sum(a * b for a, b in zip(hashed_vector("the cat sat"), hashed_vector("The cat sat!"))), 3)
        1.0
    """
    counts = [0.0] * dimensions
    for word in _words(text):
        padded = f" {word} "
        for start in range(len(padded) - 2):
            counts[zlib.crc32(padded[start : start + 3].encode("utf-8")) % dimensions] += 1.0
    norm = math.sqrt(sum(count * count for count in counts))
    return tuple(count / norm for count in counts) if norm else tuple(counts)


def _words(text: str) -> list[str]:
    """Runs of letters and digits, lower-cased (punctuation and spacing do not count)."""
    words, current = [], []
    for char in text.lower():
        if char.isalnum():
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words

