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
    pairs = {(pair.a, pair.b): pair for pair in map(_pair_figures, found["pairs"]) if pair is not None}
    return Comparison(pairs, _tiers(found), _method(found))


def _tiers(found: Mapping[str, Any]) -> list[list[str]]:
    return [[str(model) for model in tier] for tier in found.get("tiers") or [] if isinstance(tier, list)]


def _pair_figures(row: Any) -> PairFigures | None:
    """A row of the summary's pairs, or None when it does not name both models."""
    if not isinstance(row, Mapping) or row.get("a") is None or row.get("b") is None:
        return None
    return PairFigures(str(row["a"]), str(row["b"]), int(row.get("n") or 0), _nan(row.get("diff")),
                       _nan(row.get("ci_low")), _nan(row.get("ci_high")), _nan(row.get("p_value")),
                       _nan(row.get("p_holm")), bool(row.get("significant")))


def _method(found: Mapping[str, Any]) -> str:
    """The comparisons' figures, test, correction and unit, as one sentence."""
    test = str(found.get("test_name") or found.get("test") or "paired test")
    alpha = number(found.get("alpha"))
    unit = "tasks (runs repeat)" if found.get("unit") == "task" else "cases"
    return (f"mean difference over the cases both models scored, row minus column, with a 95% paired t interval "
            f"(cluster-robust) over {unit}; {test}, {_correction(found)}-corrected over all pairs"
            + (f" at {alpha:g}" if alpha is not None else ""))


def _correction(found: Mapping[str, Any]) -> str:
    return "Holm" if found.get("correction") == "holm" else str(found.get("correction") or "no")


@dataclass(frozen=True)
class Rating:
    """One model's Bradley-Terry rating with its win / loss / tie record.

    Attributes:
        model: the model's key (or the label a pairwise judgment named).
        rating: the rating on the Elo-like scale (mean 1000).
        low: lower bound of its 95% interval (NaN if unknown).
        high: upper bound of its 95% interval.
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
    records = _win_records(found)
    ratings = [_rating(row, records) for row in found.get("bradley_terry") or [] if _is_rated(row)]
    if not ratings:
        return None
    return RatingSet(title, ratings, _games_note(found) + _bias_note(found.get("position_bias")))


def _win_records(found: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Model -> its win / loss / tie record."""
    return {str(row.get("model")): row for row in found.get("win_rates") or [] if isinstance(row, Mapping)}


def _is_rated(row: Any) -> bool:
    return isinstance(row, Mapping) and bool(number(row.get("rating")))


def _rating(row: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]]) -> Rating:
    """A model's rating, with its win / loss / tie record when the summary has one."""
    model = str(row.get("model"))
    return Rating(model, _nan(row.get("rating")), _nan(row.get("ci_low")), _nan(row.get("ci_high")),
                  int(row.get("games") or 0), records.get(model, {}))


def _games_note(found: Mapping[str, Any]) -> str:
    """How many games were rated, and dropped."""
    note = f"{found.get('comparisons', found.get('games', 0))} games rated"
    if found.get("dropped"):
        note += f", {found['dropped']} dropped (a failed judge call)"
    return note


def _bias_note(bias: Any) -> str:
    """How often a pairwise judge picked the answer shown first, when the summary says."""
    if not isinstance(bias, Mapping) or number(bias.get("rate")) is None:
        return ""
    return (f"; the judge picked the answer shown first in {bias['rate']:.0%} of {bias.get('n')} decided "
            f"verdicts (binomial p = {_nan(bias.get('p_value')):.3g})")


def rating_sets(suite: Mapping[str, Any]) -> list[RatingSet]:
    """The summary's Bradley-Terry ratings: from per-case scores, then from each pairwise judge."""
    found = suite.get("ratings")
    if not isinstance(found, Mapping):
        return []
    sets = [_rating_set("From per-case scores", found["scores"])] if isinstance(found.get("scores"), Mapping) else []
    sets += _judge_rating_sets(found)
    return [rated for rated in sets if rated is not None]


def _judge_rating_sets(found: Mapping[str, Any]) -> list[RatingSet | None]:
    """The ratings of each pairwise judge (None: it rated no model)."""
    return [_rating_set(f"From pairwise judge {entry.get('component')}", entry)
            for entry in found.get("pairwise") or [] if isinstance(entry, Mapping)]


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
