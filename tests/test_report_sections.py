"""Report sections on generated results with known differences: intervals, tiers, ratings, repeats, audit."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

import numpy as np
import pytest
from scipy import optimize

from bench_plugin.report.audit import audit, render_audit
from bench_plugin.report.comparisons import sign_flip_p_values
from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.ratings import rate_tallies, score_tallies
from bench_plugin.report.statistics import (
    PairwiseGame,
    Verdict,
    bradley_terry,
    fastchat_win_rates,
    mean_ci,
    paired_difference,
    pass_at_k,
    pass_hat_k,
)
from bench_plugin.report.statistics.intervals import cluster_means
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import CaseRecord


def component(name: str, value: float | None, *, judge: bool = False, passed: bool | None = None) -> dict[str, Any]:
    return {
        "name": name, "value": value, "raw": value, "passed": passed, "detail": "",
        "judge_output": "Rating: [[7]]" if judge else None, "error": None,
        "usage": {"input_tokens": 100, "output_tokens": 10} if judge else {},
    }


def case(
    model: str, task: str, score: float | None, *, run: int = 1, status: str | None = None,
    components: list[dict[str, Any]] | None = None, suite: str = "gen", **fields: Any,
) -> CaseRecord:
    if status is None:
        status = "passed" if score is not None and score >= 0.5 else "failed"
    if components is None and score is not None:
        components = [component("S", score, passed=score >= 0.5)]
    scores = None if components is None else {
        "components": components, "composite": score, "passed": None if score is None else score >= 0.5,
        "threshold": 0.5, "composite_detail": "", "unscored_reason": None,
    }
    return CaseRecord(
        nodeid=f"suites/{suite}.yaml::{task}[{model}-run{run}]", suite=suite, path=f"suites/{suite}.yaml", task=task,
        model=model, model_id=model, model_label=fields.pop("model_label", model.upper()),
        provider=fields.pop("provider", "offline"), run=run, status=status, scores=scores,
        composite=score if status in ("passed", "failed") else None, threshold=0.5, **fields,
    )


def three_models(tasks: int = 200, seed: int = 11) -> list[CaseRecord]:
    """A is truly better than B by 0.2; C is B again (same quality, its own noise); a few cases fail to finish."""
    rng = np.random.default_rng(seed)
    records = []
    for index in range(tasks):
        task = f"t{index:03d}"
        difficulty = rng.normal(0.0, 0.1)
        tags = [f"level={'easy' if index % 2 else 'hard'}", "generated"]
        variables = {"lang": ("en", "de", "fr")[index % 3], "id": index}
        for model, quality in (("a", 0.75), ("b", 0.55), ("c", 0.55)):
            score = float(np.clip(rng.normal(quality - difficulty, 0.15), 0.0, 1.0))
            if model == "b" and index < 4:
                records.append(case(model, task, None, status="error", tags=tags, variables=variables,
                                    error={"kind": "timeout", "message": "no answer"}))
            elif model == "c" and index == 7:
                records.append(case(model, task, None, status="unscored", tags=tags, variables=variables,
                                    components=[component("S", None)]))
            else:
                records.append(case(model, task, score, tags=tags, variables=variables))
    return records


@pytest.fixture(scope="module")
def generated() -> Any:
    return summarize(three_models())["suites"][0]


def pair(suite: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    pairs: list[dict[str, Any]] = suite["comparisons"]["pairs"]
    (found,) = [p for p in pairs if {p["a"], p["b"]} == {a, b}]
    return found


def test_a_truly_better_model_is_separated_and_two_identical_ones_are_not(generated: dict[str, Any]) -> None:
    comparisons = generated["comparisons"]
    assert comparisons["correction"] == "holm" and comparisons["test"] == "permutation"
    assert [sorted(tier) for tier in comparisons["tiers"]] == [["a"], ["b", "c"]]
    a_b, a_c, b_c = pair(generated, "a", "b"), pair(generated, "a", "c"), pair(generated, "b", "c")
    assert a_b["a"] == "a" and 0 < a_b["ci_low"] < 0.2 < a_b["ci_high"] < 0.3
    assert a_b["significant"] and a_c["significant"] and not b_c["significant"]
    assert b_c["ci_low"] < 0 < b_c["ci_high"]
    # only the cases both finished: b's 4 infrastructure errors leave 196
    assert (a_b["n"], a_c["n"], b_c["n"]) == (196, 199, 195)


def test_the_paired_figures_agree_with_the_reference_functions(generated: dict[str, Any]) -> None:
    records = three_models()
    scores = {(r.model, r.task): r.composite for r in records}
    tasks = sorted({r.task for r in records})
    reference = paired_difference([scores["a", t] for t in tasks], [scores["b", t] for t in tasks])
    assert reference is not None
    found = pair(generated, "a", "b")
    assert found["diff"] == pytest.approx(reference.mean_diff, abs=1e-6)
    assert found["mean_a"] == pytest.approx(reference.mean_a, abs=1e-6)
    assert found["ci_low"] == pytest.approx(reference.ci_low, abs=0.01)
    assert found["se"] == pytest.approx(reference.se, abs=0.003)
    assert found["p_value"] <= 0.001 and reference.p_value <= 0.001


def test_leaderboard_rows_carry_coverage_clean_and_normalised_means(generated: dict[str, Any]) -> None:
    rows = {row["model"]: row for row in generated["models"]}
    b = rows["b"]
    assert (b["expected"], b["scored"], b["errors"], b["missing"]) == (200, 196, 4, 0)
    assert b["coverage"] == pytest.approx(0.98)
    clean, normalised = b["intervals"]["mean_composite"], b["intervals"]["normalised"]
    assert clean["n"] == 196 and normalised["n"] == 200
    assert clean["mean"] == pytest.approx(b["mean_composite"], abs=1e-6)
    assert normalised["mean"] == pytest.approx(b["mean_composite"] * b["coverage"], abs=1e-6)
    assert clean["ci_low"] < clean["mean"] < clean["ci_high"]
    assert clean["se"] == pytest.approx(np.std([r.composite for r in three_models() if r.model == "b"
                                                and r.composite is not None], ddof=1) / math.sqrt(196), rel=0.15)
    c = rows["c"]
    assert (c["scored"], c["unscored"]) == (199, 1)
    assert c["intervals"]["components"]["S"]["n"] == 199
    assert generated["statistics"] == {"confidence": 0.95, "method": "cluster-t", "min_units": 4, "unit": "case",
                                       "expected_cases": 200, "judges": [], "ordinal": False}


def test_a_model_missing_from_the_results_counts_zero_in_the_normalised_score() -> None:
    records = [case("a", f"t{i}", 1.0) for i in range(4)] + [case("b", f"t{i}", 1.0) for i in range(2)]
    rows = {row["model"]: row for row in summarize(records)["suites"][0]["models"]}
    assert (rows["b"]["expected"], rows["b"]["scored"], rows["b"]["missing"]) == (4, 2, 2)
    assert rows["b"]["intervals"]["normalised"]["mean"] == 0.5
    assert rows["b"]["intervals"]["mean_composite"]["mean"] == 1.0


def test_a_model_without_any_score_has_no_normalised_score() -> None:
    """A suite without scorers passes its cases unscored: 0 would read as the worst score, not as none."""
    records = [case("a", f"t{i}", None, status="passed") for i in range(3)]
    row = summarize(records)["suites"][0]["models"][0]
    assert row["intervals"]["normalised"] is None and row["intervals"]["mean_composite"] is None
    assert "| 3 / 3 (100.0%) | — | — | — |" in render_markdown(summarize(records))


def test_breakdowns_come_from_tags_and_variables_without_a_declaration(generated: dict[str, Any]) -> None:
    dimensions = {d["dimension"]: d for d in generated["breakdowns"]}
    assert list(dimensions) == ["level", "lang"]  # "generated" alone is one group; "id" names each task
    easy = dimensions["level"]["groups"][0]
    assert easy["value"] == "hard" and easy["cases"] == 300
    assert easy["models"]["a"]["n"] == 100 and easy["models"]["b"]["n"] == 98  # b's errors on t000 and t002
    assert easy["models"]["a"]["ci_low"] < easy["models"]["a"]["mean"] < easy["models"]["a"]["ci_high"]
    assert [g["value"] for g in dimensions["lang"]["groups"]] == ["en", "de", "fr"]


def test_ratings_rank_the_better_model_first_with_intervals(generated: dict[str, Any]) -> None:
    scores = generated["ratings"]["scores"]
    first, *_ = scores["bradley_terry"]
    assert first["model"] == "a" and first["ci_low"] < first["rating"] < first["ci_high"]
    rates = {row["model"]: row for row in scores["win_rates"]}
    assert rates["a"]["win_rate"] > 0.7 and rates["a"]["win"] + rates["a"]["loss"] + rates["a"]["tie"] == 196 + 199
    assert generated["ratings"]["pairwise"] == []


def test_score_tallies_give_fastchats_table() -> None:
    records = three_models(tasks=30)
    tallies = score_tallies(records, ["a", "b", "c"])
    verdicts: tuple[Verdict, ...] = ("model_1", "model_2", "tie")
    games = [PairwiseGame(a, b, verdict, verdict) for a, b, *counts, _unit in tallies
             for verdict, count in zip(verdicts, counts, strict=True) for _ in range(count)]
    rated = rate_tallies(tallies, seed=0, n_boot=50)
    expected = [{k: round(v, 6) if isinstance(v, float) else v for k, v in vars(row).items()}
                for row in fastchat_win_rates(games)]
    assert rated["win_rates"] == expected
    assert rated["games"] == len(games)


def test_ratings_draw_tasks_when_runs_repeat_and_cases_when_they_do_not() -> None:
    once = [case(model, f"t{i}", score) for i in range(6) for model, score in (("a", 0.9), ("b", 0.1 * i))]
    thrice = [case(r.model, r.task, r.composite, run=run) for r in once for run in (1, 2, 3)]
    assert rate_tallies(score_tallies(once, ["a", "b"]), seed=0, n_boot=20)["units"] == 6
    rated = rate_tallies(score_tallies(thrice, ["a", "b"]), seed=0, n_boot=20)
    assert (rated["units"], rated["games"]) == (6, 18)  # 18 games, 6 tasks drawn whole


def test_the_summary_keeps_the_wilson_interval_report_md_shows_for_a_pass_rate() -> None:
    """8 of 8: the bootstrap drew 8 of 8 every time, and the dashboard showed [100%, 100%] beside report.md's Wilson."""
    records = [case("a", f"t{i}", 0.9) for i in range(8)]
    records += [case("b", f"t{i}", 0.9 if i % 2 else 0.1) for i in range(8)]
    summary = summarize(records)
    rates = {row["model"]: row["intervals"]["pass_rate"] for row in summary["suites"][0]["models"]}
    assert (rates["a"]["ci_low"], rates["a"]["ci_high"], rates["a"]["method"]) == (0.675592, 1.0, "wilson")
    assert (rates["b"]["ci_low"], rates["b"]["ci_high"]) == (0.215216, 0.784784)
    assert "| 100.0% (8 of 8) [67.6%, 100.0%] |" in render_markdown(summary)
    repeated = summarize([case("a", f"t{i}", 0.9, run=run) for i in range(4) for run in (1, 2)])
    by_task = repeated["suites"][0]["models"][0]["intervals"]["pass_rate"]  # runs of a task are one unit
    assert by_task["method"] == "cluster-t" and by_task["units"] == 4 and by_task["ci_low"] <= 0.675592


def test_the_summary_is_plain_json() -> None:
    summary = summarize(three_models(tasks=20))
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary


def test_report_sections_say_what_they_count(generated: dict[str, Any]) -> None:
    report = render_markdown({"totals": {}, "suites": [generated]})
    assert "Tiers: **1.** A; **2.** B, C." in report or "Tiers: **1.** A; **2.** C, B." in report
    assert "Holm's correction for the 3 comparisons (sign-flip permutation test of the mean difference" in report
    assert "| B | 196 / 200 (98.0%) |" in report
    assert "Normalised divides by all 200 expected cases" in report
    assert re.search(r"\| A \| B \| 196 \(196 cases\) \| 0\.\d{4} \[0\.\d{4}, 0\.\d{4}\] \|", report)
    assert "#### By level (tag)" in report and "#### By lang (task variable)" in report
    assert "### Ratings from per-case comparisons" in report
    assert "### Repeats" not in report  # one run per task
    assert "### Audit" in report and "timeout errors from provider offline" in report


def test_sections_appear_only_when_they_have_something() -> None:
    alone = render_markdown(summarize([case("a", "t1", 1.0), case("a", "t2", 0.0)]))
    for heading in ("### Is the difference real?", "### Ratings", "### Repeats", "### Breakdowns", "### Audit"):
        assert heading not in alone
    assert "#### Intervals and denominators" in alone
    assert render_markdown(summarize([])) == "# Benchmark report\n\nNo cases were run.\n"


# ---------------------------------------------------------------------------------------------------
# repeats: pass@k and pass^k against hand-computed values

REPEATED = (
    [case("a", "t1", 1.0, run=r) for r in range(1, 5)]
    + [case("a", "t2", 1.0 if r <= 2 else 0.0, run=r) for r in range(1, 5)]
    + [case("a", "t3", 0.0, run=r) for r in range(1, 5)]
    + [case("a", "t4", 1.0, run=r) for r in range(1, 4)]
    + [case("a", "t4", None, run=4, status="error", error={"kind": "timeout"})]
)


def test_pass_at_k_and_pass_hat_k_equal_hand_computed_values() -> None:
    repeats = summarize(REPEATED)["suites"][0]["repeats"]
    assert repeats["runs"] == 4 and repeats["ks"] == [1, 2, 3, 4]
    (row,) = repeats["models"]
    # t1 4/4, t2 2/4, t3 0/4, t4 3/3 (its fourth run errored): pass@2 of 2/4 is 1 - C(2,2)/C(4,2) = 5/6
    at_k = {entry["k"]: (entry["value"], entry["tasks"]) for entry in row["pass_at_k"]}
    hat_k = {entry["k"]: (entry["value"], entry["tasks"]) for entry in row["pass_hat_k"]}
    assert at_k == {1: (0.625, 4), 2: (pytest.approx(17 / 24, abs=1e-6), 4), 3: (0.75, 4),
                    4: (pytest.approx(2 / 3, abs=1e-6), 3)}
    assert hat_k == {1: (0.625, 4), 2: (pytest.approx(13 / 24, abs=1e-6), 4), 3: (0.5, 4),
                     4: (pytest.approx(1 / 3, abs=1e-6), 3)}
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6) and pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert (row["stable-pass"], row["flaky"], row["stable-fail"]) == (2, 1, 1)
    flaky = [c for c in repeats["cases"] if c["label"] == "flaky"]
    assert [(c["task"], c["passed"], c["n"], c["low"], c["high"]) for c in flaky] == [
        ("t2", 2, 4, pytest.approx(0.1500, abs=1e-4), pytest.approx(0.8500, abs=1e-4))]
    (t4,) = [c for c in repeats["cases"] if c["task"] == "t4"]
    assert t4["excluded"] == ["suites/gen.yaml::t4[a-run4]"] and t4["label"] == "stable-pass"


def test_repeated_runs_resample_tasks_and_show_the_repeats_section() -> None:
    suite = summarize(REPEATED)["suites"][0]
    assert suite["statistics"]["unit"] == "task"
    assert suite["models"][0]["intervals"]["mean_composite"]["units"] == 4
    report = render_markdown(summarize(REPEATED))
    assert "### Repeats" in report and "#### Flaky tasks (1)" in report
    assert "| A | t2 | 2 / 4 | 50.0% [15.0%, 85.0%] | 0 |" in report
    assert "| A | 4 | 2 | 1 | 1 | 0.625 (4) | 0.708 (4) | 0.750 (4) | 0.667 (3) |" in report


# ---------------------------------------------------------------------------------------------------
# audit


def audited() -> list[CaseRecord]:
    """Three models that score well, one broken task, one check that rejects what the judge liked."""
    records = []
    for index in range(12):
        for model in ("a", "b", "c"):
            score = 0.0 if index == 5 else 0.8 + 0.01 * index
            parts = [component("C", 1.0 if score else 0.0, passed=bool(score)),
                     component("J", score, judge=True)]
            if index == 9 and model == "b":  # planted: the check failed, the judge passed
                parts = [component("C", 0.0, passed=False), component("J", 0.9, judge=True)]
                score = 0.45
            if index == 10 and model == "c":  # planted: two judges far apart
                parts += [component("J2", 0.1, judge=True)]
            records.append(case(model, f"task-{index}", score, components=parts))
    records += [case("a", "task-12", None, status="error", provider="openai", error={"kind": "timeout"}),
                case("b", "task-12", None, status="error", provider="openai", error={"kind": "timeout"}),
                case("c", "task-12", None, status="error", provider="openai", error={"kind": "rate_limit"})]
    return records


def test_the_audit_finds_the_planted_broken_task_and_disagreements() -> None:
    items = audit(audited())
    kinds = [(item["kind"], item["title"], item["cases"]) for item in items]
    assert kinds == [
        ("all_zero", "every model scored 0 on task task-5",
         [f"suites/gen.yaml::task-5[{m}-run1]" for m in "abc"]),
        ("check_vs_judge", "check C failed but judge J passed", ["suites/gen.yaml::task-9[b-run1]"]),
        ("infrastructure", "timeout errors from provider openai",
         ["suites/gen.yaml::task-12[a-run1]", "suites/gen.yaml::task-12[b-run1]"]),
        ("infrastructure", "rate_limit errors from provider openai", ["suites/gen.yaml::task-12[c-run1]"]),
        ("judge_disagreement", "judges disagree on task task-10", ["suites/gen.yaml::task-10[c-run1]"]),
    ]
    text = render_audit(items)
    assert text.startswith("# Audit\n\nHow to read: ") and "\n## gen (`suites/gen.yaml`)\n" in text
    assert "- **every model scored 0 on task task-5** (likely a broken task or checker)" in text
    assert "  - `suites/gen.yaml::task-9[b-run1]`" in text
    assert render_audit([]).startswith("# Audit\n\nNothing to report")


def test_the_audit_blames_the_provider_and_model_of_the_call_that_failed() -> None:
    """A conversation partner on its own provider failed: the case's own provider and model were named."""
    failed = dataclasses.replace(
        case("a", "t1", None, status="error"), provider="mock",
        error={"kind": "http_500", "call": {"index": 2, "model": "partner", "purpose": "candidate", "turn": 2}},
        call_log=[{"model": "a", "provider": "mock"}, {"model": "partner", "provider": "other", "error": {}}])
    own = dataclasses.replace(case("b", "t1", None, status="error"), provider="mock", error={"kind": "timeout"})
    found = {item["title"]: item["detail"] for item in audit([failed, own]) if item["kind"] == "infrastructure"}
    assert found == {"http_500 errors from provider other": "1 case (partner)",
                     "timeout errors from provider mock": "1 case (b)"}


def test_zero_scores_that_are_common_answers_are_not_flagged() -> None:
    # a -1/0/1 stance scale: each model says 0 on a third of the tasks; two models agreeing on one is chance
    records = [case(m, f"t{i}", (0.0, 0.5, 1.0)[(i + j) % 3] if i != 4 else 0.0)
               for i in range(30) for j, m in enumerate(("a", "b"))]
    assert [item for item in audit(records) if item["kind"] == "all_zero"] == []


# ---------------------------------------------------------------------------------------------------
# the vectorised statistics against the reference functions


def test_cluster_means_reproduce_mean_ci_for_a_full_column() -> None:
    values = np.random.default_rng(3).random(150)
    clusters = [index // 3 for index in range(150)]
    found = cluster_means(values[:, None], np.array(clusters), 50)[0]
    reference = mean_ci(list(values), clusters=clusters)
    assert reference is not None and found is not None
    assert (found["ci_low"], found["ci_high"], found["se"]) == pytest.approx(
        (reference.ci_low, reference.ci_high, reference.se), abs=1e-6)
    assert found["units"] == 50 and found["n"] == 150


def test_sign_flip_p_values_match_the_exact_permutation_test() -> None:
    a, b = [0.9, 0.8, 0.7, 0.95, 0.6, 0.85], [0.5, 0.7, 0.75, 0.5, 0.4, 0.6]
    diffs = np.array(a) - np.array(b)
    reference = paired_difference(a, b)
    assert reference is not None and reference.p_method == "exact"
    (found,) = sign_flip_p_values(diffs[:, None], np.ones((6, 1)), 2000, seed=0)
    assert found == pytest.approx(reference.p_value)
    assert sign_flip_p_values(np.zeros((3, 1)), np.zeros((3, 1)), 2000, seed=0) == [None]


def test_bradley_terry_newton_fit_matches_a_generic_optimiser() -> None:
    comparisons = [("A", "B", 1.0)] * 7 + [("B", "A", 1.0)] * 3 + [("B", "C", 1.0)] * 6 + [("C", "B", 0.5)] * 2 \
        + [("A", "C", 1.0)] * 9 + [("C", "A", 1.0)]
    fitted = bradley_terry(comparisons, n_boot=0).as_dict()
    index = {"A": 0, "B": 1, "C": 2}

    def loss(theta: Any) -> float:
        total = 0.0
        for a, b, outcome in comparisons:
            gap = theta[index[a]] - theta[index[b]]
            total += outcome * np.logaddexp(0, -gap) + (1 - outcome) * np.logaddexp(0, gap)
        return float(total + 0.5e-6 * theta @ theta)

    theta = optimize.minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    points = 400 * theta / math.log(10)
    expected = {model: float(points[i] - points.mean() + 1000) for model, i in index.items()}
    assert fitted == pytest.approx(expected, abs=0.01)


def test_bradley_terry_interval_matches_the_binomial_standard_error() -> None:
    # 300 wins in 400: the log-odds has SE sqrt(1/300 + 1/100); each rating moves half the gap
    result = bradley_terry([("s", "w", 1.0)] * 300 + [("s", "w", 0.0)] * 100, n_boot=2000, seed=1)
    strong = result.ratings[0]
    half_width = 1.96 * 0.5 * 400 / math.log(10) * math.sqrt(1 / 300 + 1 / 100)
    assert (strong.ci_high - strong.ci_low) / 2 == pytest.approx(half_width, rel=0.1)


def test_bradley_terry_counts_are_repeated_comparisons() -> None:
    rows = [("A", "B", 1.0), ("A", "B", 0.0), ("A", "B", 0.5), ("B", "C", 1.0)]
    counts = [30, 10, 5, 12]
    repeated = [row for row, count in zip(rows, counts, strict=True) for _ in range(count)]
    assert bradley_terry(rows, counts=counts, n_boot=200, seed=4) == bradley_terry(repeated, n_boot=200, seed=4)
    with pytest.raises(ValueError, match="counts"):
        bradley_terry(rows, counts=[1])


def test_judge_usage_is_kept_apart_from_the_models() -> None:
    judged = [component("C", 1.0, passed=True), component("J", 0.8, judge=True)]
    records = [
        case("a", "t1", 0.9, components=judged, usage={"input_tokens": 10, "output_tokens": 5}),
        # the runner's own sum of the grading calls, with their price, wins over the components' usage
        case("a", "t2", 0.9, components=judged, usage={"input_tokens": 10, "output_tokens": 5,
                                                       "judge": {"input_tokens": 300, "output_tokens": 20,
                                                                 "cost_usd": 0.01}}),
    ]
    summary = summarize(records)
    (row,) = summary["suites"][0]["models"]
    assert (row["input_tokens"], row["output_tokens"]) == (20, 10)
    assert (row["judge_input_tokens"], row["judge_output_tokens"], row["judge_cost_usd"]) == (400, 30, 0.01)
    assert row["intervals"]["judge_mean"]["mean"] == pytest.approx(0.8)
    report = render_markdown(summary)
    assert "| Judge-only mean [95% CI] | Judge tokens in/out | Judge cost |" in report
    assert report.count("| 400 / 30 | $0.0100 |") == 1


def test_every_table_of_the_report_is_well_formed() -> None:
    records = [*three_models(tasks=30), *[replace_suite(r) for r in REPEATED], *audited()]
    report = render_markdown(summarize(records))
    tables: list[list[str]] = []
    previous = ""
    for line in report.splitlines():
        if line.startswith("| "):
            if not previous.startswith("| "):
                tables.append([])
            tables[-1].append(line)
        previous = line
    assert len(tables) >= 10
    for table in tables:
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table}
        assert len(widths) == 1, table[0]


def replace_suite(record: CaseRecord) -> CaseRecord:
    return dataclasses.replace(record, suite="rep", path="suites/rep.yaml", nodeid=record.nodeid.replace("gen", "rep"))


def test_model_and_suite_text_in_the_new_sections_stays_text() -> None:
    hostile = "<img src=x onerror=alert(1)>|[x](javascript:1)"
    records = [case(m, f"{hostile}-{i}", 0.2 * i + (0.1 if m == "a" else 0.0), run=r, model_label=f"{m} {hostile}",
                    tags=[f"kind={hostile}", hostile], variables={"v": f"{hostile}{i % 2}"})
               for i in range(4) for m in ("a", "b") for r in (1, 2)]
    report = render_markdown(summarize(records))
    outside_code = re.sub(r"`[^`]*`", "", report)  # node ids are code spans: nothing in them is markup
    assert "<img" not in outside_code and not re.search(r"(?<!\\)\]\(javascript", outside_code)
    assert "### Is the difference real?" in report and "### Repeats" in report and "### Breakdowns" in report
