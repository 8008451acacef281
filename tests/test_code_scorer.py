"""Code scorers: what a function may return, how it is called, and where its code may come from."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.errors import CaseError, JudgeError
from bench_plugin.scoring.code import CodeContext, FunctionScorerType, PythonScorer, read_result
from bench_plugin.scoring.code_source import FunctionRef, check_signature
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.registry import SCORER_TYPES, adapt
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer


def make_case(root: Path | None = None, **variables: Any) -> CaseSpec:
    return CaseSpec(
        suite="demo", path="suites/demo.yaml", task="capital", model_name="small", model=None, run=2,
        messages=(Message("user", "What is the capital of France?"),), scorers=(), composite=CompositeSpec(),
        pass_threshold=None, variables=variables, templates=TemplateRenderer(root), suite_dir=root,
    )


async def _no_calls(request: CompletionRequest) -> Completion:
    raise AssertionError("code scorers make no model calls")


def spec_of(type_name: str = "fn", threshold: float | None = None, **options: Any) -> ScorerSpec:
    return ScorerSpec(name="P", type=type_name, options=options, key="tasks[0].scorers[1]", line=7,
                      threshold=threshold)


def run_function(function: Any, answer: str = "Thank you: Paris.", case: CaseSpec | None = None,
                 threshold: float | None = None, **options: Any) -> ComponentScore:
    scorer = FunctionScorerType.of(function).parse(spec_of(threshold=threshold, **options))
    case = case or make_case(capital="Paris")
    context = ScoringContext(case, answer, (*case.messages, Message("assistant", answer)), _no_calls)
    return asyncio.run(scorer.score(context))


# ----------------------------------------------------------------------------- what a function returns


@pytest.mark.parametrize(
    ("result", "threshold", "expected"),
    [
        (True, None, (1.0, True, "")),
        (False, None, (0.0, False, "")),
        (0.25, None, (0.25, None, "")),
        (1, 0.5, (1.0, True, "")),
        (0.25, 0.5, (0.25, False, "")),
        ({"pass": False, "reason": "rude"}, None, (0.0, False, "rude")),
        ({"score": 0.9, "pass": False}, None, (0.9, False, "")),
        ({"score": 0.6}, 0.5, (0.6, True, "")),
        ({"score": None, "reason": "cannot tell"}, None, (None, None, "cannot tell")),
    ],
)
def test_returned_values_read_as_value_pass_and_reason(result: Any, threshold: float | None, expected: Any) -> None:
    assert read_result(result, threshold) == expected


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([1, 2], "returned [1, 2] (list)"),
        (None, "returned None (NoneType)"),
        (1.5, "returned 1.5, expected a number from 0 to 1"),
        (float("nan"), "expected a number from 0 to 1"),
        ({"passed": True}, "key 'passed'; did you mean 'pass'?"),
        ({"pass": "yes"}, "pass: 'yes', expected true or false"),
        ({"score": 0.5, "reason": 3}, "a reason that is int, not text"),
        ({"score": "high"}, "returned score 'high', expected a number from 0 to 1"),
    ],
)
def test_anything_else_is_refused_with_what_was_returned(result: Any, message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        read_result(result, None)
    assert message in str(info.value)


# ----------------------------------------------------------------------------- calling the function


def test_function_gets_output_and_a_stable_context() -> None:
    seen: list[CodeContext] = []

    def grade(output: str, context: CodeContext) -> dict[str, Any]:
        seen.append(context)
        return {"pass": context.expected in output, "score": 0.75, "reason": f"looked for {context.expected}"}

    score = run_function(grade, value="{{ capital }}", config={"strict": True})
    (context,) = seen
    assert context.output == "Thank you: Paris." and context.expected == "Paris"
    assert dict(context.vars) == {"capital": "Paris"} and dict(context.config) == {"strict": True}
    assert context.messages[-1] == {"role": "assistant", "content": "Thank you: Paris."}
    assert (context.task, context.model, context.run) == ("capital", "small", 2)
    assert (context.turn, context.scorer) == (None, "P")
    assert (score.value, score.passed) == (0.75, True)
    assert score.detail == "test_function_gets_output_and_a_stable_context.<locals>.grade: looked for Paris"
    assert score.extra["function"].endswith("grade")


def test_one_argument_and_async_functions_are_called() -> None:
    def short(output: str) -> bool:
        return len(output) < 5

    async def polite(output: str, context: CodeContext) -> float:
        await asyncio.sleep(0)
        return 1.0 if "thank" in output.lower() else 0.0

    assert run_function(short).passed is False
    assert run_function(polite).value == 1.0


def test_target_raw_passes_the_reply_as_sent() -> None:
    assert run_function(lambda output: output == "Thank you: Paris.", target="raw").value == 1.0


def test_bad_return_fails_the_case_at_the_scorers_line() -> None:
    with pytest.raises(CaseError) as info:
        run_function(lambda output, context: "yes")
    text = str(info.value)
    assert text.startswith("suites/demo.yaml:8: tasks[0].scorers[1]: python scorer ")
    assert "returned 'yes' (str)" in text and "hint: a code scorer returns true/false" in text


def test_an_exception_in_the_function_names_its_file_and_line() -> None:
    def broken(output: str) -> bool:
        return {}["missing"]  # type: ignore[no-any-return]

    with pytest.raises(CaseError, match=r"raised KeyError: 'missing' \(test_code_scorer.py, line \d+\)"):
        run_function(broken)


def test_a_judge_error_or_no_score_leaves_the_component_unscored() -> None:
    def undecided(output: str) -> dict[str, Any]:
        return {"score": None, "reason": "no reference"}

    def refuses(output: str) -> bool:
        raise JudgeError("cannot grade this")

    with pytest.raises(JudgeError, match="gave no score: no reference"):
        run_function(undecided)
    with pytest.raises(JudgeError, match="cannot grade this"):
        run_function(refuses)


def test_unknown_option_gets_a_did_you_mean() -> None:
    with pytest.raises(ValueError, match="unknown option 'confg' for fn; did you mean 'config'"):
        FunctionScorerType.of(lambda output: True).parse(spec_of(confg={}))


def test_config_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="config must be a mapping"):
        FunctionScorerType.of(lambda output: True).parse(spec_of(config=[1]))


# ----------------------------------------------------------------------------- registration and shapes


def test_a_registered_function_is_a_scorer_type() -> None:
    def is_short(output: str) -> bool:
        return len(output) < 80

    registry = SCORER_TYPES.with_registered({"is_short": is_short})
    scorer = registry.get("is_short").parse(spec_of("is_short"))
    assert scorer.spec.type == "is_short"


def test_a_function_of_the_wrong_shape_is_refused_when_registered() -> None:
    def no_args() -> bool:
        return True

    with pytest.raises(TypeError, match=r"no_args\(\) cannot be called as \(output, context\) or \(output\)"):
        adapt(no_args)


@pytest.mark.parametrize(
    ("function", "arity"),
    [(lambda output, context: 1, 2), (lambda output: 1, 1), (lambda output, context=None: 1, 2),
     (lambda *args: 1, 2)],
)
def test_signature_decides_how_many_arguments_are_passed(function: Any, arity: int) -> None:
    assert check_signature(function, "f") == arity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("checks.py:is_polite", ("checks.py", "is_polite", True)),
        ("sub/checks.py:Grader.grade", ("sub/checks.py", "Grader.grade", True)),
        ("helpers.text:is_polite", ("helpers.text", "is_polite", False)),
    ],
)
def test_function_reference_forms(text: str, expected: tuple[str, str, bool]) -> None:
    ref = FunctionRef.parse(text)
    assert (ref.module, ref.attribute, ref.file) == expected


@pytest.mark.parametrize("text", ["nocolon", "mod:", ":fn", "mod:1fn", "my-mod:fn", "mod:class", 3])
def test_malformed_function_references_are_refused(text: Any) -> None:
    with pytest.raises(ValueError, match="function must be"):
        PythonScorer.parse(spec_of("python", function=text))


def test_python_needs_a_function() -> None:
    with pytest.raises(ValueError, match="python needs function:"):
        PythonScorer.parse(spec_of("python"))


# ----------------------------------------------------------------------------- where the code comes from


def bind(tmp_path: Path, function: str) -> Any:
    scorer = PythonScorer.parse(spec_of("python", function=function))
    scorer.check_case(make_case(tmp_path))
    return scorer


def test_a_file_in_the_suites_folder_is_imported_under_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def grade(output):\n    return 'Paris' in output\n")
    scorer = bind(tmp_path, "checks.py:grade")
    case = make_case(tmp_path)
    context = ScoringContext(case, "Paris", (), _no_calls)
    assert asyncio.run(scorer.score(context)).value == 1.0


def test_a_module_in_the_suites_folder_may_import_its_neighbours(tmp_path: Path) -> None:
    (tmp_path / "graders_neighbour.py").write_text("WORD = 'Paris'\n")
    (tmp_path / "graders_main.py").write_text(
        "from graders_neighbour import WORD\n\ndef grade(output):\n    return WORD in output\n"
    )
    scorer = bind(tmp_path, "graders_main:grade")
    context = ScoringContext(make_case(tmp_path), "Lyon", (), _no_calls)
    assert asyncio.run(scorer.score(context)).value == 0.0


def test_installed_modules_cannot_be_named_from_yaml(tmp_path: Path) -> None:
    with pytest.raises(CaseError) as info:
        bind(tmp_path, "os:system")
    assert "tasks[0].scorers[1].function: no module os in the suite's folder" in str(info.value)
    assert "pytest_bench_scorer_types" in str(info.value)


def test_a_file_outside_the_suites_folder_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (tmp_path / "outside.py").write_text("def grade(output):\n    return True\n")
    with pytest.raises(CaseError, match=r"outside\.py is outside the suite's folder"):
        bind(suite, "../outside.py:grade")


def test_a_module_that_shadows_an_imported_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("def grade(output):\n    return True\n")
    with pytest.raises(CaseError, match="module json is already imported from") as info:
        bind(tmp_path, "json:grade")
    assert "function: 'json.py:...'" in str(info.value)


def test_an_import_error_names_the_error_and_the_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import math\n\nVALUE = 1 / 0\n")
    (tmp_path / "syntax.py").write_text("def grade(output)\n    return True\n")
    with pytest.raises(CaseError, match=r"importing broken\.py failed: ZeroDivisionError: .* \(broken\.py, line 3\)"):
        bind(tmp_path, "broken.py:grade")
    with pytest.raises(CaseError, match=r"importing syntax\.py failed: SyntaxError: .* \(syntax\.py, line 1\)"):
        bind(tmp_path, "syntax.py:grade")


def test_a_missing_function_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def is_polite(output):\n    return True\n\nNOT_A_FUNCTION = 3\n")
    with pytest.raises(CaseError, match=r"checks\.py has no 'is_polit'; did you mean 'is_polite'"):
        bind(tmp_path, "checks.py:is_polit")
    with pytest.raises(CaseError, match=r"checks\.py:NOT_A_FUNCTION is a int, not a function"):
        bind(tmp_path, "checks.py:NOT_A_FUNCTION")


def test_a_broken_file_is_imported_once_for_many_cases(tmp_path: Path) -> None:
    (tmp_path / "counted.py").write_text(
        "import builtins\nbuiltins.bench_counted_imports = getattr(builtins, 'bench_counted_imports', 0) + 1\n"
        "raise RuntimeError('broken')\n"
    )
    scorer = PythonScorer.parse(spec_of("python", function="counted.py:grade"))
    for _ in range(3):
        with pytest.raises(CaseError, match="RuntimeError: broken"):
            scorer.check_case(make_case(tmp_path))
    import builtins

    assert builtins.bench_counted_imports == 1  # type: ignore[attr-defined]
    del builtins.bench_counted_imports  # type: ignore[attr-defined]
