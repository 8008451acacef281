"""Ratings beside the Elo: Bradley-Terry with bootstrap intervals, and FastChat's win / loss / tie table.

Two sources of games, each rated on its own:

- ``scores``: per-case score comparisons. On every case two models both finished with a score, the
  higher composite wins and equal composites tie. A game is one case, so both of FastChat's orders
  agree by construction.
- ``pairwise``: the suite's pairwise judgments (``llm_judge_pairwise`` components): the candidate
  against the other answer, judged in both orders, read with FastChat's rules (a win needs the same
  winner in both orders, anything else is a tie, a failed call drops the game), plus how often the
  judge picked the answer it was shown first (``statistics.position_bias``).

Ratings come from ``statistics.bradley_terry`` (400-point scale, mean 1000, one virtual tie per model against
the mean, percentile bootstrap over the report's resampling units: cases, or tasks when runs repeat) and the
table from ``statistics.fastchat_win_rates`` (FastChat's ``show_result.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bench_plugin.report.case_data import CaseKey, case_key, runs_repeat, score_of
from bench_plugin.report.statistics import (
    BradleyTerryResult,
    PairwiseGame,
    Verdict,
    bradley_terry,
    fastchat_win_rates,
    position_bias,
)
from bench_plugin.report.statistics.core import N_BOOT, FloatArray, IntArray, rounded, seed_for
from bench_plugin.results.record import CaseRecord

# the candidate's verdicts per order, in FastChat's labels: order 1 shows the candidate (model_1) as A
_ORDER_1: dict[str | None, Verdict] = {"first": "model_1", "second": "model_2", "tie": "tie", None: "error"}
_ORDER_2: dict[str | None, Verdict] = {"first": "model_2", "second": "model_1", "tie": "tie", None: "error"}


Tally = tuple[str, str, int, int, int, Hashable]
"""``(model, other, wins, losses, ties, unit)``: one pair of models on one resampling unit."""

PRIOR_GAMES = 1.0
"""Virtual ties of each rated model against a reference at the mean (``statistics.bradley_terry``): a model that
won every game of a small run had a rating set by the fit's numerical penalty alone, 2,000 points above the
others from three games."""


def resampling_unit(record: CaseRecord, by_task: bool) -> Hashable:
    """What a rating's bootstrap draws, as the report's other intervals do: the case, or its task when runs repeat."""
    return record.task if by_task else case_key(record)


def score_tallies(records: Sequence[CaseRecord], models: Sequence[str]) -> list[Tally]:
    """Per pair of models (in ``models`` order) and resampling unit: wins, losses and ties over the cases both scored.

    The higher composite wins, equal composites tie; each case is one game.
    """
    grid = _ScoreGrid.of(records, models)
    tallies: list[Tally] = []
    for first, second in itertools.combinations(range(len(models)), 2):
        tallies += grid.tallies(first, second)
    return tallies


@dataclass(frozen=True)
class _ScoreGrid:
    """The scores of a suite's cases: a row per case some model scored, a column per model (NaN: no score).

    Attributes:
        models: the models, in column order.
        scores: the grid.
        unit_of: each row's resampling unit, as an index into ``units``.
        units: the resampling units, first seen first.
    """

    models: Sequence[str]
    scores: FloatArray
    unit_of: IntArray
    units: list[Hashable]

    @classmethod
    def of(cls, records: Sequence[CaseRecord], models: Sequence[str]) -> _ScoreGrid:
        found, row_units = _scored_cells(records, models)
        grid = np.full((len(row_units), len(models)), np.nan)
        for row, column, score in reversed(found):  # the first record of a case wins, as everywhere else
            grid[row, column] = score
        unit_keys = list(dict.fromkeys(row_units))
        unit_index = {unit: index for index, unit in enumerate(unit_keys)}
        return cls(models, grid, np.array([unit_index[unit] for unit in row_units], dtype=np.int64), unit_keys)

    def tallies(self, first: int, second: int) -> list[Tally]:
        """The wins, losses and ties of model ``first`` against model ``second`` on each unit where both scored."""
        grid = self.scores
        both = ~np.isnan(grid[:, first]) & ~np.isnan(grid[:, second])
        mine, theirs, at = grid[both, first], grid[both, second], self.unit_of[both]
        wins, losses, games = (np.bincount(at, weights=weights, minlength=len(self.units)).astype(np.int64)
                               for weights in ((mine > theirs).astype(float), (mine < theirs).astype(float), None))
        return [(self.models[first], self.models[second], int(wins[unit]), int(losses[unit]),
                 int(games[unit] - wins[unit] - losses[unit]), self.units[unit])
                for unit in np.flatnonzero(games).tolist()]


def _scored_cells(
    records: Sequence[CaseRecord], models: Sequence[str]
) -> tuple[list[tuple[int, int, float]], list[Hashable]]:
    """Each score of ``models`` as ``(row, column, score)``, a row per case first seen first; each row's unit."""
    order = {model: index for index, model in enumerate(models)}
    by_task = runs_repeat(records)
    keys: dict[CaseKey, int] = {}
    units: dict[int, Hashable] = {}
    found: list[tuple[int, int, float]] = []
    for record in records:
        score = score_of(record)
        if score is not None and record.model in order:
            row = keys.setdefault(case_key(record), len(keys))
            units.setdefault(row, resampling_unit(record, by_task))
            found.append((row, order[record.model], score))
    return found, [units[row] for row in range(len(keys))]


def rate_tallies(tallies: Sequence[Tally], seed: int, n_boot: int = N_BOOT) -> dict[str, Any]:
    """Ratings and FastChat's table of score comparisons, from their tallies (see ``rate_games``).

    The same figures as ``rate_games`` over one game per case whose two orders agree, without
    building 100,000 games for a large run.
    """
    comparisons: list[tuple[str, str, float | None]] = []
    counts: list[int] = []
    units: list[Hashable] = []
    for first, second, wins, losses, ties, unit in tallies:
        comparisons += [(first, second, 1.0), (first, second, 0.0), (first, second, 0.5)]
        counts += [wins, losses, ties]
        units += [unit] * 3
    tally = _records_of(tallies)
    fitted = bradley_terry(comparisons, n_boot=n_boot, seed=seed, counts=counts, clusters=units,
                           prior_games=PRIOR_GAMES)
    rows = [_win_rates(model, win, loss, tie) for model, (win, loss, tie) in tally.items() if win + loss + tie]
    rows.sort(key=lambda row: (-(row["win_rate_adjusted"] or 0.0), row["model"]))
    games = sum(counts)
    return {"games": games, "dropped": 0, "comparisons": fitted.n_comparisons, "n_boot": n_boot,
            "units": len(set(units)), "bradley_terry": _ratings(fitted), "win_rates": rows}


def _records_of(tallies: Sequence[Tally]) -> dict[str, list[int]]:
    """Model -> [wins, losses, ties] over every pair it is in, first seen first."""
    tally: dict[str, list[int]] = {}
    for first, second, wins, losses, ties, _ in tallies:
        for model, won, lost in ((first, wins, losses), (second, losses, wins)):
            row = tally.setdefault(model, [0, 0, 0])
            row[0], row[1], row[2] = row[0] + won, row[1] + lost, row[2] + ties
    return tally


def _win_rates(model: str, win: int, loss: int, tie: int) -> dict[str, Any]:
    """FastChat's show_result.py: each rate over the model's games, a tie half a win when adjusted."""
    total = win + loss + tie
    return {"model": model, "win": win, "loss": loss, "tie": tie, "win_rate": rounded(win / total),
            "loss_rate": rounded(loss / total), "win_rate_adjusted": rounded((win + 0.5 * tie) / total)}


def pairwise_games(records: Sequence[CaseRecord]) -> dict[str, list[tuple[PairwiseGame, Hashable]]]:
    """Per pairwise component, one game per judged case, with its resampling unit (``resampling_unit``).

    A game is the case's model against the other answer. The other answer is named by its label; a label
    that is a suite model's label becomes that model. A case judged against its own model is left out.
    """
    by_label = {record.model_label or record.model: record.model for record in records}
    by_task = runs_repeat(records)
    games: dict[str, list[tuple[PairwiseGame, Hashable]]] = {}
    for record in records:
        for name, component in record.components.items():
            game = _pairwise_game(record, component.get("pairwise"), by_label)
            if game is not None:
                games.setdefault(name, []).append((game, resampling_unit(record, by_task)))
    return games


def _pairwise_game(record: CaseRecord, found: Any, by_label: Mapping[str, str]) -> PairwiseGame | None:
    """The game of a case's pairwise judgment (``found``); None when there is none, or it is against its own model."""
    if not isinstance(found, Mapping):
        return None
    other = by_label.get(str(found.get("against")), str(found.get("against")))
    verdicts = {order.get("order"): order.get("verdict") for order in found.get("orders") or []}
    if other == record.model:
        return None
    return PairwiseGame(record.model, other, _ORDER_1.get(verdicts.get(1), "error"),
                        _ORDER_2.get(verdicts.get(2), "error"))


def rate_games(games: Sequence[PairwiseGame], seed: int, n_boot: int = N_BOOT,
               units: Sequence[Hashable] | None = None) -> dict[str, Any]:
    """Bradley-Terry ratings and FastChat's table of one set of games.

    ``units``: each game's resampling unit (its case, or its task when runs repeat); None: each game its own.

    Returns:
        ``{"games", "dropped" (a failed call in either order), "comparisons" (games rated), "n_boot", "units",
        "bradley_terry": [{"model", "rating", "ci_low", "ci_high", "games"}], "win_rates": [{"model",
        "win", "loss", "tie", "win_rate", "loss_rate", "win_rate_adjusted"}]}``.
    """
    outcomes = [(game.model_1, game.model_2, _outcome(game)) for game in games]
    clusters = list(units) if units is not None else list(range(len(games)))
    fitted = bradley_terry(outcomes, n_boot=n_boot, seed=seed, clusters=clusters, prior_games=PRIOR_GAMES)
    return {
        "games": len(games),
        "dropped": sum(map(_failed, games)),
        "comparisons": fitted.n_comparisons,
        "n_boot": n_boot,
        "units": len(set(clusters)),
        "bradley_terry": _ratings(fitted),
        "win_rates": [_rounded(asdict(row)) for row in fastchat_win_rates(games)],
    }


def _rounded(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row with its floats rounded as the summary keeps them."""
    return {key: rounded(value) if isinstance(value, float) else value for key, value in row.items()}


def _failed(game: PairwiseGame) -> bool:
    """Whether the judge call failed in either order."""
    return "error" in (game.g1_winner, game.g2_winner)


def _outcome(game: PairwiseGame) -> float | None:
    """FastChat's verdict as model_1's result: a win in both orders, else a tie; None drops a failed call."""
    if _failed(game):
        return None
    if game.g1_winner == game.g2_winner and game.g1_winner != "tie":
        return 1.0 if game.g1_winner == "model_1" else 0.0
    return 0.5


def _ratings(fitted: BradleyTerryResult) -> list[dict[str, Any]]:
    return [
        {"model": entry.model, "rating": rounded(entry.rating), "ci_low": rounded(entry.ci_low),
         "ci_high": rounded(entry.ci_high), "games": entry.games}
        for entry in fitted.ratings
    ]


def summarize_ratings(path: str, records: Sequence[CaseRecord], models: Sequence[str]) -> dict[str, Any] | None:
    """The section's data: ratings of score comparisons and of each pairwise judge component.

    Returns:
        ``{"scores": rate_tallies(...) or None, "pairwise": [rate_games(...) + "component", "position_bias"]}``;
        None when there is nothing to rate (fewer than two models and no pairwise judgment).
    """
    tallies = score_tallies(records, models) if len(models) >= 2 else []
    pairwise = [_rate_judge(path, name, found) for name, found in pairwise_games(records).items()]
    if not tallies and not pairwise:
        return None
    return {"scores": rate_tallies(tallies, seed_for(path, "scores")) if tallies else None, "pairwise": pairwise}


def _rate_judge(path: str, name: str, found: Sequence[tuple[PairwiseGame, Hashable]]) -> dict[str, Any]:
    """The ratings of one pairwise component's games, with how often its judge picked the answer shown first."""
    games = [game for game, _ in found]
    rated = rate_games(games, seed_for(path, "pairwise", name), units=[unit for _, unit in found])
    bias = position_bias(games)
    rated.update(component=name, position_bias={
        "first": bias.first, "second": bias.second, "n": bias.n, "rate": rounded(bias.rate),
        "p_value": rounded(bias.p_value)})
    return rated
