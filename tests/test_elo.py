"""Elo as BackroomsBench computes it, and the textbook variant.

BackroomsBench's way: expected scores from the session's scores, changes summed before they apply, rounded
to 0.1.
"""

from __future__ import annotations

import pytest

from bench_plugin.report.elo import actual_score, apply_sessions, empty_board, expected_score, session_changes
from bench_plugin.suite.leaderboard import EloSettings

# BackroomsBench's session 1: Claude Opus 4.5 scored 90 against 94, 89, 88 and 87
SESSION = {"Claude Opus 4.5": 90, "Gemini 3 Pro": 94, "GPT 5.1": 89, "Grok 4": 88, "DeepSeek R1": 87}


def test_the_expected_score_is_the_logistic_on_400_points() -> None:
    assert expected_score(90, 94) == pytest.approx(1 / (1 + 10 ** (4 / 400)))
    assert expected_score(1500, 1500) == 0.5
    assert actual_score(90, 94) == 0 and actual_score(90, 89) == 1 and actual_score(70, 70) == 0.5


def test_the_hand_worked_session_gives_plus_31_9() -> None:
    # by hand, K = 32, E from the session scores:
    #   vs 94: E = 1/(1+10^(4/400))  = 0.494244, lost: 32 * (0 - 0.494244) = -15.8158
    #   vs 89: E = 1/(1+10^(-1/400)) = 0.501439, won:  32 * (1 - 0.501439) = +15.9540
    #   vs 88: E = 1/(1+10^(-2/400)) = 0.502878, won:  32 * (1 - 0.502878) = +15.9079
    #   vs 87: E = 1/(1+10^(-3/400)) = 0.504317, won:  32 * (1 - 0.504317) = +15.8619
    #   sum = +31.908 -> +31.9
    changes = session_changes(SESSION, {}, EloSettings())
    assert changes["Claude Opus 4.5"] == pytest.approx(31.908, abs=1e-3)
    assert sum(changes.values()) == pytest.approx(0, abs=1e-9)  # every pair gives and takes the same
    board = apply_sessions(empty_board(), [{"id": "s1", "timestamp": "20251203_101500", "scenario": "Backrooms Classic",
                                            "scores": SESSION}], EloSettings())
    assert board["elo_ratings"]["Claude Opus 4.5"] == 1531.9
    assert board["model_history"]["Claude Opus 4.5"] == [
        {"timestamp": "20251203_101500", "score": 90, "elo_before": 1500.0, "elo_after": 1531.9, "elo_change": 31.9,
         "session": "s1"}
    ]
    assert board["sessions"] == [{"timestamp": "20251203_101500", "scenario": "Backrooms Classic", "scores": SESSION,
                                  "participants": list(SESSION), "id": "s1"}]
    assert board["elo_ratings"]["Gemini 3 Pro"] == 1563.0  # four wins of about +15.7


def test_changes_are_summed_before_any_rating_moves() -> None:
    # with the textbook variant the order of pairs would matter if ratings moved pair by pair
    start = {"elo_ratings": {"A": 1600.0, "B": 1500.0, "C": 1400.0}, "sessions": [],
             "model_history": {"A": [], "B": [], "C": []}}
    settings = EloSettings(expected_from="ratings")
    board = apply_sessions(start, [{"id": "x", "scores": {"C": 80, "B": 70, "A": 60}}], settings)
    # C beats B (E = 1/(1+10^(100/400)) = 0.359935) and A (E = 0.240253): 32 * (0.640065 + 0.759747) = 44.794
    assert board["elo_ratings"]["C"] == 1444.8
    # A loses both: 32 * (-0.759747 - 0.640065) = -44.794
    assert board["elo_ratings"]["A"] == 1555.2
    assert board["elo_ratings"]["B"] == 1500.0  # +20.48 against A, -20.48 against C
    assert start["elo_ratings"]["A"] == 1600.0  # the input board is left as it was


def test_session_scores_and_ratings_give_different_expectations() -> None:
    ratings = {"A": 1800.0, "B": 1400.0}
    quirk = session_changes({"A": 80, "B": 70}, ratings, EloSettings())
    textbook = session_changes({"A": 80, "B": 70}, ratings, EloSettings(expected_from="ratings"))
    assert quirk["A"] == pytest.approx(32 * (1 - expected_score(80, 70)))  # about +15.5 whoever A is
    assert textbook["A"] == pytest.approx(32 * (1 - 10 / 11))  # E = 1/(1+10^-1): a favourite gains 2.9


def test_a_tie_moves_nobody_on_session_scores_and_new_models_start_at_initial() -> None:
    board = apply_sessions(empty_board(), [{"id": "t", "scores": {"A": 75, "B": 75}}], EloSettings(initial=1000))
    assert board["elo_ratings"] == {"A": 1000, "B": 1000}
    assert board["model_history"]["A"][0]["elo_change"] == 0
