"""Per-task and per-row scoring, and suites that would write the same output file.

A task's own composite and threshold, thresholds from data, scorer vars, one CSV name per run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.run.case import CasePreparer
from bench_plugin.run.catalog import BUILTIN_CATALOG
from bench_plugin.suite.aggregates.outputs import OutputClaims, OutputFile
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text

# ClawBench's shape: tasks with checks weigh C and J; a task without checks is judged alone
CLAW = """\
models:
  bot:
    provider: scripted
    script:
      - {task: "fix-*", reply: "Fixed: tests pass"}
      - {reply: "Here is a plan."}
judges:
  grader:
    provider: scripted
    script: [{reply: "Rating: [[6]]"}]
scorers:
  - {name: C, type: contains, value: "tests pass"}
  - {name: J, type: llm_judge, judge: grader, prompt: "Rate [[N]]: {{ answer }}"}
composite: "0.8*C + 0.2*J"
pass_threshold: 0.9
tasks:
  - id: fix-bug                       # 0.8 + 0.2 * 5/9 = 0.911: passes 0.9
    prompt: Fix the bug.
  - id: fix-strict                    # the task's own threshold: 0.911 < 0.95
    prompt: Fix the other bug.
    pass_threshold: 0.95
  - id: plan                          # no checks: judged alone, 5/9 = 0.556 >= 0.5
    prompt: Plan the work.
    composite: J
    pass_threshold: 0.5
"""


def run(pytester: pytest.Pytester, suites: dict[str, str], *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{f"suites/{name}": text for name, text in suites.items()})
    return pytester.runpytest("suites", "-p", "no:randomly", *args)


def records(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {record["task"]: record for record in map(json.loads, lines)}


def test_task_overrides_the_suite_composite_and_threshold(pytester: pytest.Pytester) -> None:
    result = run(pytester, {"claw": CLAW})
    result.assert_outcomes(passed=2, failed=1)
    found = records(pytester)
    assert (found["fix-bug"]["status"], found["fix-bug"]["threshold"]) == ("passed", 0.9)
    assert (found["fix-strict"]["status"], found["fix-strict"]["threshold"]) == ("failed", 0.95)
    assert found["plan"]["composite"] == pytest.approx(5 / 9, abs=1e-6)
    assert found["plan"]["scores"]["composite_detail"].startswith("J")  # type: ignore[index]


def test_composites_are_compiled_once_per_task_at_collection(tmp_path: Path) -> None:
    path = tmp_path / "claw.yaml"
    loaded = load_suite_text(CLAW, path=path, display_path="suites/claw.yaml")
    cases = expand_suite(build_suite(loaded, BuildOptions()))
    preparer = CasePreparer(BUILTIN_CATALOG)
    prepared = {case.task: preparer.prepare(case).scoring for case in cases}
    assert prepared["fix-bug"] is not None and prepared["plan"] is not None and prepared["fix-strict"] is not None
    assert prepared["fix-bug"].composite is prepared["fix-strict"].composite  # one suite composite, compiled once
    assert prepared["plan"].composite is not prepared["fix-bug"].composite
    assert prepared["fix-bug"].scorers[0] is prepared["plan"].scorers[0]  # scorers parsed once per spec


ROWS = """\
{"q": "France", "answer": "Paris", "threshold": 0.5, "expected": ["contains: Paris"]}
{"q": "Japan", "answer": "Tokyo", "threshold": 1}
{"q": "Peru", "answer": "Lima", "threshold": "0.4", "expected": [{"type": "contains", "value": "Lima"}]}
"""

PER_ROW = """\
models:
  bot:
    provider: scripted
    script:
      - {contains: France, reply: "Paris, of course"}
      - {contains: Japan, reply: "Kyoto?"}
      - {reply: "Lima"}
tasks:
  - id: "{{ q | lower }}"
    dataset: {file: rows.jsonl, scorers: expected}
    prompt: "Capital of {{ q }}?"
    pass_threshold: "{{ threshold }}"
    scorers:
      - {name: exact, type: equals, value: "{{ answer }}"}
"""


def test_each_row_brings_its_threshold_and_scorers(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", **{"suites/rows": ROWS})
    result = run(pytester, {"per_row": PER_ROW})
    # france: exact 0, contains 1 -> 0.5 >= 0.5; japan: 0 < 1; peru: exact 1 and contains 1
    result.assert_outcomes(passed=2, failed=1)
    found = records(pytester)
    assert (found["france"]["threshold"], found["france"]["composite"]) == (0.5, 0.5)
    assert found["peru"]["threshold"] == 0.4
    names = [component["name"] for component in found["peru"]["scores"]["components"]]  # type: ignore[index]
    assert names == ["exact", "contains"]


SCORER_VARS = """\
models:
  bot:
    provider: scripted
    script: [{reply: "A short, clear answer."}]
judges:
  grader:
    provider: scripted
    script:
      - {contains: "clarity", reply: "[[9]]"}
      - {contains: "depth", reply: "[[2]]"}
scorer_definitions:
  rate:
    type: llm_judge
    judge: grader
    prompt: "Rate the {{ criterion }} of this answer to {{ topic }} as [[N]]: {{ answer }}"
scorers:
  - {name: clarity, use: rate, vars: {criterion: clarity}}
  - {name: depth, use: rate, vars: {criterion: depth}}
composite: "0.5*clarity + 0.5*depth"
pass_threshold: 0
tasks:
  - {id: tides, prompt: Explain tides., vars: {topic: tides}}
"""


def test_judges_sharing_one_definition_each_see_their_own_vars(pytester: pytest.Pytester) -> None:
    run(pytester, {"judged": SCORER_VARS}).assert_outcomes(passed=1)
    components = {c["name"]: c for c in records(pytester)["tides"]["scores"]["components"]}  # type: ignore[index]
    assert components["clarity"]["value"] == pytest.approx(8 / 9, abs=1e-6)
    assert components["depth"]["value"] == pytest.approx(1 / 9, abs=1e-6)


TABLE = """\
models:
  bot: {{provider: echo}}
tasks:
  - {{id: t, prompt: hi}}
aggregates:
  tables:
    - name: counts
      by: [model]
      columns:
        - {{fn: count, name: n}}
      csv: {csv}
"""


def test_two_suites_writing_one_csv_stop_at_collection_naming_both(pytester: pytest.Pytester) -> None:
    result = run(pytester, {"alpha": TABLE.format(csv="scores.csv"), "beta": TABLE.format(csv="scores.csv")})
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*suites/beta.yaml:11: aggregates.tables[[]0[]].csv: 'scores.csv' is also written by suites/alpha.yaml:11 "
        "(aggregates.tables[[]0[]].csv); two suites of one run would overwrite each other's file",
        "*hint: give one of them another name, e.g. csv: beta-scores.csv",
    ])


def test_suites_with_their_own_csv_names_both_write(pytester: pytest.Pytester) -> None:
    result = run(pytester, {"alpha": TABLE.format(csv="alpha.csv"), "beta": TABLE.format(csv="beta.csv")})
    result.assert_outcomes(passed=2)
    assert (pytester.path / "bench-results" / "alpha.csv").is_file()
    assert (pytester.path / "bench-results" / "beta.csv").is_file()


def test_a_suite_claimed_again_is_no_clash() -> None:
    claims = OutputClaims()
    claims.claim("suites/a.yaml", [OutputFile("x.csv", "aggregates.tables[0].csv", 3)])
    claims.claim("suites/a.yaml", [OutputFile("x.csv", "aggregates.tables[0].csv", 3)])  # collected twice
    with pytest.raises(SuiteError, match=r"'x\.csv' is also written by suites/a\.yaml:4"):
        claims.claim("suites/b.yaml", [OutputFile("y.csv", "k", 1), OutputFile("x.csv", "k2", 2)])
    claims.claim("suites/c.yaml", [OutputFile("y.csv", "k", 1)])  # b's refused claim took nothing


BROKEN = """\
models:
  bot: {provider: echo}
tasks:
  - id: vars
    prompt: hi
    scorers: [{type: contains, value: "{{ word }}", vars: {word: "{{ nope }}"}}]
  - id: threshold
    prompt: hi
    pass_threshold: "{{ 3 }}"
  - id: "row-{{ row_index }}"
    dataset: {file: bad.jsonl, scorers: check}
    prompt: hi
"""


def test_validate_finds_per_case_values_before_any_call(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", **{"suites/bad": '{"check": "contians: hi"}\n'})
    pytester.makefile(".yaml", **{"suites/broken": BROKEN, "suites/alpha": TABLE.format(csv="x.csv"),
                                  "suites/beta": TABLE.format(csv="x.csv")})
    result = pytester.run("bench", "validate", "suites")
    assert result.ret == 1
    result.stderr.fnmatch_lines([
        "*vars[[]bot-run1[]]: suites/broken.yaml:6: tasks[[]0[]].scorers[[]0[]].vars.word: template error: "
        "'nope' is undefined",
        "*threshold[[]bot-run1[]]: suites/broken.yaml:9: tasks[[]1[]].pass_threshold: expected a number from 0 to 1,"
        " got 3",
    ])
    text = result.stderr.str()
    assert "row-0[bot-run1]: suites/broken.yaml:11: tasks[2].dataset (row 0, check[0]): unknown shorthand" in text
    assert "suites/beta.yaml:11: aggregates.tables[0].csv: 'x.csv' is also written by suites/alpha.yaml" in text
