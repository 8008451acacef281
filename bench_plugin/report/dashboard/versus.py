"""The dashboard's sections on models against each other and on what to check: significance, ratings, repeats, audit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.dashboard.bars import stacked_bars
from bench_plugin.report.dashboard.compare import Comparison, RatingSet, elo_rows
from bench_plugin.report.dashboard.figures import ModelFigures, number
from bench_plugin.report.dashboard.frame import fallback, fmt, section, table
from bench_plugin.report.dashboard.grids import MatrixCell, matrix
from bench_plugin.report.dashboard.intervals import Interval, interval_chart
from bench_plugin.report.dashboard.svg import esc, model_colours

MINUS = "\u2212"
MAX_LISTED_CASES = 20
MAX_TABLE_ROWS = 500
REPEAT_PARTS = (("stable-pass", "#59a14f"), ("flaky", "#f28e2b"), ("stable-fail", "#e15759"))


def significance_section(models: Sequence[ModelFigures], comparison: Comparison) -> str:
    """The paired-difference matrix (row minus column) with significant cells outlined, and the tiers."""
    label_of = {m.model: m.label for m in models}
    cells: list[list[MatrixCell | None]] = []
    for row in models:
        line: list[MatrixCell | None] = []
        for column in models:
            found = comparison.get(row.model, column.model) if row is not column else None
            if found is None:
                line.append(None if row is column else MatrixCell(None, "—", "not compared: no case scored by both"))
                continue
            pair, sign = found
            low, high = sorted((sign * pair.low, sign * pair.high))
            tip = (f"{row.label} {MINUS} {column.label}: {sign * pair.diff:+.3f} (95% CI {low:+.3f} to {high:+.3f}) "
                   f"over {pair.n} paired cases; p = {pair.p_value:.3g}, Holm p = {pair.p_holm:.3g}")
            shown = f"{sign * pair.diff:+.2f}".replace("-0.00", "+0.00").replace("nan", "?")
            line.append(MatrixCell(sign * pair.diff, shown + ("*" if pair.significant else ""), tip, pair.significant))
        cells.append(line)
    chart = matrix([m.label for m in models], cells, chart="significance",
                   label="Paired mean difference, row minus column")
    tiers = "".join(f"<li>Tier {n}: {esc(', '.join(label_of.get(m, m) for m in tier))}</li>"
                    for n, tier in enumerate(comparison.tiers, 1))
    head = ["Model A", "Model B", "Paired cases", f"A {MINUS} B", "95% CI", "p", "Holm p", "Significant"]
    body = [[label_of.get(p.a, p.a), label_of.get(p.b, p.b), str(p.n), fmt(p.diff, signed=True),
             f"[{fmt(p.low, signed=True)}, {fmt(p.high, signed=True)}]", f"{p.p_value:.3g}", f"{p.p_holm:.3g}",
             "yes" if p.significant else "no"] for p in comparison.pairs.values()]
    note = (f"Cells: {comparison.method}. Outlined cells and * mark pairs that differ; red: the row model scores "
            "higher, blue: lower.")
    return section("significance", "Is the difference real?", note, chart + f'<ul class="tiers">{tiers}</ul>',
                   fallback(table(head, body)))


def ratings_section(suite: Mapping[str, Any], models: Sequence[ModelFigures], sets: Sequence[RatingSet]) -> str:
    """Bradley-Terry ratings with intervals (per-case scores, pairwise judges) and the suite's saved Elo."""
    label_of = {m.model: m.label for m in models}
    colours = model_colours(m.model for m in models)
    elo = elo_rows(suite)
    if not sets and not elo:
        return section("ratings", "Ratings", "Ratings need two or more models scored on the same cases, pairwise "
                       "judgments or a leaderboard: declaration.", "", "")
    charts, tables = [], []
    for rated in sets:
        rows = [Interval(label_of.get(r.model, r.model), r.rating, r.low, r.high, colours.get(r.model, "#4e79a7"),
                         f"{label_of.get(r.model, r.model)}: {r.rating:.0f} (95% CI {r.low:.0f} to {r.high:.0f}), "
                         f"{r.games} games") for r in rated.ratings]
        charts.append(f"<h4>Bradley-Terry: {esc(rated.title.lower())}</h4><p class=\"note\">{esc(rated.note)}</p>"
                      + interval_chart(rows, chart="ratings", label=f"Bradley-Terry ratings {rated.title.lower()}",
                                       bars=False, decimals=0))
        head = ["Model", "Rating", "95% CI", "Games", "Win", "Loss", "Tie", "Win rate", "Loss rate",
                "Win rate (ties half)"]
        tables.append(table(head, [[label_of.get(r.model, r.model), f"{r.rating:.0f}", f"[{r.low:.0f}, {r.high:.0f}]",
                                    str(r.games), str(r.record.get("win", "—")), str(r.record.get("loss", "—")),
                                    str(r.record.get("tie", "—")), fmt(r.record.get("win_rate"), percent=True),
                                    fmt(r.record.get("loss_rate"), percent=True),
                                    fmt(r.record.get("win_rate_adjusted"), percent=True)] for r in rated.ratings]))
    if elo:
        rows = [Interval(name, value, tip=f"{name}: Elo {value:.0f} after {sessions} sessions")
                for name, value, _, sessions in elo]
        charts.append("<h4>Elo leaderboard (leaderboard:)</h4>"
                      + interval_chart(rows, chart="elo", label="Elo ratings", bars=False, decimals=0))
        tables.append(table(["Model", "Elo", "Change this run", "Sessions"],
                            [[name, f"{value:.1f}", fmt(change, signed=True), str(sessions)]
                             for name, value, change, sessions in elo]))
    note = ("Bradley-Terry on the Elo scale (mean 1000) with 95% bootstrap intervals over games: from per-case scores "
            "each case two models both scored is a game won by the higher composite (equal: a tie); from a pairwise "
            "judge a win needs the same winner in both answer orders (FastChat's rule). Elo: the suite's saved "
            "leaderboard, kept across runs.")
    return section("ratings", "Ratings", note, "".join(charts), fallback("".join(tables)))


def repeats_section(suite: Mapping[str, Any], models: Sequence[ModelFigures]) -> str:
    """Per model, the share of tasks that passed every run, some runs or none, with pass@k and pass^k."""
    found = suite.get("repeats")
    if not isinstance(found, Mapping) or not found.get("models"):
        return section("repeats", "Repeats", "Each task ran once: no pass@k, pass^k or flakiness to show.", "", "")
    label_of = {m.model: m.label for m in models}
    rows = [row for row in found["models"] if isinstance(row, Mapping)]
    chart = stacked_bars([(label_of.get(str(row.get("model")), str(row.get("model"))),
                           [(part, int(row.get(part) or 0), colour) for part, colour in REPEAT_PARTS]) for row in rows],
                         chart="repeats", label="Tasks that passed every run, some runs or none, per model")
    ks = [int(k) for k in found.get("ks") or []]
    head = ["Model", "Tasks", *(part for part, _ in REPEAT_PARTS), *(f"pass@{k}" for k in ks),
            *(f"pass^{k}" for k in ks)]

    def at(row: Mapping[str, Any], key: str, k: int) -> str:
        return fmt(next((number(e.get("value")) for e in row.get(key) or [] if e.get("k") == k), None))

    body = [[label_of.get(str(row.get("model")), str(row.get("model"))), str(row.get("tasks", "—")),
             *(str(row.get(part, 0)) for part, _ in REPEAT_PARTS), *(at(row, "pass_at_k", k) for k in ks),
             *(at(row, "pass_hat_k", k) for k in ks)] for row in rows]
    flaky = [case for case in found.get("cases") or [] if isinstance(case, Mapping) and case.get("label") == "flaky"]
    cases = table(["Model", "Task", "Passed", "Runs", "Pass rate", "Wilson 95% CI"],
                  [[label_of.get(str(c.get("model")), str(c.get("model"))), str(c.get("task")), str(c.get("passed")),
                    str(c.get("n")), fmt(c.get("rate"), percent=True),
                    f"[{fmt(c.get('low'), percent=True)}, {fmt(c.get('high'), percent=True)}]"]
                   for c in flaky[:MAX_TABLE_ROWS]])
    note = (f"Each task ran up to {found.get('runs')} times. stable-pass: every finished run passed; stable-fail: none "
            "did; flaky: some did (errors are left out). pass@k: chance that at least one of k runs passes; pass^k: "
            "that all k pass (unbiased estimators over tasks with at least k runs).")
    return section("repeats", "Repeats", note, chart, fallback(table(head, body) + "<h4>Flaky cases</h4>" + cases))


def audit_section(suite: Mapping[str, Any]) -> str:
    """The summary's audit list: each finding with what it may mean and the cases it names."""
    items = [item for item in suite.get("audit") or [] if isinstance(item, Mapping)]
    if not items:
        return section("audit", "Audit", "Nothing found: no all-zero task, no check and judge at odds, no "
                       "infrastructure errors, no judges in disagreement.", "", "")
    entries = []
    for item in items:
        cases = [str(case) for case in item.get("cases") or []]
        listed = "".join(f"<li><code>{esc(case)}</code></li>" for case in cases[:MAX_LISTED_CASES])
        if len(cases) > MAX_LISTED_CASES:
            listed += f"<li>… and {len(cases) - MAX_LISTED_CASES} more</li>"
        detail = "; ".join(str(item[key]) for key in ("detail", "why") if item.get(key))
        entries.append(f'<li class="audit-item" data-kind="{esc(item.get("kind") or "")}"><details><summary>'
                       f'{esc(item.get("title") or item.get("kind") or "finding")} <span class="muted">({esc(detail)})'
                       f"</span></summary><ul>{listed}</ul></details></li>")
    note = ("Findings that point at a broken task, checker or endpoint rather than a weak model: tasks every model "
            "scored 0 on, checks failing where a judge passed, infrastructure errors by provider and error class, "
            "judges that disagree. Open one to see its cases.")
    return section("audit", "Audit", note, f'<ul class="audit">{"".join(entries)}</ul>', "")
