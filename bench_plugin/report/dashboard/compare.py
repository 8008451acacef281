"""Model against model, as the summary computed it: paired differences with Holm tiers, ratings and the saved Elo.

Readers of ``summary["comparisons"]``, ``summary["ratings"]`` and a suite's ``leaderboard`` (the
Elo kept across runs). Missing keys give empty figures: the dashboard then says why a chart is absent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.report.dashboard.figures import number


@dataclass(frozen=True)
class PairFigures:
    """Model ``a`` against model ``b`` on the cases both scored (``a`` ranked above ``b``).

    Attributes:
        a: the first model's key.
        b: the second model's key.
        n: paired cases.
        diff: mean of ``a - b`` (NaN if unknown).
        low: lower bound of its 95% interval (NaN if unknown).
        high: upper bound of its 95% interval.
        p_value: the test's two-sided p-value (NaN if untested).
        p_holm: the Holm-adjusted p-value (NaN if untested).
        significant: whether the pair differs after the correction.
    """

    a: str
    b: str
    n: int
    diff: float
    low: float
    high: float
    p_value: float
    p_holm: float
    significant: bool


@dataclass(frozen=True)
class Comparison:
    """Every compared pair of a suite's models and the tiers the tests cannot separate.

    Attributes:
        pairs: ``(a, b)`` -> figures.
        tiers: model keys grouped, best tier first.
        method: the test, the correction and the unit, as one sentence.
    """

    pairs: Mapping[tuple[str, str], PairFigures]
    tiers: list[list[str]]
    method: str

    def get(self, row: str, column: str) -> tuple[PairFigures, float] | None:
        """The pair of ``row`` and ``column``, and the sign that makes its difference read row minus column."""
        if (row, column) in self.pairs:
            return self.pairs[row, column], 1.0
        if (column, row) in self.pairs:
            return self.pairs[column, row], -1.0
        return None


def _nan(value: Any) -> float:
    found = number(value)
    return math.nan if found is None else found


def comparison_of(suite: Mapping[str, Any]) -> Comparison | None:
    """The summary's paired comparisons of the suite, or None when it has none (fewer than two models)."""
    found = suite.get("comparisons")
    if not isinstance(found, Mapping) or not isinstance(found.get("pairs"), list):
        return None
    pairs = {}
    for row in found["pairs"]:
        if isinstance(row, Mapping) and row.get("a") is not None and row.get("b") is not None:
            a, b = str(row["a"]), str(row["b"])
            pairs[a, b] = PairFigures(a, b, int(row.get("n") or 0), _nan(row.get("diff")), _nan(row.get("ci_low")),
                                      _nan(row.get("ci_high")), _nan(row.get("p_value")), _nan(row.get("p_holm")),
                                      bool(row.get("significant")))
    tiers = [[str(model) for model in tier] for tier in found.get("tiers") or [] if isinstance(tier, list)]
    test = str(found.get("test_name") or found.get("test") or "paired test")
    correction = "Holm" if found.get("correction") == "holm" else str(found.get("correction") or "no")
    alpha = number(found.get("alpha"))
    unit = "tasks (runs repeat)" if found.get("unit") == "task" else "cases"
    method = (f"mean difference over the cases both models scored, row minus column, with a 95% paired bootstrap "
              f"interval over {unit}; {test}, {correction}-corrected over all pairs"
              + (f" at {alpha:g}" if alpha is not None else ""))
    return Comparison(pairs, tiers, method)


@dataclass(frozen=True)
class Rating:
    """One model's Bradley-Terry rating with its win / loss / tie record.

    Attributes:
        model: the model's key (or the label a pairwise judgment named).
        rating: the rating on the Elo-like scale (mean 1000).
        low: lower bound of its 95% bootstrap interval (NaN if unknown).
        high: upper bound of its 95% bootstrap interval.
        games: comparisons it took part in.
        record: ``win``, ``loss``, ``tie``, ``win_rate``, ``loss_rate``, ``win_rate_adjusted`` (FastChat's), if known.
    """

    model: str
    rating: float
    low: float
    high: float
    games: int
    record: Mapping[str, Any]


@dataclass(frozen=True)
class RatingSet:
    """The ratings of one source of games.

    Attributes:
        title: where the games come from ("per-case scores", "pairwise judge J").
        ratings: best first.
        note: how many games, how many dropped, the position bias of a pairwise judge.
    """

    title: str
    ratings: list[Rating]
    note: str


def _rating_set(title: str, found: Mapping[str, Any]) -> RatingSet | None:
    records = {str(row.get("model")): row for row in found.get("win_rates") or [] if isinstance(row, Mapping)}
    ratings = [Rating(str(row.get("model")), _nan(row.get("rating")), _nan(row.get("ci_low")), _nan(row.get("ci_high")),
                      int(row.get("games") or 0), records.get(str(row.get("model")), {}))
               for row in found.get("bradley_terry") or [] if isinstance(row, Mapping) and number(row.get("rating"))]
    if not ratings:
        return None
    note = f"{found.get('comparisons', found.get('games', 0))} games rated"
    if found.get("dropped"):
        note += f", {found['dropped']} dropped (a failed judge call)"
    bias = found.get("position_bias")
    if isinstance(bias, Mapping) and number(bias.get("rate")) is not None:
        note += (f"; the judge picked the answer shown first in {bias['rate']:.0%} of {bias.get('n')} decided "
                 f"verdicts (binomial p = {_nan(bias.get('p_value')):.3g})")
    return RatingSet(title, ratings, note)


def rating_sets(suite: Mapping[str, Any]) -> list[RatingSet]:
    """The summary's Bradley-Terry ratings: from per-case scores, then from each pairwise judge."""
    found = suite.get("ratings")
    if not isinstance(found, Mapping):
        return []
    out = []
    if isinstance(found.get("scores"), Mapping) and (scores := _rating_set("From per-case scores", found["scores"])):
        out.append(scores)
    for entry in found.get("pairwise") or []:
        if not isinstance(entry, Mapping):
            continue
        rated = _rating_set(f"From pairwise judge {entry.get('component')}", entry)
        if rated is not None:
            out.append(rated)
    return out


EloRow = tuple[str, float, float | None, int]
"""A model's saved Elo: ``(name, elo, change, sessions)``."""


def elo_rows(suite: Mapping[str, Any]) -> list[EloRow]:
    """The suite's saved Elo leaderboard (``leaderboard:``) as ``(name, elo, change, sessions)``, best first."""
    board = suite.get("leaderboard")
    if not isinstance(board, Mapping):
        return []
    rows = []
    for entry in board.get("ratings") or []:
        elo = number(entry.get("elo"))
        if elo is not None:
            rows.append((str(entry.get("model")), elo, number(entry.get("change")), int(entry.get("sessions") or 0)))
    return rows
