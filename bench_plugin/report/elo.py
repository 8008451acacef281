"""Elo ratings from session scores, as BackroomsBench updates them: pure functions.

A session gives each of its models a score (BackroomsBench: the consensus's averaged 0-100
score). For every unordered pair (a, b), in the session's order, the higher score wins (1 / 0,
0.5 each on a tie) and ``K * (actual - expected)`` is added to each side's change. The changes of
all pairs are summed **before** any rating moves; then every rating moves at once and is rounded.

``expected_from``:

- ``session_scores`` (BackroomsBench's quirk): ``E_a = 1 / (1 + 10^((s_b - s_a) / 400))`` with the
  session's own scores, so E stays near 0.5 and a win is worth about K/2 whatever the ratings.
- ``ratings`` (textbook Elo): the same formula with the ratings before the session.

Example (``session_scores``, K=32): a model scoring 90 against 94, 89, 88 and 87 loses one pair
(-15.82) and wins three (+15.95, +15.91, +15.86): its rating moves by +31.9.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.suite.leaderboard import EloSettings

EXPECTED_FROM = ("session_scores", "ratings")


def expected_score(own: float, other: float) -> float:
    """The logistic expected score of ``own`` against ``other`` on the 400-point scale."""
    return 1.0 / (1.0 + float(10.0 ** ((other - own) / 400.0)))


def actual_score(own: float, other: float) -> float:
    """1 for the higher score, 0 for the lower, 0.5 each on a tie."""
    return 1.0 if own > other else 0.0 if own < other else 0.5


def session_changes(
    scores: Mapping[str, float], ratings: Mapping[str, float], settings: EloSettings
) -> dict[str, float]:
    """Each model's rating change from one session, unrounded: the sum over every pair it is in.

    Args:
        scores: model -> its score in this session, in the session's order.
        ratings: model -> its rating before the session (read only with ``expected_from: ratings``).
        settings: K and what the expected score comes from.
    """
    models = list(scores)
    changes = dict.fromkeys(models, 0.0)
    for index, first in enumerate(models):
        for second in models[index + 1 :]:
            if settings.expected_from == "ratings":
                expected = expected_score(ratings[first], ratings[second])
            else:
                expected = expected_score(scores[first], scores[second])
            actual = actual_score(scores[first], scores[second])
            changes[first] += settings.k * (actual - expected)
            changes[second] += settings.k * ((1.0 - actual) - (1.0 - expected))
    return changes


def empty_board() -> dict[str, Any]:
    """A leaderboard with no session yet, in BackroomsBench's ``leaderboard.json`` layout."""
    return {"elo_ratings": {}, "sessions": [], "model_history": {}}


def apply_sessions(
    board: Mapping[str, Any], sessions: Sequence[Mapping[str, Any]], settings: EloSettings
) -> dict[str, Any]:
    """A new leaderboard: ``board`` with ``sessions`` applied one after another.

    Args:
        board: ``{"elo_ratings", "sessions", "model_history"}`` (left as it is).
        sessions: each ``{"id", "timestamp", "scenario", "scores"}``; ``scores`` maps model -> score.
        settings: K, start rating, expected-score source and rounding.

    Returns:
        The board with each session appended to ``sessions`` (with ``participants``, the models in
        score order as given), each model's ``elo_ratings`` moved and rounded, and one entry per model
        in ``model_history``: ``timestamp``, ``score``, ``elo_before``, ``elo_after``, ``elo_change``
        (rounded) and ``session`` (the session's id). A new model starts at ``initial``.
    """
    out = copy.deepcopy(dict(board))
    ratings: dict[str, float] = out.setdefault("elo_ratings", {})
    history: dict[str, list[dict[str, Any]]] = out.setdefault("model_history", {})
    applied: list[dict[str, Any]] = out.setdefault("sessions", [])
    for session in sessions:
        scores = {str(model): float(score) for model, score in session["scores"].items()}
        for model in scores:
            if model not in ratings:
                ratings[model] = settings.initial
                history.setdefault(model, [])
        changes = session_changes(scores, ratings, settings)
        for model, change in changes.items():
            before = ratings[model]
            after = round(before + change, settings.decimals)
            ratings[model] = after
            history[model].append({"timestamp": session.get("timestamp"), "score": session["scores"][model],
                                   "elo_before": before, "elo_after": after,
                                   "elo_change": round(change, settings.decimals), "session": session.get("id")})
        applied.append({"timestamp": session.get("timestamp"), "scenario": session.get("scenario"),
                        "scores": dict(session["scores"]), "participants": list(scores), "id": session.get("id")})
    return out
