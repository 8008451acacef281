"""FastChat's pairwise judgments: the win/loss/tie table of ``show_result.py`` and the judge's position bias."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bench_plugin.report.statistics.core import binomial_p_value

Verdict = Literal["model_1", "model_2", "tie", "error"]
_VERDICTS = ("model_1", "model_2", "tie", "error")


@dataclass(frozen=True)
class PairwiseGame:
    """One FastChat pairwise judgment row: a question judged in both answer orders.

    Attributes:
        model_1: the model shown as Assistant A in the first order.
        model_2: the model shown as Assistant A in the second (swapped) order.
        g1_winner: verdict of the first order (``model_1`` shown first).
        g2_winner: verdict of the swapped order (``model_2`` shown first), already translated back
            to the row's own labels, so equal verdicts mean the same model won in both positions.
    """

    model_1: str
    model_2: str
    g1_winner: Verdict
    g2_winner: Verdict

    def __post_init__(self) -> None:
        """Reject verdicts FastChat does not write (it would silently treat them as a model_2 win)."""
        for verdict in (self.g1_winner, self.g2_winner):
            if verdict not in _VERDICTS:
                raise ValueError(f"unknown verdict {verdict!r}; expected one of {_VERDICTS}")

    @classmethod
    def from_fastchat(cls, row: Mapping[str, Any]) -> PairwiseGame:
        """Build a game from one line of FastChat's ``*_pair.jsonl`` (extra fields are ignored).

        Args:
            row: the decoded JSON object with ``model_1``, ``model_2``, ``g1_winner``, ``g2_winner``.

        Returns:
            The game.
        """
        return cls(str(row["model_1"]), str(row["model_2"]), row["g1_winner"], row["g2_winner"])


@dataclass(frozen=True)
class WinRateRow:
    """One line of FastChat ``show_result.py``'s pairwise table.

    Attributes:
        model: the model.
        win: games won in both orders.
        loss: games lost in both orders.
        tie: games tied in the first order, or whose two orders disagree.
        win_rate: ``win / (win + loss + tie)``.
        loss_rate: ``loss / (win + loss + tie)``.
        win_rate_adjusted: ``(win + 0.5 * tie) / (win + loss + tie)``.
    """

    model: str
    win: int
    loss: int
    tie: int
    win_rate: float
    loss_rate: float
    win_rate_adjusted: float


def _games(games: Iterable[PairwiseGame | Mapping[str, Any]]) -> list[PairwiseGame]:
    return [game if isinstance(game, PairwiseGame) else PairwiseGame.from_fastchat(game) for game in games]


def fastchat_win_rates(
    games: Iterable[PairwiseGame | Mapping[str, Any]], *, baseline: str | None = None
) -> list[WinRateRow]:
    """Win/loss/tie table exactly as FastChat's ``show_result.py --mode pairwise-all`` computes it.

    Rules (FastChat ``display_result_pairwise``):

    1. A row whose first- **or** second-order verdict is ``error`` (a failed judge call) is dropped.
    2. If the first-order verdict is ``tie``, or the two orders disagree (opposite winners, or a win
       in one order and a tie in the other), both models get a tie.
    3. Otherwise both orders name the same model: it gets a win, the other a loss.
    4. Rates divide by the model's games ``win + loss + tie``; ties count half in
       ``win_rate_adjusted``. Rows are sorted by ``win_rate_adjusted``, highest first (ties by
       model name; pandas' own order between equal rates is unspecified).

    With ``baseline`` (``--mode pairwise-baseline --baseline-model``), only games involving the
    baseline are counted and the baseline's own row is left out. FastChat's ``--model-list`` filter
    (which checks ``model_1`` only) is not reproduced: filter the games before calling.

    Args:
        games: :class:`PairwiseGame` values or FastChat JSONL rows (mappings).
        baseline: optional baseline model.

    Returns:
        The table's rows (empty where FastChat would fail with ``KeyError: 'model'``).
    """
    tally: dict[str, list[int]] = {}
    for game in _games(games):
        if _counted(game, baseline):
            _tally_game(tally, game)
    rows = [_win_rate_row(model, *counts) for model, counts in tally.items() if model != baseline]
    return sorted(rows, key=lambda row: (-row.win_rate_adjusted, row.model))


def _counted(game: PairwiseGame, baseline: str | None) -> bool:
    """Whether FastChat counts the game: no failed judge call, and the baseline in it when there is one."""
    if "error" in (game.g1_winner, game.g2_winner):
        return False
    return baseline is None or baseline in (game.model_1, game.model_2)


def _tally_game(tally: dict[str, list[int]], game: PairwiseGame) -> None:
    """Add one game to the models' [win, loss, tie]: a tie unless both orders name the same winner."""
    for model in (game.model_1, game.model_2):
        tally.setdefault(model, [0, 0, 0])
    if game.g1_winner == "tie" or game.g1_winner != game.g2_winner:
        tally[game.model_1][2] += 1
        tally[game.model_2][2] += 1
        return
    winner, loser = (game.model_1, game.model_2) if game.g1_winner == "model_1" else (game.model_2, game.model_1)
    tally[winner][0] += 1
    tally[loser][1] += 1


def _win_rate_row(model: str, win: int, loss: int, tie: int) -> WinRateRow:
    total = win + loss + tie
    return WinRateRow(model, win, loss, tie, win / total, loss / total, (win + 0.5 * tie) / total)


@dataclass(frozen=True)
class PositionBias:
    """How often a pairwise judge picked the answer it was shown first.

    Attributes:
        first: single-order verdicts that picked the answer shown first (Assistant A).
        second: single-order verdicts that picked the answer shown second.
        n: ``first + second``: the non-tie, non-error single-order verdicts the rate is over.
        rate: ``first / n`` (None when ``n == 0``); 0.5 means no position preference.
        p_value: two-sided exact binomial p-value of ``first`` in ``n`` at 1/2 (1.0 when ``n == 0``).
    """

    first: int
    second: int
    n: int
    rate: float | None
    p_value: float


def position_bias(
    games: Iterable[PairwiseGame | Mapping[str, Any]], *, drop_error_games: bool = False
) -> PositionBias:
    """Count how often the judge picked the first-shown answer, over non-tie single-order verdicts.

    Each game holds two single-order verdicts: in the first order ``model_1`` is shown first, so
    ``g1_winner == "model_1"`` picked the first answer; in the swapped order ``model_2`` is shown
    first, so ``g2_winner == "model_2"`` did. ``tie`` and ``error`` verdicts are not counted.

    Args:
        games: :class:`PairwiseGame` values or FastChat JSONL rows.
        drop_error_games: also drop the other order of a game that has an ``error`` verdict (as
            :func:`fastchat_win_rates` drops the whole game); by default each verdict stands alone.

    Returns:
        A :class:`PositionBias`.
    """
    first = second = 0
    for game in _games(games):
        if drop_error_games and "error" in (game.g1_winner, game.g2_winner):
            continue
        picked = [_position_picked(game.g1_winner, "model_1"), _position_picked(game.g2_winner, "model_2")]
        first += picked.count("first")
        second += picked.count("second")
    n = first + second
    p_value = 1.0 if n == 0 else min(1.0, binomial_p_value(first, n))
    return PositionBias(first, second, n, None if n == 0 else first / n, p_value)


def _position_picked(verdict: Verdict, shown_first: Verdict) -> str | None:
    """``"first"`` when the verdict picked the answer shown first, ``"second"`` for the other model, else None."""
    if verdict in ("tie", "error"):
        return None
    return "first" if verdict == shown_first else "second"
