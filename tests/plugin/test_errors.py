"""Bad input gets a message naming file, line and key; a bad case fails alone; no traceback of ours."""

from __future__ import annotations

import pytest

GOOD_TASK = "  - {id: fine, prompt: hello}\n"


def run(pytester: pytest.Pytester, suite: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"suites/demo": suite})
    return pytester.runpytest("suites", *args)


def assert_no_internal_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text
    assert "bench_plugin/" not in text, "a frame of our internals leaked into the output"


def test_schema_error_is_one_collection_error_with_file_line_and_key(pytester: pytest.Pytester) -> None:
    result = run(pytester, "models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    prompt: hi\npass_threshold: high\n")
    result.stdout.fnmatch_lines(["*suites/demo.yaml:6: pass_threshold: expected a number, got 'high'*"])
    result.assert_outcomes(errors=1)
    assert_no_internal_traceback(result)


def test_yaml_syntax_error_names_the_line(pytester: pytest.Pytester) -> None:
    result = run(pytester, "models:\n  a: {provider: echo\ntasks: []\n")
    result.stdout.fnmatch_lines(["*suites/demo.yaml:2:6: models.a: this '{' is never closed with '}'*"])
    assert_no_internal_traceback(result)


def test_missing_template_variable_fails_that_case_alone(pytester: pytest.Pytester) -> None:
    suite = "models:\n  a: {provider: echo}\ntasks:\n" + GOOD_TASK + "  - id: broken\n    prompt: 'Hi {{ nme }}'\n"
    result = run(pytester, suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*suites/demo.yaml:6: tasks[[]1[]].prompt: template error: 'nme' is undefined*", "*hint: define it*"]
    )
    assert_no_internal_traceback(result)


def test_unknown_provider_fails_that_models_cases_alone(pytester: pytest.Pytester) -> None:
    suite = "models:\n  a: {provider: echo}\n  b: {provider: opnai}\ntasks:\n" + GOOD_TASK
    result = run(pytester, suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["suites/demo.yaml:3: models.b.provider: unknown provider 'opnai'", "  hint: did you mean 'openai'?*"]
    )


def test_unknown_judge_fails_the_case_with_valid_choices(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  a: {provider: echo}\njudges:\n  grader: {provider: echo}\ntasks:\n" + GOOD_TASK
        + "scorers:\n  - {type: llm_judge, judge: gradr, prompt: x}\n"
    )
    result = run(pytester, suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*suites/demo.yaml:8: scorers[[]0[]]*gradr*grader*"])


def test_bad_composite_formula_names_the_line(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  a: {provider: echo}\ntasks:\n" + GOOD_TASK
        + "scorers:\n  - {name: C, type: contains, value: x}\ncomposite: '0.5*C + 0.5*Q'\n"
    )
    result = run(pytester, suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*suites/demo.yaml:7: composite:*Q*"])


def test_bad_regex_in_check_fails_the_case_with_its_line(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  a: {provider: echo}\ntasks:\n" + GOOD_TASK + "scorers:\n  - {type: regex, pattern: '(unclosed'}\n"
    )
    result = run(pytester, suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*suites/demo.yaml:6: scorers[[]0[]]*"])


def test_duplicate_ids_are_listed_with_the_fix(pytester: pytest.Pytester) -> None:
    suite = "models:\n  a: {provider: echo}\nmatrix:\n  n: [1, 2]\ntasks:\n  - {id: same, prompt: 'n={{ n }}'}\n"
    result = run(pytester, suite)
    result.stdout.fnmatch_lines(
        ["*1 case id(s) are not unique:*", "*same[[]a-run1[]]  2 cases of the task at line 6",
         "*hint: the task at line 6 expands to 2 cases with the same id, because its id does not use the matrix "
         "variable n: add {{ n }} to the id*"]
    )


def test_scripted_model_without_matching_rule_fails_alone(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  s:\n    provider: scripted\n    script:\n      - {task: fine, reply: ok}\n"
        "tasks:\n" + GOOD_TASK + "  - {id: other, prompt: hi}\n"
    )
    result = run(pytester, suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*scripted model 's' has no rule that answers task 'other'*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-concurrency", "0"], "*--bench-concurrency: expected a whole number >= 1, got 0*"),
        (["--bench-runs", "0"], "*--bench-runs: expected a whole number >= 1, got 0*"),
        (["--bench-base-url", "vllm"], "*--bench-base-url: expected PROVIDER=URL*"),
        (["--bench-judge", "gpt-4o"], "*--bench-judge: expected PROVIDER:MODEL*"),
    ],
)
def test_bad_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = run(pytester, "models:\n  a: {provider: echo}\ntasks:\n" + GOOD_TASK, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
