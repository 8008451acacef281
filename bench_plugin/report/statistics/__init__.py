"""The report's statistics, one module per method.

- ``core``: array types, the missing-value rule (None/NaN is "no value", never zero), seeds, rounding.
- ``clusters``: which unit each case belongs to (a declared ``cluster``, the task, or the case).
- ``intervals``: the cluster t interval of many means at once (``cluster_means``, ``mean_ci``) and Wilson's
  interval of a proportion (``wilson_interval``).
- ``power``: the smallest difference a paired comparison could detect.
- ``paired``: two models case by case: the paired difference, the Wilcoxon and sign tests.
- ``tiers``: Holm's correction over many pairs, which pairs differ, and the tiers.
- ``repeats``: pass@k, pass^k and flakiness over repeated runs.
- ``ratings``: Bradley-Terry ratings on the Elo scale; ``pairwise``: FastChat's win rates and position bias.
- ``plain``: plain means, totals and rates of case results.
- ``leaderboard``, ``suite`` and ``markdown``: a suite's statistical figures for the summary, and their
  report.md sections. They read the report's other modules, so they are imported from their own
  module (``suite_statistics`` and the leaderboard's functions are also found here, on first use).

The names other modules import are re-exported here.
"""

from __future__ import annotations

from typing import Any

from bench_plugin.report.statistics.clusters import declared_cluster, figure_bounds, unit_labels
from bench_plugin.report.statistics.core import (
    CONFIDENCE,
    DECIMALS,
    N_BOOT,
    FloatArray,
    IntArray,
    Seed,
    rounded,
    seed_for,
    unit_codes,
)
from bench_plugin.report.statistics.intervals import (
    MIN_UNITS,
    MeanCI,
    ProportionCI,
    cluster_means,
    cluster_t,
    mean_ci,
    unit_sums,
    wilson_interval,
)
from bench_plugin.report.statistics.paired import (
    PairedDifference,
    SignTestResult,
    WilcoxonResult,
    paired_difference,
    sign_test,
    wilcoxon_signed_rank,
)
from bench_plugin.report.statistics.pairwise import (
    PairwiseGame,
    PositionBias,
    Verdict,
    WinRateRow,
    fastchat_win_rates,
    position_bias,
)
from bench_plugin.report.statistics.plain import known, mean, rate, total
from bench_plugin.report.statistics.ratings import BradleyTerryResult, ModelRating, bradley_terry
from bench_plugin.report.statistics.repeats import Flakiness, FlakinessLabel, flakiness_label, pass_at_k, pass_hat_k
from bench_plugin.report.statistics.tiers import PairKey, PValues, Significance, holm_adjust, significant_pairs, tiers

# these read the report's case table, which imports this package: imported when first asked for
_LATER = {
    "suite_statistics": "bench_plugin.report.statistics.suite",
    "rank_models": "bench_plugin.report.statistics.suite",
    "add_leaderboard_columns": "bench_plugin.report.statistics.leaderboard",
    "leaderboard_figures": "bench_plugin.report.statistics.leaderboard",
}


def __getattr__(name: str) -> Any:
    """The names of ``_LATER``, imported on first use."""
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LATER[name]), name)


__all__ = [
    "CONFIDENCE",
    "DECIMALS",
    "MIN_UNITS",
    "N_BOOT",
    "BradleyTerryResult",
    "Flakiness",
    "FlakinessLabel",
    "FloatArray",
    "IntArray",
    "MeanCI",
    "ModelRating",
    "PValues",
    "PairKey",
    "PairedDifference",
    "PairwiseGame",
    "PositionBias",
    "ProportionCI",
    "Seed",
    "SignTestResult",
    "Significance",
    "Verdict",
    "WilcoxonResult",
    "WinRateRow",
    "bradley_terry",
    "cluster_means",
    "cluster_t",
    "declared_cluster",
    "fastchat_win_rates",
    "figure_bounds",
    "flakiness_label",
    "holm_adjust",
    "known",
    "mean",
    "mean_ci",
    "paired_difference",
    "pass_at_k",
    "pass_hat_k",
    "position_bias",
    "rate",
    "rounded",
    "seed_for",
    "sign_test",
    "significant_pairs",
    "tiers",
    "total",
    "unit_codes",
    "unit_labels",
    "unit_sums",
    "wilcoxon_signed_rank",
    "wilson_interval",
]
