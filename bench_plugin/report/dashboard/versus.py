"""The dashboard's sections on models against each other and on what to check: significance, ratings, repeats, audit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.dashboard.bars import stacked_bars
from bench_plugin.report.dashboard.compare import Comparison, EloRow, PairFigures, Rating, RatingSet, elo_rows
from bench_plugin.report.dashboard.figures import ModelFigures, number
from bench_plugin.report.dashboard.frame import fallback, fmt, section, table
from bench_plugin.report.dashboard.grids import MatrixCell, matrix
from bench_plugin.report.dashboard.intervals import Interval, interval_chart
from bench_plugin.report.dashboard.svg import esc, model_colours

MINUS = "\u2212"
MAX_LISTED_CASES = 20
MAX_TABLE_ROWS = 500
REPEAT_PARTS = (("stable-pass", "#59a14f"), ("flaky", "#f28e2b"), ("stable-fail", "#e15759"))


def _labels(models: Sequence[ModelFigures]) -> dict[str, str]:
    return {m.model: m.label for m in models}


def _label(label_of: Mapping[str, str], model: Any) -> str:
    """A model's label, or its name as the summary gives it when the dashboard has no figures of it."""
    return label_of.get(str(model), str(model))


def significance_section(models: Sequence[ModelFigures], comparison: Comparison) -> str:
    """The paired-difference matrix (row minus column) with significant cells outlined, and the tiers."""
    label_of = _labels(models)
    cells = [[_difference_cell(row, column, comparison) for column in models] for row in models]
    chart = matrix([m.label for m in models], cells, chart="significance",
                   label="Paired mean difference, row minus column")
    tiers = "".join(_tier_item(n, tier, label_of) for n, tier in enumerate(comparison.tiers, 1))
    head = ["Model A", "Model B", "Paired cases", f"A {MINUS} B", "95% CI", "p", "Holm p", "Significant"]
    body = [_pair_row(pair, label_of) for pair in comparison.pairs.values()]
    note = (f"Cells: {comparison.method}. Outlined cells and * mark pairs that differ; red: the row model scores "
            "higher, blue: lower.")
    return section("significance", "Is the difference real?", note, chart + f'<ul class="tiers">{tiers}</ul>',
                   fallback(table(head, body)))


def _tier_item(n: int, tier: Sequence[str], label_of: Mapping[str, str]) -> str:
    return f"<li>Tier {n}: {esc(', '.join(_label(label_of, model) for model in tier))}</li>"


def _difference_cell(row: ModelFigures, column: ModelFigures, comparison: Comparison) -> MatrixCell | None:
    """Row minus column on their paired cases; None on the diagonal."""
    if row is column:
        return None
    found = comparison.get(row.model, column.model)
    if found is None:
        return MatrixCell(None, "—", "not compared: no case scored by both")
    pair, sign = found
    low, high = sorted((sign * pair.low, sign * pair.high))
    tip = (f"{row.label} {MINUS} {column.label}: {sign * pair.diff:+.3f} (95% CI {low:+.3f} to {high:+.3f}) "
           f"over {pair.n} paired cases; p = {pair.p_value:.3g}, Holm p = {pair.p_holm:.3g}")
    shown = f"{sign * pair.diff:+.2f}".replace("-0.00", "+0.00").replace("nan", "?")
    return MatrixCell(sign * pair.diff, shown + ("*" if pair.significant else ""), tip, pair.significant)


def _pair_row(pair: PairFigures, label_of: Mapping[str, str]) -> list[str]:
    return [_label(label_of, pair.a), _label(label_of, pair.b), str(pair.n), fmt(pair.diff, signed=True),
            f"[{fmt(pair.low, signed=True)}, {fmt(pair.high, signed=True)}]", f"{pair.p_value:.3g}",
            f"{pair.p_holm:.3g}", "yes" if pair.significant else "no"]


def ratings_section(suite: Mapping[str, Any], models: Sequence[ModelFigures], sets: Sequence[RatingSet]) -> str:
    """Bradley-Terry ratings with intervals (per-case scores, pairwise judges) and the suite's saved Elo."""
    label_of = _labels(models)
    colours = model_colours(m.model for m in models)
    elo = elo_rows(suite)
    if not sets and not elo:
        return section("ratings", "Ratings", "Ratings need two or more models scored on the same cases, pairwise "
                       "judgments or a leaderboard: declaration.", "", "")
    charts = [_ratings_chart(rated, label_of, colours) for rated in sets]
    tables = [_ratings_table(rated, label_of) for rated in sets]
    if elo:
        charts.append(_elo_chart(elo))
        tables.append(_elo_table(elo))
    note = ("Bradley-Terry on the Elo scale (mean 1000) with 95% bootstrap intervals over games: from per-case scores "
            "each case two models both scored is a game won by the higher composite (equal: a tie); from a pairwise "
            "judge a win needs the same winner in both answer orders (FastChat's rule). Elo: the suite's saved "
            "leaderboard, kept across runs.")
    return section("ratings", "Ratings", note, "".join(charts), fallback("".join(tables)))


def _ratings_chart(rated: RatingSet, label_of: Mapping[str, str], colours: Mapping[str, str]) -> str:
    rows = [Interval(_label(label_of, r.model), r.rating, r.low, r.high, colours.get(r.model, "#4e79a7"),
                     f"{_label(label_of, r.model)}: {r.rating:.0f} (95% CI {r.low:.0f} to {r.high:.0f}), "
                     f"{r.games} games") for r in rated.ratings]
    return (f"<h4>Bradley-Terry: {esc(rated.title.lower())}</h4><p class=\"note\">{esc(rated.note)}</p>"
            + interval_chart(rows, chart="ratings", label=f"Bradley-Terry ratings {rated.title.lower()}",
                             bars=False, decimals=0))


def _ratings_table(rated: RatingSet, label_of: Mapping[str, str]) -> str:
    head = ["Model", "Rating", "95% CI", "Games", "Win", "Loss", "Tie", "Win rate", "Loss rate",
            "Win rate (ties half)"]
    return table(head, [_rating_row(rating, label_of) for rating in rated.ratings])


def _rating_row(r: Rating, label_of: Mapping[str, str]) -> list[str]:
    return [_label(label_of, r.model), f"{r.rating:.0f}", f"[{r.low:.0f}, {r.high:.0f}]", str(r.games),
            *(str(r.record.get(outcome, "—")) for outcome in ("win", "loss", "tie")),
            *(fmt(r.record.get(share), percent=True) for share in ("win_rate", "loss_rate", "win_rate_adjusted"))]


def _elo_chart(elo: Sequence[EloRow]) -> str:
    rows = [Interval(name, value, tip=f"{name}: Elo {value:.0f} after {sessions} sessions")
            for name, value, _, sessions in elo]
    return ("<h4>Elo leaderboard (leaderboard:)</h4>"
            + interval_chart(rows, chart="elo", label="Elo ratings", bars=False, decimals=0))


def _elo_table(elo: Sequence[EloRow]) -> str:
    return table(["Model", "Elo", "Change this run", "Sessions"],
                 [[name, f"{value:.1f}", fmt(change, signed=True), str(sessions)]
                  for name, value, change, sessions in elo])


def repeats_section(suite: Mapping[str, Any], models: Sequence[ModelFigures]) -> str:
    """Per model, the share of tasks that passed every run, some runs or none, with pass@k and pass^k."""
    found = suite.get("repeats")
    if not isinstance(found, Mapping) or not found.get("models"):
        return section("repeats", "Repeats", "Each task ran once: no pass@k, pass^k or flakiness to show.", "", "")
    label_of = _labels(models)
    rows = [row for row in found["models"] if isinstance(row, Mapping)]
    ks = _ks(found)
    note = (f"Each task ran up to {found.get('runs')} times. stable-pass: every finished run passed; stable-fail: none "
            "did; flaky: some did (errors are left out). pass@k: chance that at least one of k runs passes; pass^k: "
            "that all k pass (unbiased estimators over tasks with at least k runs).")
    tables = _repeats_table(rows, ks, label_of) + "<h4>Flaky cases</h4>" + _flaky_table(found, label_of)
    return section("repeats", "Repeats", note, _repeats_chart(rows, label_of), fallback(tables))


def _ks(found: Mapping[str, Any]) -> list[int]:
    """The k of the pass@k and pass^k columns."""
    return [int(k) for k in found.get("ks") or []]


def _repeats_chart(rows: Sequence[Mapping[str, Any]], label_of: Mapping[str, str]) -> str:
    bars = [(_label(label_of, row.get("model")), _repeat_parts(row)) for row in rows]
    return stacked_bars(bars, chart="repeats", label="Tasks that passed every run, some runs or none, per model")


def _repeat_parts(row: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """A model's tasks that passed every run, some runs or none, with the colour of each."""
    return [(part, int(row.get(part) or 0), colour) for part, colour in REPEAT_PARTS]


def _repeats_table(rows: Sequence[Mapping[str, Any]], ks: Sequence[int], label_of: Mapping[str, str]) -> str:
    head = ["Model", "Tasks", *(part for part, _ in REPEAT_PARTS), *(f"pass@{k}" for k in ks),
            *(f"pass^{k}" for k in ks)]
    return table(head, [_repeats_row(row, ks, label_of) for row in rows])


def _repeats_row(row: Mapping[str, Any], ks: Sequence[int], label_of: Mapping[str, str]) -> list[str]:
    return [_label(label_of, row.get("model")), str(row.get("tasks", "—")),
            *(str(row.get(part, 0)) for part, _ in REPEAT_PARTS), *(_at_k(row, "pass_at_k", k) for k in ks),
            *(_at_k(row, "pass_hat_k", k) for k in ks)]


def _at_k(row: Mapping[str, Any], key: str, k: int) -> str:
    """The row's ``key`` figure (pass@k or pass^k) at ``k``."""
    return fmt(next((number(e.get("value")) for e in row.get(key) or [] if e.get("k") == k), None))


def _flaky_table(found: Mapping[str, Any], label_of: Mapping[str, str]) -> str:
    flaky = [case for case in found.get("cases") or [] if isinstance(case, Mapping) and case.get("label") == "flaky"]
    return table(["Model", "Task", "Passed", "Runs", "Pass rate", "Wilson 95% CI"],
                 [_flaky_row(case, label_of) for case in flaky[:MAX_TABLE_ROWS]])


def _flaky_row(case: Mapping[str, Any], label_of: Mapping[str, str]) -> list[str]:
    return [_label(label_of, case.get("model")), str(case.get("task")), str(case.get("passed")), str(case.get("n")),
            fmt(case.get("rate"), percent=True),
            f"[{fmt(case.get('low'), percent=True)}, {fmt(case.get('high'), percent=True)}]"]


def audit_section(suite: Mapping[str, Any]) -> str:
    """The summary's audit list: each finding with what it may mean and the cases it names."""
    items = [item for item in suite.get("audit") or [] if isinstance(item, Mapping)]
    if not items:
        return section("audit", "Audit", "Nothing found: no all-zero task, no check and judge at odds, no "
                       "infrastructure errors, no judges in disagreement.", "", "")
    entries = "".join(_audit_entry(item) for item in items)
    note = ("Findings that point at a broken task, checker or endpoint rather than a weak model: tasks every model "
            "scored 0 on, checks failing where a judge passed, infrastructure errors by provider and error class, "
            "judges that disagree. Open one to see its cases.")
    return section("audit", "Audit", note, f'<ul class="audit">{entries}</ul>', "")


def _audit_entry(item: Mapping[str, Any]) -> str:
    """One finding, folded: its title and detail, then the cases it names."""
    listed = _listed_cases([str(case) for case in item.get("cases") or []])
    detail = "; ".join(str(item[key]) for key in ("detail", "why") if item.get(key))
    return (f'<li class="audit-item" data-kind="{esc(item.get("kind") or "")}"><details><summary>'
            f'{esc(_finding_title(item))} <span class="muted">({esc(detail)})</span></summary><ul>{listed}</ul>'
            "</details></li>")


def _finding_title(item: Mapping[str, Any]) -> str:
    return str(item.get("title") or item.get("kind") or "finding")


def _listed_cases(cases: Sequence[str]) -> str:
    """The first ``MAX_LISTED_CASES`` cases, and how many more there are."""
    listed = "".join(f"<li><code>{esc(case)}</code></li>" for case in cases[:MAX_LISTED_CASES])
    if len(cases) > MAX_LISTED_CASES:
        listed += f"<li>… and {len(cases) - MAX_LISTED_CASES} more</li>"
    return listed
