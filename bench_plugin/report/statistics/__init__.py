"""The report's statistics, one module per method.

- ``core``: array types, the missing-value rule (None/NaN is "no value", never zero), seeds, rounding.
- ``clusters``: which unit each case belongs to (a declared ``cluster``, the task, or the case).
- ``intervals``: the cluster t interval of many means at once (``cluster_means``, ``mean_ci``) and Wilson's
  interval of a proportion (``wilson_interval``).
- ``power``: the smallest difference a paired comparison could detect.
- ``paired``: two models case by case: the paired difference, the Wilcoxon and sign tests.
- ``holm_tiers``: Holm's correction over many pairs, which pairs differ, and the tiers.
- ``repeats``: pass@k, pass^k and flakiness over repeated runs.
- ``ratings``: Bradley-Terry ratings on the Elo scale; ``pairwise``: FastChat's win rates and position bias.
- ``plain``: plain means, totals and rates of case results.
- ``leaderboard``, ``suite`` and ``markdown``: a suite's statistical figures for the summary, and their
  report.md sections. They read the report's other modules, so they are imported from their own
  module (``suite_statistics`` and the leaderboard's functions are also found here, on first use).

The names other modules import are re-exported here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# every name is imported from its module when first asked for (PEP 562): importing one module of the package
# (``plain``, by the terminal summary) must not load numpy and scipy, which the start of every run would pay for
_NAMES = {
    "declared_cluster": "bench_plugin.report.statistics.clusters",
    "figure_bounds": "bench_plugin.report.statistics.clusters",
    "unit_labels": "bench_plugin.report.statistics.clusters",
    "CONFIDENCE": "bench_plugin.report.statistics.core",
    "DECIMALS": "bench_plugin.report.statistics.core",
    "FloatArray": "bench_plugin.report.statistics.core",
    "IntArray": "bench_plugin.report.statistics.core",
    "N_BOOT": "bench_plugin.report.statistics.core",
    "Seed": "bench_plugin.report.statistics.core",
    "rounded": "bench_plugin.report.statistics.core",
    "seed_for": "bench_plugin.report.statistics.core",
    "unit_codes": "bench_plugin.report.statistics.core",
    "MIN_UNITS": "bench_plugin.report.statistics.intervals",
    "MeanCI": "bench_plugin.report.statistics.intervals",
    "ProportionCI": "bench_plugin.report.statistics.intervals",
    "cluster_means": "bench_plugin.report.statistics.intervals",
    "cluster_t": "bench_plugin.report.statistics.intervals",
    "mean_ci": "bench_plugin.report.statistics.intervals",
    "unit_sums": "bench_plugin.report.statistics.intervals",
    "wilson_interval": "bench_plugin.report.statistics.intervals",
    "PairedDifference": "bench_plugin.report.statistics.paired",
    "SignTestResult": "bench_plugin.report.statistics.paired",
    "WilcoxonResult": "bench_plugin.report.statistics.paired",
    "paired_difference": "bench_plugin.report.statistics.paired",
    "sign_test": "bench_plugin.report.statistics.paired",
    "wilcoxon_signed_rank": "bench_plugin.report.statistics.paired",
    "PairwiseGame": "bench_plugin.report.statistics.pairwise",
    "PositionBias": "bench_plugin.report.statistics.pairwise",
    "Verdict": "bench_plugin.report.statistics.pairwise",
    "WinRateRow": "bench_plugin.report.statistics.pairwise",
    "fastchat_win_rates": "bench_plugin.report.statistics.pairwise",
    "position_bias": "bench_plugin.report.statistics.pairwise",
    "known": "bench_plugin.report.statistics.plain",
    "mean": "bench_plugin.report.statistics.plain",
    "rate": "bench_plugin.report.statistics.plain",
    "total": "bench_plugin.report.statistics.plain",
    "BradleyTerryResult": "bench_plugin.report.statistics.ratings",
    "ModelRating": "bench_plugin.report.statistics.ratings",
    "bradley_terry": "bench_plugin.report.statistics.ratings",
    "Flakiness": "bench_plugin.report.statistics.repeats",
    "FlakinessLabel": "bench_plugin.report.statistics.repeats",
    "flakiness_label": "bench_plugin.report.statistics.repeats",
    "pass_at_k": "bench_plugin.report.statistics.repeats",
    "pass_hat_k": "bench_plugin.report.statistics.repeats",
    "PValues": "bench_plugin.report.statistics.holm_tiers",
    "PairKey": "bench_plugin.report.statistics.holm_tiers",
    "Significance": "bench_plugin.report.statistics.holm_tiers",
    "holm_adjust": "bench_plugin.report.statistics.holm_tiers",
    "significant_pairs": "bench_plugin.report.statistics.holm_tiers",
    "tiers": "bench_plugin.report.statistics.holm_tiers",
    # these read the report's case table, which imports this package
    "suite_statistics": "bench_plugin.report.statistics.suite",
    "rank_models": "bench_plugin.report.statistics.suite",
    "add_leaderboard_columns": "bench_plugin.report.statistics.leaderboard",
    "leaderboard_figures": "bench_plugin.report.statistics.leaderboard",
}

if TYPE_CHECKING:
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
    from bench_plugin.report.statistics.holm_tiers import (
        PairKey,
        PValues,
        Significance,
        holm_adjust,
        significant_pairs,
        tiers,
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


def __getattr__(name: str) -> Any:
    """A name of ``_NAMES``, imported on first use."""
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_NAMES[name]), name)
    globals()[name] = value
    return value


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
