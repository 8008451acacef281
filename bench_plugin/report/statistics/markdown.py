"""The statistical sections of report.md: intervals and denominators, paired differences and tiers, ratings.

Each renderer takes one suite of the summary (``report.summary``) and returns lines; a section with
nothing to show returns none. Every section opens with one "how to read" line that names what each
figure counts and what it leaves out. Model and suite text goes through ``report.escape``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench_plugin.report.escape import markdown_cell

MISSING = "—"
UNITS = {
    "case": "cases",
    "task": "tasks (runs of a task count as one unit)",
    "cluster": "declared clusters (the cases of a cluster count as one unit)",
}
METHOD_TEXT = (
    "Intervals: mean ± t(G-1) x cluster-robust (CR1) standard error over the G units, never of zero width: units "
    "that agree could hide one far off, so the interval reaches as far as Wilson's bound for G agreeing units "
    "(with the t quantile) allows, in proportion to the share of units that agree (8 cases all 1.0: [0.589, 1]); "
    "from fewer than 4 units, none (too few to bound)."
)
PAIR_UNITS = {
    "case": "cases",
    "task": "tasks, runs of a task flipped together and one unit of the interval",
    "cluster": "declared clusters, the cases of a cluster flipped together and one unit of the interval",
}
MAX_PAIR_ROWS = 45  # ten models; beyond that the matrix alone says it


def row(cells: Sequence[str]) -> str:
    """A Markdown table row; the cells must already be escaped."""
    return "| " + " | ".join(cells) + " |"


def header(names: Sequence[str], left: int = 1) -> list[str]:
    """A header row and its alignment row: ``left`` text columns, then right-aligned figures."""
    return [row(names), row(["---"] * left + ["---:"] * (len(names) - left))]


def number(value: float | None, digits: int = 4) -> str:
    """A figure with ``digits`` decimals, or ``MISSING``."""
    return MISSING if value is None else f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    """A share (0 to 1) as a percentage with one decimal, or ``MISSING``."""
    return MISSING if value is None else f"{100 * value:.1f}%"


def interval(estimate: Mapping[str, Any] | None, digits: int = 4, *, as_percent: bool = False) -> str:
    """``mean [low, high]`` of an estimate (``statistics.intervals``); the mean alone when it has no interval.

    An estimate over too few units to bound says so: ``0.5000 (3 tasks: too few to bound)``.
    """
    if not estimate or estimate.get("mean") is None:
        return MISSING
    show = percent if as_percent else (lambda value: number(value, digits))
    return show(estimate["mean"]) + _bounds(estimate, show)


def _bounds(estimate: Mapping[str, Any], show: Callable[[float | None], str]) -> str:
    if estimate.get("too_few"):
        return f" ({units_text(estimate['units'], estimate.get('unit', 'case'))}: too few to bound)"
    if estimate.get("ci_low") is None or estimate.get("ci_high") is None:
        return ""
    return f" [{show(estimate['ci_low'])}, {show(estimate['ci_high'])}]"


def units_text(count: int, unit: str) -> str:
    """``12 tasks``, ``1 case``."""
    return f"{count} {unit}{'s' * (count != 1)}"


def p_value(value: float | None) -> str:
    """A p-value with 4 decimals, ``< 0.0001`` below that."""
    if value is None:
        return MISSING
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"


def labels_of(suite: Mapping[str, Any]) -> dict[str, str]:
    """Model name -> its escaped display label."""
    return {model["model"]: markdown_cell(model["label"]) for model in suite["models"]}


def ranked_rows(suite: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The leaderboard rows, best mean score first (as the leaderboard table)."""

    def key(model: Mapping[str, Any]) -> tuple[bool, float, bool, float]:
        score, rate = model["mean_composite"], model["pass_rate"]
        return (score is None, -(score or 0.0), rate is None, -(rate or 0.0))

    return sorted(suite["models"], key=key)


def render_intervals(suite: Mapping[str, Any]) -> list[str]:
    """Under the leaderboard: coverage, means with intervals, pass rates with their denominators."""
    stats = suite.get("statistics")
    if not stats:
        return []
    models = ranked_rows(suite)
    judge_column = bool(stats["judges"]) and not stats["ordinal"]
    usage = any(m.get("judge_input_tokens") is not None or m.get("judge_cost_usd") is not None for m in models)
    lines = ["#### Intervals and denominators", "", _how_to_read_intervals(stats, judge_column, usage), ""]
    names = ["Model", "Scored / expected", "CI over", "Mean score [95% CI]", "SE", "Normalised [95% CI]",
             "Pass rate [95% CI]"]
    names += ["Judge-only mean [95% CI]"] if judge_column else []
    names += ["Judge tokens in/out", "Judge cost"] if usage else []
    lines += header(names)
    lines += [row(_interval_cells(model, judge_column, usage)) for model in models]
    lines.append("")
    return lines + _render_components(suite, models)


def _how_to_read_intervals(stats: Mapping[str, Any], judge_column: bool, usage: bool) -> str:
    """What each column of the intervals table counts, and how its interval is drawn."""
    expected = (f"Normalised divides by all {stats['expected_cases']} expected cases"
                if stats["expected_cases"] is not None
                else "Normalised divides by each model's expected cases (the cases it was selected for: Scored / "
                     "expected)")
    return (
        f"How to read: each mean with its 95% interval and standard error over the {UNITS[stats['unit']]} "
        f"(count in CI over). {METHOD_TEXT} Mean score counts scored cases only (passed or failed); unscored cases "
        "(the grader could not decide), infrastructure errors, invalid and skipped cases are left out. "
        + expected
        + ", each case without a score "
        "counting 0 (= mean score x coverage). Pass rate = passed / scored "
        "(Wilson interval when each case is its own unit, else the cluster t interval)."
        + (" Judge-only: the mean of the judges' components alone." if judge_column else "")
        + (" Judge tokens and cost are the graders' usage, apart from the model's." if usage else "")
    )


def _interval_cells(model: Mapping[str, Any], judge_column: bool, usage: bool) -> list[str]:
    """One model's row of the intervals table."""
    found = model.get("intervals") or {}
    clean = found.get("mean_composite") or {}
    cells = [
        markdown_cell(model["label"]),
        f"{model['scored']} / {model['expected']} ({percent(model['coverage'])})",
        MISSING if not clean else units_text(clean["units"], clean.get("unit", "case")),
        interval(clean),
        number(clean.get("se")),
        interval(found.get("normalised")),
        _pass_rate(model, found.get("pass_rate")),
    ]
    cells += [interval(found.get("judge_mean"))] if judge_column else []
    return cells + (_usage_cells(model) if usage else [])


def _usage_cells(model: Mapping[str, Any]) -> list[str]:
    """The judges' tokens in / out and their cost."""
    tokens = [model.get("judge_input_tokens"), model.get("judge_output_tokens")]
    cost = model.get("judge_cost_usd")
    return [" / ".join(MISSING if t is None else f"{t:,}" for t in tokens),
            MISSING if cost is None else f"${cost:.4f}"]


def _render_components(suite: Mapping[str, Any], models: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each component's mean with its interval, when the leaderboard has two or more."""
    if len(suite["components"]) < 2:
        return []
    lines = ["#### Components", "",
             "How to read: each component's mean over the cases where it has a value (an unscored "
             "component is left out, not counted 0), with its 95% interval over the units (as above).", ""]
    lines += header(["Model", *(markdown_cell(name) for name in suite["components"])])
    for model in models:
        found = (model.get("intervals") or {}).get("components") or {}
        cells = [interval(found.get(name)) for name in suite["components"]]
        lines.append(row([markdown_cell(model["label"]), *cells]))
    lines.append("")
    return lines


def _pass_rate(model: Mapping[str, Any], estimate: Mapping[str, Any] | None) -> str:
    """The pass rate with its interval as the summary has it (Wilson's, or the cluster t interval)."""
    scored = model["passed"] + model["failed"]
    text = f"{percent(model['pass_rate'])} ({model['passed']} of {scored})"
    return text + ("" if not estimate else _bounds(estimate, percent))


def render_differences(suite: Mapping[str, Any]) -> list[str]:
    """Is the difference real? The difference matrix, the tiers and (up to ten models) the pair table."""
    found = suite.get("comparisons")
    if not found or not any(pair["n"] for pair in found["pairs"]):  # no case that two models both finished
        return []
    labels = labels_of(suite)
    unit = PAIR_UNITS.get(found["unit"], "cases")
    lines = [
        "### Is the difference real?",
        "",
        f"How to read: each cell is the row model's mean score minus the column model's, over the cases both "
        f"finished with a score ({unit}); ✓ marks a difference that holds after {_correction(found)}. Tiers: "
        "walking down the ranking, a model joins the current tier unless the corrected test separates it from "
        "a model already in it, then it opens the next tier; so models in one tier cannot be told apart at 95%, "
        "and each tier is led by its best model. A - B has the 95% interval of the means above (over the units "
        "both models have); beside a difference that is not significant, the smallest difference the "
        f"comparison could detect ({100 * found.get('power', 0.8):g}% power, two-sided 5% test, from the "
        "observed spread of the units' differences).",
        "",
        "Tiers: " + "; ".join(f"**{index}.** {', '.join(labels[m] for m in tier)}"
                              for index, tier in enumerate(found["tiers"], 1)) + ".",
        "",
    ]
    lines += _difference_matrix(found, labels)
    if len(found["pairs"]) <= MAX_PAIR_ROWS:
        lines += _pair_table(found, labels)
    return lines


def _difference_matrix(found: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """The upper triangle of row model minus column model, models in tier order."""
    ranked = [model for tier in found["tiers"] for model in tier]
    pairs = {(pair["a"], pair["b"]): pair for pair in found["pairs"]}
    lines = header(["Model", *(labels[model] for model in ranked[1:])])
    for index, first in enumerate(ranked[:-1]):
        cells = [_matrix_cell(pairs, first, second) if position > index else ""
                 for position, second in enumerate(ranked[1:], 1)]
        lines.append(row([labels[first], *cells]))
    return [*lines, ""]


def _matrix_cell(pairs: Mapping[tuple[str, str], Mapping[str, Any]], first: str, second: str) -> str:
    """Row model minus column model, from whichever order the pair was compared in; empty when it was not."""
    pair = pairs.get((first, second)) or _swapped(pairs.get((second, first)))
    return "" if pair is None else _cell(pair)


def _pair_table(found: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """One row per pair: the difference with its interval, the counts of better / worse / tied, the p-values."""
    lines = header(["A", "B", "Cases (units)", "A - B [95% CI]", "SE", "A better / worse / tied", "p", "p (Holm)"],
                   left=2)
    for pair in found["pairs"]:
        difference = {"mean": pair["diff"], "ci_low": pair["ci_low"], "ci_high": pair["ci_high"],
                      "too_few": pair.get("too_few"), "units": pair["units"], "unit": pair.get("unit", "case")}
        lines.append(row([
            labels[pair["a"]], labels[pair["b"]], f"{pair['n']} ({units_text(pair['units'], difference['unit'])})",
            interval(difference), number(pair["se"]), f"{pair['wins']} / {pair['losses']} / {pair['ties']}",
            p_value(pair["p_value"]), p_value(pair["p_holm"]) + _verdict(pair),
        ]))
    return [*lines, ""]


def _verdict(pair: Mapping[str, Any]) -> str:
    """`` ✓`` for a significant pair; else "not significant", with the smallest detectable difference when known."""
    if pair["significant"]:
        return " ✓"
    if pair.get("mde") is None:
        return " (not significant)"
    return f" (not significant; detectable: ±{pair['mde']:.4f})"


def _correction(found: Mapping[str, Any]) -> str:
    count = len(found["pairs"])
    return (f"Holm's correction for the {count} comparison{'s' * (count != 1)} ({found['test_name']}, "
            f"{100 * found['alpha']:g}% family-wise)")


def _swapped(pair: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if pair is None:
        return None
    flip = {"diff": None if pair["diff"] is None else -pair["diff"]}
    return {**pair, **flip}


def _cell(pair: Mapping[str, Any]) -> str:
    if pair["diff"] is None:
        return MISSING
    return f"{pair['diff']:+.4f}" + (" ✓" if pair["significant"] else "")


def render_ratings(suite: Mapping[str, Any]) -> list[str]:
    """Bradley-Terry ratings and FastChat's win rates from per-case score comparisons."""
    found = (suite.get("ratings") or {}).get("scores")
    if not found:
        return []
    labels = labels_of(suite)
    rates = {entry["model"]: entry for entry in found["win_rates"]}
    lines = [
        "### Ratings from per-case comparisons",
        "",
        f"How to read: each case two models both finished with a score is one game between them ({found['games']} "
        "games): the higher score wins, equal scores tie. Bradley-Terry ratings (mean 1000; 400 points = 10 times "
        "the odds of winning; each model also counts one virtual tie against a model rated 1000, so that one that "
        "won or lost every game is rated finitely) with 95% bootstrap intervals that draw whole cases, or whole "
        "tasks when runs repeat, the units of the other intervals "
        f"({found['n_boot']} resamples; none from fewer than two, "
        "nor for a model that won or lost every game: no resample can vary it); win, loss "
        "and tie counts and rates as FastChat's `show_result.py` computes them (each rate over the model's "
        "games; the adjusted rate counts a tie as half a win).",
        "",
        *header(["Rank", "Model", "Games", "Bradley-Terry [95% CI]", "Win", "Loss", "Tie", "Win rate", "Loss rate",
                 "Win rate (ties half)"], left=2),
    ]
    for rank, rating in enumerate(found["bradley_terry"], 1):
        rate = rates.get(rating["model"], {})
        lines.append(row([
            str(rank), labels.get(rating["model"], markdown_cell(rating["model"])), str(rating["games"]),
            interval({"mean": rating["rating"], "ci_low": rating["ci_low"], "ci_high": rating["ci_high"]}, 1),
            str(rate.get("win", MISSING)), str(rate.get("loss", MISSING)), str(rate.get("tie", MISSING)),
            number(rate.get("win_rate")), number(rate.get("loss_rate")), number(rate.get("win_rate_adjusted")),
        ]))
    return [*lines, ""]


def describe_how_to_read() -> list[str]:
    """The report's opening paragraph: what a score is and which cases each kind of figure counts."""
    return [
        "How to read this report: scores run from 0 to 1. A case is *scored* when it passed or failed; unscored "
        "cases (the grader could not decide), infrastructure errors, invalid and skipped cases are counted "
        "(Cases) but left out of every mean score and rate, the leaderboard's and the task table's included, "
        "except the coverage-normalised score, where they count 0. A component's own column (C, J...) averages "
        "every case where that component has a value, an unscored case's included. Pass rate is passed / "
        "scored. Intervals are 95%. Each section below the leaderboard says what it counts.",
        "",
    ]

