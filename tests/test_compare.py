"""Comparing results with a baseline, on synthetic records: pairing, figures, verdicts, lists, compare.md."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from markdown_it import MarkdownIt

from bench_plugin.report.compare.build import NothingToCompare, Side, compare_sides, regressions
from bench_plugin.report.compare.facts import CaseFacts, facts_of
from bench_plugin.report.compare.markdown import MAX_CHARS, render_compare_markdown, render_sections
from bench_plugin.report.compare.matching import match_cases
from bench_plugin.report.compare.text import headline_lines
from bench_plugin.report.compare.verdicts import (
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    CompareSettings,
    combine,
    judge,
)
from bench_plugin.results.record import CaseRecord

SETTINGS = CompareSettings()


def case(task: str, status: str = "passed", score: float | None = None, *, model: str = "m", run: int = 1,
         suite: str = "s", **fields: Any) -> CaseRecord:
    """A finished case: passed scores 1.0 and failed 0.0 unless ``score`` says otherwise."""
    composite = score if score is not None else {"passed": 1.0, "failed": 0.0}.get(status)
    data: dict[str, Any] = {
        "nodeid": f"suites/{suite}.yaml::{task}[{model}-run{run}]", "suite": suite, "path": f"suites/{suite}.yaml",
        "task": task, "model": model, "model_id": f"{model}-v1", "model_label": model, "provider": "p", "run": run,
        "status": status, "composite": composite, "messages": [{"role": "user", "content": f"question {task}"}],
        "response": f"answer {status}", "usage": {"cost_usd": 0.001, "input_tokens": 10, "output_tokens": 5},
        "latency_s": 0.5,
    }
    data.update(fields)
    return CaseRecord.from_dict(data)


def side(name: str, records: Sequence[CaseRecord]) -> Side:
    return Side(name, [facts_of(record) for record in records])


def pass_fail(name: str, passes: Sequence[bool], **fields: Any) -> Side:
    return side(name, [case(f"t{i}", "passed" if ok else "failed", **fields) for i, ok in enumerate(passes)])


def seeded_regression(cases: int, points: int, seed: int = 7) -> tuple[list[bool], list[bool]]:
    """A baseline passing about 80% and the same cases ``points`` points worse (some fail anew, a few are fixed)."""
    rng = random.Random(seed)
    before = [rng.random() < 0.8 for _ in range(cases)]
    after = list(before)
    drop = round(cases * points / 100)
    fixed = rng.sample([i for i, ok in enumerate(before) if not ok], max(1, drop // 5))
    broken = rng.sample([i for i, ok in enumerate(before) if ok], drop + len(fixed))
    for i in fixed:
        after[i] = True
    for i in broken:
        after[i] = False
    return before, after


def only_row(comparison: dict[str, Any]) -> dict[str, Any]:
    (row,) = comparison["comparisons"]
    return row


# -- verdicts --------------------------------------------------------------------------------------------------


def test_a_seeded_five_point_regression_on_300_cases_is_regressed() -> None:
    before, after = seeded_regression(300, 5)
    comparison = compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS)
    row = only_row(comparison)
    assert row["pass_rate"]["difference"] == pytest.approx(-0.05)
    assert row["pass_rate"]["high"] < 0 and row["pass_rate"]["p_holm"] < 0.05
    assert row["verdict"] == comparison["verdict"] == REGRESSED
    assert regressions(comparison) == ["s m"]


def test_the_same_results_twice_are_unchanged() -> None:
    before, _ = seeded_regression(300, 5)
    comparison = compare_sides(pass_fail("base", before), pass_fail("now", before), SETTINGS)
    row = only_row(comparison)
    assert row["verdict"] == comparison["verdict"] == UNCHANGED
    assert row["score"]["difference"] == row["pass_rate"]["difference"] == 0
    assert all(not cases for cases in row["lists"].values())
    assert regressions(comparison) == []


def test_a_five_point_drop_on_20_cases_is_inconclusive() -> None:
    before = [True] * 20
    after = [True] * 19 + [False]
    row = only_row(compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS))
    assert row["pass_rate"]["difference"] == pytest.approx(-0.05)
    assert row["verdict"] == INCONCLUSIVE


def test_a_gain_beyond_the_margin_is_improved() -> None:
    before, after = seeded_regression(300, 5)
    assert only_row(compare_sides(pass_fail("base", after), pass_fail("now", before), SETTINGS))["verdict"] == IMPROVED


def test_the_rule_needs_significance_and_the_margin_or_an_interval_inside_it() -> None:
    assert judge(-0.05, -0.08, -0.02, 0.001, SETTINGS) == REGRESSED
    assert judge(-0.05, -0.08, -0.02, 0.2, SETTINGS) == INCONCLUSIVE  # not significant
    assert judge(-0.01, -0.015, -0.005, 0.001, SETTINGS) == UNCHANGED  # real, but smaller than the margin
    assert judge(-0.01, -0.03, 0.01, 0.3, SETTINGS) == INCONCLUSIVE  # the interval reaches past the margin
    assert judge(0.0, None, None, None, SETTINGS) == INCONCLUSIVE  # no interval: one unit
    assert judge(0.05, 0.02, 0.08, 0.001, CompareSettings(margin=0.1)) == UNCHANGED  # within a wider margin
    assert combine([UNCHANGED, IMPROVED]) == IMPROVED and combine([IMPROVED, REGRESSED]) == REGRESSED
    assert combine([UNCHANGED, INCONCLUSIVE]) == INCONCLUSIVE and combine([]) == INCONCLUSIVE


def test_settings_refuse_a_margin_or_confidence_no_comparison_can_use() -> None:
    with pytest.raises(ValueError, match="margin"):
        CompareSettings(margin=-0.1)
    with pytest.raises(ValueError, match="confidence"):
        CompareSettings(confidence=95)


def test_runs_of_a_task_are_one_unit_overall_and_the_units_of_its_own_comparison() -> None:
    tasks, runs = 30, 4
    before = [case(f"t{t}", "passed", run=r) for t in range(tasks) for r in range(1, runs + 1)]
    after = [case(f"t{t}", "failed" if t == 0 else "passed", run=r) for t in range(tasks) for r in range(1, runs + 1)]
    row = only_row(compare_sides(side("base", before), side("now", after), SETTINGS))
    assert (row["score"]["n"], row["score"]["units"]) == (tasks * runs, tasks)
    first = row["tasks"][0]
    assert (first["task"], first["cases"], first["score"]["units"]) == ("t0", runs, runs)
    assert first["score"]["difference"] == -1.0 and first["score"]["p"] == pytest.approx(0.125)  # 2 of 16 patterns
    assert first["score"]["p_holm"] == pytest.approx(1.0)  # 30 tasks x 2 figures; the other tasks have p = 1
    assert [task["score"]["p"] for task in row["tasks"][1:]] == [1.0] * (tasks - 1)


def test_a_task_with_one_case_has_a_difference_and_no_test() -> None:
    row = only_row(compare_sides(pass_fail("base", [True, True]), pass_fail("now", [True, False]), SETTINGS))
    task = row["tasks"][1]
    assert task["score"]["difference"] == -1.0
    assert (task["score"]["low"], task["score"]["p"], task["verdict"]) == (None, None, INCONCLUSIVE)


# -- matching ---------------------------------------------------------------------------------------------------


def test_cases_pair_on_what_they_asked_and_the_others_are_listed() -> None:
    before = [case("same"), case("gone"), case("reworded"), case("rescored", scored_by="a1"),
              case("turns", asked="x1"), case("new-model")]
    after = [case("same"), case("added"), case("reworded", messages=[{"role": "user", "content": "other"}]),
             case("rescored", scored_by="b2"), case("turns", asked="x2"), case("new-model", model_id="m-v2")]
    comparison = compare_sides(side("base", before), side("now", after), SETTINGS)
    matching = comparison["matching"]
    assert matching["compared"] == 2  # "same", and "new-model": a new version of a model is what is compared
    assert matching["baseline_only"] == ["suites/s.yaml::gone[m-run1]"]
    assert matching["current_only"] == ["suites/s.yaml::added[m-run1]"]
    assert matching["changed"] == [{"nodeid": "suites/s.yaml::reworded[m-run1]", "what": ["prompt"]},
                                   {"nodeid": "suites/s.yaml::rescored[m-run1]", "what": ["scoring"]},
                                   {"nodeid": "suites/s.yaml::turns[m-run1]", "what": ["asked"]}]
    assert matching["changes"] == {"prompt": 1, "asked": 1, "scoring": 1}
    assert only_row(comparison)["model_id"] == {"baseline": ["m-v1"], "current": ["m-v1", "m-v2"]}


def test_a_scoring_digest_only_one_side_keeps_does_not_unpair_a_case() -> None:
    matching = match_cases([facts_of(case("t", scored_by="a1"))], [facts_of(case("t"))])
    assert len(matching.pairs) == 1 and not matching.changed


def test_cases_pair_on_model_run_and_prompt_variant() -> None:
    before = [case("t", model="a"), case("t", model="b"), case("t", run=2),
              case("t-terse", variables={"prompt_id": "terse"})]
    after = [case("t", model="b"), case("t", run=2), case("t-terse", variables={"prompt_id": "terse"}),
             case("t", model="c")]
    matching = match_cases([facts_of(r) for r in before], [facts_of(r) for r in after])
    assert [now.nodeid for _, now in matching.pairs] == [
        "suites/s.yaml::t[b-run1]", "suites/s.yaml::t[m-run2]", "suites/s.yaml::t-terse[m-run1]"]
    assert matching.baseline_only == ["suites/s.yaml::t[a-run1]"]
    assert matching.current_only == ["suites/s.yaml::t[c-run1]"]


def test_variants_of_a_task_are_one_cluster() -> None:
    facts = facts_of(case("cap-terse", variables={"prompt_id": "terse"}))
    assert (facts.cluster, facts.key[2]) == ("cap", "terse")


def test_nothing_in_common_names_both_files_and_what_they_hold() -> None:
    with pytest.raises(NothingToCompare) as caught:
        compare_sides(pass_fail("old.jsonl", [True]), side("new.jsonl", [case("t0", suite="other")]), SETTINGS)
    message = str(caught.value)
    assert "old.jsonl" in message and "new.jsonl" in message
    assert "suites/s.yaml" in message and "suites/other.yaml" in message


def test_a_baseline_of_another_suite_version_says_what_changed() -> None:
    before = [case(f"t{i}") for i in range(3)]
    after = [case(f"t{i}", messages=[{"role": "user", "content": "v2"}]) for i in range(3)]
    with pytest.raises(NothingToCompare, match=r"old.jsonl is from another version of the suite.*prompt in 3"):
        compare_sides(side("old.jsonl", before), side("new.jsonl", after), SETTINGS)


def test_an_empty_baseline_is_named() -> None:
    with pytest.raises(NothingToCompare, match=r"the baseline old\.jsonl holds no case"):
        compare_sides(Side("old.jsonl", []), pass_fail("new.jsonl", [True]), SETTINGS)


# -- lists, cost and latency ------------------------------------------------------------------------------------


def test_the_lists_hold_the_cases_that_changed_outcome_or_answer() -> None:
    before = [case("a", "passed"), case("b", "failed"), case("c", "passed"), case("d", "failed"),
              case("e", "passed"), case("f", "passed", response="old")]
    after = [case("a", "failed", reason="wrong"), case("b", "passed"), case("c", "error", reason="HTTP 500"),
             case("d", "unscored"), case("e", "unscored", reason="no verdict"), case("f", "passed", response="new")]
    lists = only_row(compare_sides(side("base", before), side("now", after), SETTINGS))["lists"]
    names = {key: [entry["nodeid"].split("::")[1][0] for entry in cases] for key, cases in lists.items()}
    assert names == {"newly_failing": ["a"], "fixed": ["b"], "newly_erroring": ["c"], "newly_unscored": ["d", "e"],
                     "output_changed": ["a", "b", "c", "d", "e", "f"]}
    assert lists["newly_failing"][0] == {"nodeid": "suites/s.yaml::a[m-run1]", "baseline": "passed",
                                         "current": "failed", "reason": "wrong"}


def test_cost_and_latency_are_side_by_side() -> None:
    before = [case("a"), case("b")]
    after = [case("a", usage={"cost_usd": 0.002, "input_tokens": 20, "output_tokens": 5,
                              "judge": {"cost_usd": 0.001}}, latency_s=1.5),
             case("b", usage={"cost_usd": None, "input_tokens": 20, "output_tokens": 5})]
    spend = only_row(compare_sides(side("base", before), side("now", after), SETTINGS))["spend"]
    assert spend["baseline"] == {"cost_usd": 0.002, "cost_unknown": 0, "tokens": 30, "latency_s": 0.5}
    assert spend["current"] == {"cost_usd": 0.003, "cost_unknown": 1, "tokens": 50, "latency_s": 1.0}


def test_the_same_records_give_the_same_comparison() -> None:
    before, after = seeded_regression(120, 10)
    first = compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS)
    assert compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS) == first


def test_the_headline_names_each_suite_and_model_with_its_figures() -> None:
    before, after = seeded_regression(300, 5)
    lines = headline_lines(compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS))
    assert lines[0].startswith("compare: regressed (1 regressed of 1 suite x model comparison; 300 cases")
    assert lines[1].startswith("  s m: regressed: mean score -0.0500 [") and "pass rate -5.0 pts [" in lines[1]


# -- compare.md -------------------------------------------------------------------------------------------------

HOSTILE = "<img src=x onerror=alert(1)> [x](javascript:alert(1)) | **b** `c` # h"
OURS = {"<details><summary>Method</summary>", "</details>"}


def renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def test_compare_md_puts_the_headline_table_first() -> None:
    before, after = seeded_regression(300, 5)
    text = render_compare_markdown(compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS))
    lines = text.splitlines()
    assert lines[0] == "## Comparison with the baseline: regressed"
    assert lines[4].startswith("| Suite | Model | Cases | Mean score |")
    assert lines[6].startswith("| s | m | 300 | ") and lines[6].endswith("| **regressed** |")
    assert "**Newly failing** (" in text


def test_compare_md_escapes_every_untrusted_text() -> None:
    before = [case(f"t{i}{HOSTILE}", "passed", model=HOSTILE, suite="s", run=1) for i in range(3)]
    after = [case(f"t{i}{HOSTILE}", "failed", model=HOSTILE, suite="s", reason=HOSTILE) for i in range(3)]
    before = [replace(r, suite=HOSTILE) for r in before]
    after = [replace(r, suite=HOSTILE, model_id=HOSTILE) for r in after]
    text = render_compare_markdown(compare_sides(side(HOSTILE, before), side("now", after), SETTINGS))
    tokens = renderer().parse(text)
    inline = [child for token in tokens if token.type == "inline" for child in token.children or []]
    assert not [child for child in inline if child.type in ("link_open", "image", "html_inline")]
    blocks = {token.content.strip() for token in tokens if token.type == "html_block"}
    assert blocks <= OURS
    assert not [token for token in tokens if token.type == "heading_open" and token.tag == "h1"]
    shown = "".join(child.content for child in inline if child.type in ("text", "code_inline"))
    assert "<img src=x onerror=alert(1)>" in shown and "[x](javascript:alert(1))" in shown


def test_compare_md_cuts_long_lists_with_a_count_and_stays_under_the_cap() -> None:
    long_task = "task-" + "x" * 200
    models = [f"model-{n}" for n in range(10)]
    before = [case(f"{long_task}-{i}", "passed", model=model) for model in models for i in range(60)]
    after = [case(f"{long_task}-{i}", "failed", model=model, reason="r" * 300) for model in models for i in range(60)]
    comparison = compare_sides(side("base", before), side("now", after), SETTINGS)
    text = render_compare_markdown(comparison)
    assert len(text) <= MAX_CHARS < len("\n".join(render_sections(comparison, 50)))
    assert text.count("more cases (compare.json lists them all)") == 20  # two lists a model, each cut
    assert "compare.json has everything" not in text  # shorter lists were enough
    assert len(comparison["comparisons"][0]["lists"]["newly_failing"]) == 60  # the JSON keeps them all


def test_compare_md_is_cut_at_a_line_when_even_short_lists_do_not_fit() -> None:
    before, after = seeded_regression(300, 5)
    comparison = compare_sides(pass_fail("base", before), pass_fail("now", after), SETTINGS)
    text = render_compare_markdown(comparison, limit=1500)
    assert len(text) <= 1500
    assert text.endswith("compare.json has everything.*\n")
    assert text.startswith("## Comparison with the baseline: regressed")


def test_facts_keep_little_of_a_record() -> None:
    facts = facts_of(case("t", response="x" * 10_000))
    assert isinstance(facts, CaseFacts) and len(facts.output or "") < 40


def test_a_cut_inside_the_method_closes_its_details() -> None:
    comparison = compare_sides(pass_fail("base", [True] * 5), pass_fail("now", [True] * 5), SETTINGS)
    whole = render_compare_markdown(comparison)
    text = render_compare_markdown(comparison, limit=len(whole) - 20)
    assert len(text) <= len(whole) - 20
    assert text.count("<details>") == text.count("</details>") == 1
