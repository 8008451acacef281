"""Verdicts of any kind, per-scorer pass rules and the built-in graders, run end to end with offline models."""

from __future__ import annotations

import json
from typing import Any

import pytest


def run(pytester: pytest.Pytester, suite: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"suites/demo": suite})
    return pytester.runpytest("suites", "-p", "no:cacheprovider", "-p", "no:randomly", *args)


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    found = [json.loads(line) for line in lines]
    return {f"{r['task']}[{r['model']}]": r for r in found}


def component(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in record["scores"]["components"] if c["name"] == name)


# ----------------------------------------------------------------------------- verdicts of any kind

VERDICTS = """\
models:
  right: {provider: scripted, script: [{reply: "Paris"}]}
  half: {provider: scripted, script: [{reply: "Paris or Lyon"}]}
  wrong: {provider: scripted, script: [{reply: "Lyon"}]}
judges:
  inspect-like:
    provider: scripted
    script:
      - {contains: "Paris or Lyon", reply: "Hedged.\\nGRADE: P"}
      - {contains: "Answer: Paris", reply: "Correct.\\nGRADE: C"}
      - {reply: "Wrong city.\\nGRADE: I"}
  promptfoo-like:
    provider: scripted
    script:
      - {regex: "^Answer: Paris$", reply: '{"reason": "names Paris", "pass": true, "score": 1}'}
      - {reply: '```json\\n{"reason": "no", "pass": false, "score": 0}\\n```'}
tasks:
  - {id: capital, prompt: "Capital of France?"}
scorers:
  - name: G
    type: llm_judge
    judge: inspect-like
    prompt: "Answer: {{ answer }}"
    parse: {regex: "GRADE: ([CPI])"}
    verdict: letter_grade
  - name: B
    type: llm_judge
    judge: promptfoo-like
    prompt: "Answer: {{ answer }}"
    parse: {json_field: pass}
    verdict: true_false
    threshold: 1
"""


def test_letter_grades_and_booleans_become_scores(pytester: pytest.Pytester) -> None:
    run(pytester, VERDICTS).assert_outcomes(passed=1, failed=2)
    found = records(pytester)
    assert [(component(found[f"capital[{m}]"], "G")["value"], component(found[f"capital[{m}]"], "G")["verdict"])
            for m in ("right", "half", "wrong")] == [(1.0, "C"), (0.5, "P"), (0.0, "I")]
    assert component(found["capital[right]"], "G")["detail"] == "judge inspect-like: C = 1/1"
    assert [component(found[f"capital[{m}]"], "B")["value"] for m in ("right", "half", "wrong")] == [1.0, 0.0, 0.0]
    # B has the pass rule (threshold 1); G only counts toward the composite
    assert found["capital[half]"]["reason"] == "score 0.2500; failed: B 0 < 1"
    assert found["capital[right]"]["reason"] == "score 1.0000; passed: B >= 1"
    assert found["capital[right]"]["threshold"] is None


def test_a_custom_map_reads_labels_and_an_unknown_label_is_unscored(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  bot: {provider: scripted, script: [{reply: "fine"}]}
judges:
  j: {provider: scripted, script: [{task: good, reply: "VERDICT: Excellent"}, {reply: "VERDICT: meh"}]}
tasks:
  - {id: good, prompt: a}
  - {id: odd, prompt: b}
scorers:
  - {name: Q, type: llm_judge, judge: j, prompt: "{{ answer }}", verdict: {map: {excellent: 3, good: 2, poor: 1}}}
"""
    run(pytester, suite).assert_outcomes(passed=1, skipped=1)
    found = records(pytester)
    assert component(found["good[bot]"], "Q")["value"] == 1.0  # 3 on the map's scale [1, 3]
    assert "the grade 'meh' is not one of the map labels (excellent, good, poor)" in found["odd[bot]"]["reason"]


def test_a_bad_verdict_option_fails_the_case_at_its_line(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  bot: {provider: scripted, script: [{reply: "fine"}]}
judges:
  j: {provider: scripted, script: [{reply: "GRADE: C"}]}
tasks:
  - {id: t, prompt: a}
scorers:
  - {name: Q, type: llm_judge, judge: j, prompt: "{{ answer }}", verdict: {map: {C: 1, I: 1}}}
"""
    result = run(pytester, suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*demo.yaml:8: scorers[[]0]: llm_judge: verdict.map gives every label the score 1*"])
    # a misspelt name is the schema's to catch, before anything runs
    result = run(pytester, suite.replace("{map: {C: 1, I: 1}}", "letter_grades"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*demo.yaml:8: scorers[[]0].verdict: expected one of number, letter_grade, pass_fail*",
                                 "*hint: did you mean 'letter_grade'?"])


def test_an_unquoted_yes_as_a_map_label_is_caught_before_anything_runs(pytester: pytest.Pytester) -> None:
    suite = VERDICTS.replace("verdict: true_false", "verdict: {map: {yes: 1, no: 0}}")
    result = run(pytester, suite)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*demo.yaml:*: scorers[[]1].verdict.map: keys must be plain strings, got bool*"])


# ----------------------------------------------------------------------------- the pass rule

PASS_RULE = """\
models:
  good: {provider: scripted, script: [{reply: "Paris"}]}
  bad: {provider: scripted, script: [{reply: "Lyon"}]}
judges:
  harsh: {provider: scripted, script: [{reply: "Rating: [[2]]"}]}
tasks:
  - {id: capital, prompt: "Capital of France?"}
scorers:
  - {name: C, type: contains, value: Paris}
  - {name: J, type: llm_judge, judge: harsh, prompt: "Rate: {{ answer }}"}
"""


def test_by_default_checks_decide_and_a_judge_without_threshold_only_counts(pytester: pytest.Pytester) -> None:
    run(pytester, PASS_RULE).assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    assert found["capital[good]"]["reason"] == "score 0.5556; passed: C"
    assert found["capital[bad]"]["reason"].startswith("score 0.0556; failed: C (")


def test_a_judge_with_a_threshold_decides_too(pytester: pytest.Pytester) -> None:
    suite = PASS_RULE.replace("prompt: \"Rate: {{ answer }}\"}", "prompt: \"Rate: {{ answer }}\", threshold: 0.5}")
    run(pytester, suite).assert_outcomes(failed=2)
    assert records(pytester)["capital[good]"]["reason"] == "score 0.5556; failed: J 0.1111 < 0.5"


def test_pass_threshold_keeps_the_composite_rule(pytester: pytest.Pytester) -> None:
    run(pytester, PASS_RULE + "pass_threshold: 0.5\n").assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    assert found["capital[good]"]["reason"] == "score 0.5556 >= threshold 0.5"
    assert found["capital[good]"]["threshold"] == 0.5


def test_a_threshold_outside_0_to_1_is_a_schema_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, PASS_RULE.replace("value: Paris}", "value: Paris, threshold: 7}"))
    result.stdout.fnmatch_lines(["*demo.yaml:9: scorers[[]0].threshold: expected a number <= 1, got 7*"])


# ----------------------------------------------------------------------------- model_graded_qa / _fact

SELF_GRADED = """\
models:
  atlas:
    provider: scripted
    script:
      - {purpose: judge, contains: "Reference answer]\\nParis", reply: "{{ last_user }}\\nGRADE: C"}
      - {purpose: judge, reply: "It names another city.\\nGRADE: I"}
      - {reply: "Paris"}
tasks:
  - {id: france, prompt: "Capital of France?", vars: {reference: Paris}}
  - {id: peru, prompt: "Capital of Peru?", vars: {reference: Lima}}
scorers:
  - {name: QA, type: model_graded_qa}
"""


def test_model_graded_qa_grades_with_the_model_under_test_when_no_judge_is_named(pytester: pytest.Pytester) -> None:
    run(pytester, SELF_GRADED).assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    france = component(found["france[atlas]"], "QA")
    assert (france["value"], france["passed"], france["verdict"]) == (1.0, True, "C")
    # the grading prompt holds the question, the reference and the answer, and asks for a GRADE line
    assert "[Question]\nCapital of France?" in france["judge_output"]
    assert "[Answer to grade]\nParis" in france["judge_output"]
    assert "GRADE: C if the answer is correct, or GRADE: I if it is not." in france["judge_output"]
    assert [(c["purpose"], c["model"]) for c in found["france[atlas]"]["call_log"]] == [
        ("candidate", "atlas"), ("judge", "atlas")]
    assert found["peru[atlas]"]["reason"].startswith("score 0.0000; failed: QA (judge atlas: I = 0/1")


def test_partial_credit_scores_half_and_passes_only_with_a_threshold(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  atlas: {provider: scripted, script: [{reply: "Paris, I think"}]}
judges:
  grader: {provider: scripted, script: [{contains: "GRADE: P if", reply: "GRADE: P"}, {reply: "GRADE: I"}]}
tasks:
  - {id: strict, prompt: "Capital of France?", vars: {reference: Paris}}
  - id: lenient
    prompt: "Capital of France?"
    vars: {reference: Paris}
    scorers: [{name: QA, type: model_graded_qa, judge: grader, partial_credit: true, threshold: 0.5}]
scorers:
  - {name: QA, type: model_graded_qa, judge: grader, partial_credit: true}
"""
    run(pytester, suite).assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    assert component(found["strict[atlas]"], "QA")["value"] == 0.5
    assert found["strict[atlas]"]["status"] == "failed" and found["lenient[atlas]"]["status"] == "passed"


def test_model_graded_fact_and_a_missing_reference(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  atlas: {provider: scripted, script: [{reply: "Paris is the capital, on the Seine."}]}
judges:
  grader:
    provider: scripted
    script: [{regex: "\\\\[Fact\\\\]\\\\n(\\\\w+)", reply: "It says {{ groups[1] }}.\\nGRADE: C"}]
tasks:
  - {id: fact, prompt: "Capital of France?", vars: {fact: Paris}}
  - {id: none, prompt: "Capital of France?", vars: {fact: ''}}
scorers:
  - {name: F, type: model_graded_fact, judge: grader, reference: "{{ fact }}"}
"""
    result = run(pytester, suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*demo.yaml:11: scorers[[]0].reference: model_graded_fact grades against a reference, and this case has none*",
        "*hint: give reference:*",
    ])
    assert component(records(pytester)["fact[atlas]"], "F")["detail"] == "judge grader: C = 1/1"


def test_a_graders_unknown_option_gets_a_did_you_mean(pytester: pytest.Pytester) -> None:
    suite = SELF_GRADED.replace("type: model_graded_qa}", "type: model_graded_qa, partial_credits: true}")
    result = run(pytester, suite)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*demo.yaml:12: scorers[[]0].partial_credits: unknown key 'partial_credits'",
                                 "*did you mean 'partial_credit'?*"])


# ----------------------------------------------------------------------------- llm_rubric

def test_llm_rubric_reads_reason_pass_and_score(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  polite: {provider: scripted, script: [{reply: "Thank you for asking! Refunds take 5 days."}]}
  curt: {provider: scripted, script: [{reply: "No."}]}
  odd: {provider: scripted, script: [{reply: "Whatever."}]}
judges:
  grader:
    provider: scripted
    script:
      - {contains: "Thank you", reply: '{"reason": "Polite and precise.", "pass": true, "score": 0.9}'}
      - {contains: "No.", reply: '{"reason": "Curt.", "pass": false, "score": 0.6}'}
      - {reply: "I will not answer in JSON."}
tasks:
  - {id: refund, prompt: "How long do refunds take?", vars: {days: 5}}
scorers:
  - {name: R, type: llm_rubric, judge: grader, criteria: "Is polite and says refunds take {{ days }} days"}
"""
    run(pytester, suite).assert_outcomes(passed=1, failed=1, skipped=1)
    found = records(pytester)
    polite = component(found["refund[polite]"], "R")
    assert (polite["value"], polite["passed"], polite["reason"]) == (0.9, True, "Polite and precise.")
    assert polite["detail"] == "judge grader: pass, score 0.9: Polite and precise."
    # a score of 0.6 does not overrule the grader's fail
    assert found["refund[curt]"]["reason"] == "score 0.6000; failed: R (judge grader: fail, score 0.6: Curt.)"
    assert "no JSON object with 'pass' or 'score'" in found["refund[odd]"]["reason"]


def test_llm_rubric_needs_criteria(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  bot: {provider: scripted, script: [{reply: "x"}]}
tasks:
  - {id: t, prompt: a}
scorers:
  - {name: R, type: llm_rubric}
"""
    result = run(pytester, suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*demo.yaml:6: scorers[[]0]: llm_rubric: llm_rubric needs criteria*"])


# ----------------------------------------------------------------------------- factuality

def test_factuality_maps_the_relation_to_a_score(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  same: {provider: scripted, script: [{reply: "Paris is the capital."}]}
  less: {provider: scripted, script: [{reply: "It is in France."}]}
  wrong: {provider: scripted, script: [{reply: "Lyon is the capital."}]}
judges:
  grader:
    provider: scripted
    script:
      - {contains: "compare]\\nParis", reply: "Same facts.\\nVERDICT: same"}
      - {contains: "compare]\\nIt is", reply: "Only part.\\nVERDICT: **subset**"}
      - {reply: "Contradiction.\\nVERDICT: disagree"}
tasks:
  - {id: capital, prompt: "Capital of France?", vars: {reference: "Paris is the capital of France."}}
scorers:
  - {name: F, type: factuality, judge: grader, scores: {subset: 0.4}}
"""
    run(pytester, suite).assert_outcomes(passed=2, failed=1)
    found = records(pytester)
    assert [component(found[f"capital[{m}]"], "F")["value"] for m in ("same", "less", "wrong")] == [1.0, 0.4, 0.0]
    assert component(found["capital[less]"], "F")["verdict"] == "subset"
    assert found["capital[wrong]"]["reason"].startswith("score 0.0000; failed: F (judge grader: disagree = 0/1")


# ----------------------------------------------------------------------------- MT-Bench by name

MT_BENCH = """\
models:
  bot:
    provider: scripted
    script: [{turn: 1, reply: "first answer"}, {reply: "second answer"}]
judges:
  gpt4: {provider: scripted, script: [{reply: "Rating: [[8]]\\n{{ last_user }}"}]}
tasks:
  - {id: writing, turns: ["Write a haiku.", "Now a limerick."], vars: {refs: ["", ""]}}
  - id: math
    turns: ["2+2?", "3+3?"]
    vars: {refs: ["4", "6"]}
scorers:
  - {name: S, type: mt_bench, judge: gpt4, per_turn: true, reference: "{{ refs[turn - 1] }}"}
"""


def test_mt_bench_picks_fastchats_prompt_by_turn_and_reference(pytester: pytest.Pytester) -> None:
    run(pytester, MT_BENCH).assert_outcomes(passed=2)
    found = records(pytester)
    prompts = {task: [(c["name"], c["prompt"], c["raw"]) for c in found[f"{task}[bot]"]["scores"]["components"]
                      if "prompt" in c] for task in ("writing", "math")}
    assert prompts == {
        "writing": [("S.t1", "single-v1", 8.0), ("S.t2", "single-v1-multi-turn", 8.0)],
        "math": [("S.t1", "single-math-v1", 8.0), ("S.t2", "single-math-v1-multi-turn", 8.0)],
    }
    turn2 = component(found["math[bot]"], "S.t2")["judge_output"]
    assert "### User:\n2+2?\n\n### Assistant A:\nfirst answer" in turn2
    assert "### User:\n3+3?\n\n### Assistant A:\nsecond answer" in turn2
    assert "### User:\n2+2?\n\n### Reference answer:\n4" in turn2 and "### Reference answer:\n6" in turn2
    assert "[Question]\n2+2?" in component(found["math[bot]"], "S.t1")["judge_output"]


def test_mt_bench_pairwise_compares_both_orders(pytester: pytest.Pytester) -> None:
    suite = """\
models:
  mine: {provider: scripted, script: [{reply: "a careful answer"}]}
  base: {provider: scripted, default: false, script: [{reply: "a sloppy answer"}]}
judges:
  gpt4:
    provider: scripted
    script:
      - {regex: "Assistant A's Answer\\\\]\\\\na careful", reply: "[[A]]"}
      - {reply: "[[B]]"}
tasks:
  - {id: q, prompt: "Explain tides."}
scorers:
  - {name: P, type: mt_bench_pairwise, judge: gpt4, against: {model: base}}
"""
    run(pytester, suite).assert_outcomes(passed=1)
    pairwise = component(records(pytester)["q[mine]"], "P")
    # the judge's rule matched FastChat's "[The Start of Assistant A's Answer]" block in both orders
    assert (pairwise["value"], pairwise["prompt"], pairwise["pairwise"]["outcome"]) == (1.0, "pair-v2", "win")
