"""A run of three scripted models of known skill: report.md and summary.json separate them, repeat and audit."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

# strong says yes everywhere; weak and twin only on q-1..q-3 (and strict); every model fails "broken";
# "strict" checks for "YES!", which nobody says, while the judge likes the "yes" it gets
SUITE = """
suite: sections
runs: 2
models:
  strong:
    provider: scripted
    script:
      - {task: broken, reply: "no idea"}
      - {reply: "yes"}
  weak:
    provider: scripted
    script: &weak
      - {task: "q-[123]", reply: "yes"}
      - {task: strict, reply: "yes"}
      - {reply: "no idea"}
  twin:
    provider: scripted
    script: *weak
judges:
  grader:
    provider: scripted
    script:
      - {contains: "yes", reply: "Rating: [[9]]"}
      - {reply: "Rating: [[1]]"}
tasks:
  - id: "q-{{ n }}"
    matrix: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]}
    tags: ["kind=quiz", "half={{ 'low' if n <= 7 else 'high' }}"]
    prompt: "Question {{ n }}: say yes."
  - id: strict
    vars: {expected: "YES!"}
    tags: ["kind=strict"]
    prompt: "Say yes."
  - id: broken
    tags: ["kind=broken"]
    prompt: "Say yes."
scorers:
  - {name: C, type: contains, value: "{{ expected | default('yes') }}"}
  - {name: J, type: llm_judge, judge: grader, prompt: "Rate: {{ answer }}"}
composite: "0.5*C + 0.5*J"
pass_threshold: 0.5
"""
TIMING = re.compile(r"\b\d+\.\d+ s\b")


def outputs(pytester: pytest.Pytester, folder: str = "bench-results") -> tuple[dict[str, Any], str]:
    path = pytester.path / folder
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    return summary, (path / "report.md").read_text(encoding="utf-8")


@pytest.fixture
def run(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", **{"suites/sections": SUITE})
    pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off").assert_outcomes(passed=40, failed=56)
    return pytester


def test_the_strong_model_is_a_tier_of_its_own(run: pytest.Pytester) -> None:
    summary, report = outputs(run)
    (suite,) = summary["suites"]
    comparisons = suite["comparisons"]
    assert comparisons["tiers"] == [["strong"], ["twin", "weak"]]
    assert (comparisons["test"], comparisons["correction"], comparisons["unit"]) == ("permutation", "holm", "task")
    pairs = {(pair["a"], pair["b"]): pair for pair in comparisons["pairs"]}
    assert pairs["strong", "weak"]["significant"] and pairs["strong", "weak"]["ci_low"] > 0
    assert pairs["weak", "twin"]["diff"] == 0 and not pairs["weak", "twin"]["significant"]
    assert "Tiers: **1.** strong; **2.** twin, weak." in report
    assert "### Ratings from per-case comparisons" in report
    strong = next(row for row in suite["models"] if row["model"] == "strong")
    assert (strong["expected"], strong["scored"], strong["coverage"]) == (32, 32, 1.0)
    assert strong["intervals"]["mean_composite"]["units"] == 16  # runs repeat: tasks are resampled
    assert "| strong | 32 / 32 (100.0%) |" in report


def test_repeats_breakdowns_and_audit_are_in_both_files(run: pytest.Pytester) -> None:
    summary, report = outputs(run)
    (suite,) = summary["suites"]
    repeats = suite["repeats"]
    strong = next(row for row in repeats["models"] if row["model"] == "strong")
    assert repeats["ks"] == [1, 2] and strong["pass_at_k"][0] == {"k": 1, "value": 0.875, "tasks": 16}
    assert (strong["stable-pass"], strong["flaky"], strong["stable-fail"]) == (14, 0, 2)
    assert "### Repeats" in report and "| strong | 16 | 14 | 0 | 2 |" in report
    assert [d["dimension"] for d in suite["breakdowns"]] == ["kind", "half"]
    assert "#### By kind (tag)" in report
    found = {(item["kind"], item["title"]): item["cases"] for item in suite["audit"]}
    assert found["all_zero", "every model scored 0 on task broken"] == [
        f"suites/sections.yaml::broken[{model}-run{run}]" for model in ("strong", "weak", "twin") for run in (1, 2)
    ]
    assert len(found["check_vs_judge", "check C failed but judge J passed"]) == 6
    assert "- **every model scored 0 on task broken** (likely a broken task or checker)" in report
    assert "  - `suites/sections.yaml::strict[strong-run1]`" in report


@pytest.mark.slow
def test_xdist_writes_the_same_sections(run: pytest.Pytester) -> None:
    run.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--bench-html", "off", "-n", "2",
                             "--bench-output", "parallel").assert_outcomes(passed=40, failed=56)
    single, single_report = outputs(run)
    parallel, parallel_report = outputs(run, "parallel")
    for key in ("comparisons", "breakdowns", "repeats", "ratings", "audit", "statistics"):
        assert parallel["suites"][0][key] == single["suites"][0][key], key
    assert TIMING.sub("", parallel_report) == TIMING.sub("", single_report)
