"""Which expected call each of the model's calls answers: the most pairs, in any order or in the written order.

``matches[i][j]`` says whether actual call ``j`` is expected call ``i``. In any order, the most pairs is a maximum
bipartite matching (augmenting paths: a few calls, so the simple algorithm is the right one); in order, it is the
longest common subsequence. Each function returns expected index -> actual index for the paired calls.
"""

from __future__ import annotations

from collections.abc import Sequence

Matches = Sequence[Sequence[bool]]


def pair_any_order(matches: Matches) -> dict[int, int]:
    """The most pairs, any actual call for any expected one (parallel calls come in any order)."""
    owner: dict[int, int] = {}  # actual -> expected
    for expected in range(len(matches)):
        _augment(matches, expected, owner, set())
    return {expected: actual for actual, expected in owner.items()}


def _augment(matches: Matches, expected: int, owner: dict[int, int], seen: set[int]) -> bool:
    for actual, held in enumerate(matches[expected]):
        if held and actual not in seen:
            seen.add(actual)
            if actual not in owner or _augment(matches, owner[actual], owner, seen):
                owner[actual] = expected
                return True
    return False


def pair_in_order(matches: Matches) -> dict[int, int]:
    """The most pairs whose actual calls come in the expected calls' order (a longest common subsequence)."""
    rows = len(matches)
    columns = len(matches[0]) if rows else 0
    best = [[0] * (columns + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(columns - 1, -1, -1):
            best[i][j] = best[i + 1][j + 1] + 1 if matches[i][j] else max(best[i + 1][j], best[i][j + 1])
    return _walk(matches, best)


def _walk(matches: Matches, best: list[list[int]]) -> dict[int, int]:
    pairs: dict[int, int] = {}
    i = j = 0
    while i < len(matches) and j < len(matches[0]):
        if matches[i][j] and best[i][j] == best[i + 1][j + 1] + 1:
            pairs[i] = j
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
