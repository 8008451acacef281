"""Code scorers: a Python function grades the answer (``type: python``, or a function registered by name).

``{type: python, function: checks.py:is_polite}`` names a function in the suite's folder
(``code_source.py`` finds and imports it, at collection); a function returned from
``pytest_bench_scorer_types`` in a ``conftest.py`` is a type of its own (``{type: is_polite}``).
Either way the function is called as ``function(output, context)`` (or ``function(output)``) with
a ``CodeContext``, may be ``async``, and returns:

- ``True`` / ``False``: value 1.0 / 0.0, passed or not;
- a number from 0 to 1: the value (passed when it reaches the scorer's ``threshold``, if it has one);
- a mapping with any of ``score`` (0..1, or None: unscored), ``pass`` (true/false) and ``reason`` (text),
  like promptfoo's ``GradingResult``; ``pass`` alone scores 1.0 / 0.0.

Anything else, or an exception, fails the case at the scorer's line (the function is the suite's code).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.errors import CaseError, JudgeError
from bench_plugin.core.hints import did_you_mean
from bench_plugin.scoring.code_source import FunctionRef, ScorerFunction, check_signature, load_function
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.options import check_choice, check_option_names, is_number
from bench_plugin.scoring.targets import TARGETS
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

OPTION_KEYS = ("value", "config", "target")
"""Options of every code scorer; ``type: python`` also takes ``function``."""
RESULT_KEYS = ("score", "pass", "reason")
RETURNS = "true/false, a number from 0 to 1, or a mapping with score / pass / reason"
_SHOWN_REASON = 300


@dataclass(frozen=True)
class CodeContext:
    """What a code scorer's function is given besides ``output``: plain data, the same in every version.

    Attributes:
        output: the text being scored (the scorer's ``target``: the answer by default); also the
            first argument.
        expected: the scorer's ``value`` option rendered for the case (None when it has none).
        vars: the case's variables (read them; do not change them).
        config: the scorer's ``config`` option, as written (empty when it has none).
        messages: the conversation as ``{"role", "content", ...}`` mappings, the answer last.
        task: the task id. model: the model's name in the suite. run: the run number (from 1).
        turn: the turn being scored under ``per_turn`` (from 1), else None.
        scorer: the scorer's name (the component's).
    """

    output: str
    expected: Any = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    messages: tuple[Mapping[str, Any], ...] = ()
    task: str = ""
    model: str = ""
    run: int = 1
    turn: int | None = None
    scorer: str = ""


@dataclass(frozen=True)
class CodeScorer:
    """A parsed code scorer: which function, how to call it, and its options.

    ``ref`` is set for ``type: python`` (the function is imported at collection, in ``check_case``);
    ``function`` and ``arity`` (2: ``(output, context)``, 1: ``(output)``) for a registered one.
    """

    spec: ScorerSpec
    name: str
    arity: int
    target: str
    expected: Any = None
    config: Mapping[str, Any] = field(default_factory=dict)
    ref: FunctionRef | None = None
    function: ScorerFunction | None = None

    @classmethod
    def parse_options(cls, spec: ScorerSpec, *, ref: FunctionRef | None = None,
                      function: ScorerFunction | None = None, arity: int = 2) -> CodeScorer:
        """The options every code scorer takes: ``value`` (templated), ``config`` (a mapping), ``target``.

        Raises:
            ValueError: an unknown option, a ``config`` that is not a mapping, an unknown target.
        """
        allowed = ("function", *OPTION_KEYS) if ref is not None else OPTION_KEYS
        check_option_names(spec.options, allowed, spec.type)
        config = spec.options.get("config", {})
        if not isinstance(config, Mapping):
            raise ValueError(f"config must be a mapping (passed to the function as context.config), got {config!r}")
        target = check_choice("target", spec.options.get("target", "response"), tuple(TARGETS))
        name = ref.text if ref is not None else getattr(function, "__qualname__", spec.type)
        return cls(spec, name, arity, target, spec.options.get("value"), config, ref, function)

    def check_case(self, case: CaseSpec) -> None:
        """Import the named function now, at collection, so that a broken file fails here and in ``bench validate``.

        Raises:
            CaseError: at ``KEY.function``, saying what could not be found or imported.
        """
        if self.ref is not None:
            load_function(self.ref, case, key=f"{self.spec.key}.function", line=self.spec.line)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Call the function with the target text and a ``CodeContext``, and read what it returns.

        Raises:
            CaseError: the function raised, or returned something that is not a verdict.
            JudgeError: the function raised one (it could not decide: the component is unscored).
        """
        spec, case = self.spec, context.case
        function, arity = self._function(case)
        expected = self._expected(case)
        output = TARGETS[self.target](context)
        result = await self._call(function, arity, output, self._context(context, output, expected), case)
        try:
            value, passed, reason = read_result(result, spec.threshold)
        except ValueError as exc:
            raise self._error(case, str(exc)) from exc
        if value is None:
            raise JudgeError(f"{self.name} gave no score" + (f": {reason}" if reason else ""))
        detail = f"{self.name}: {_shown(reason, quote=False)}" if reason else f"{self.name} returned {_shown(result)}"
        return ComponentScore(name=spec.name, value=value, raw=value, passed=passed, detail=detail,
                              extra={"function": self.name})

    def _function(self, case: CaseSpec) -> tuple[ScorerFunction, int]:
        """The function and how many arguments it takes, imported for the case's suite folder when named."""
        if self.function is not None:
            return self.function, self.arity
        assert self.ref is not None, "a code scorer has a function or a reference to one"
        function = load_function(self.ref, case, key=f"{self.spec.key}.function", line=self.spec.line)
        return function, check_signature(function, self.name)  # load_function checked it takes one of the forms

    def _expected(self, case: CaseSpec) -> Any:
        """``value:``, rendered for the case when it is a template."""
        if self.expected is None or case.templates is None:
            return self.expected
        return case.templates.evaluate(self.expected, case.variables, key=f"{self.spec.key}.value",
                                       line=self.spec.line)

    def _context(self, context: ScoringContext, output: str, expected: Any) -> CodeContext:
        """What the function's second argument holds: the case, its messages, the rendered ``value``."""
        case = context.case
        return CodeContext(
            output=output, expected=expected, vars=case.variables, config=self.config,
            messages=tuple(message.to_dict() for message in context.transcript), task=case.task,
            model=case.model_name, run=case.run, turn=context.turn.index if context.turn is not None else None,
            scorer=self.spec.name,
        )

    async def _call(
        self, function: ScorerFunction, arity: int, output: str, code_context: CodeContext, case: CaseSpec
    ) -> Any:
        """What the function returned (awaited when it is a coroutine).

        Raises:
            CaseError: the function raised. JudgeError: it raised one (it could not decide).
        """
        try:
            result = function(output, code_context) if arity == 2 else function(output)
            if inspect.isawaitable(result):
                result = await result
        except (JudgeError, CaseError):
            raise
        except (Exception, SystemExit) as exc:  # sys.exit() in a scorer stopped the runner's thread: the run hung
            raise self._error(case, f"raised {type(exc).__name__}: {exc}{_where(exc)}") from exc
        return result

    def _error(self, case: CaseSpec, problem: str) -> CaseError:
        return CaseError(f"python scorer {self.name} {problem}", path=case.path, line=self.spec.line,
                         key=self.spec.key, hint=f"a code scorer returns {RETURNS}")


def read_result(result: Any, threshold: float | None) -> tuple[float | None, bool | None, str]:
    """``(value, passed, reason)`` of what a function returned; value None: it could not decide.

    Raises:
        ValueError: a value of another kind, a number outside 0..1, an unknown key, a non-text reason.
    """
    if isinstance(result, bool):
        return (1.0 if result else 0.0), result, ""
    if isinstance(result, (int, float)):
        value = _fraction(result, "returned")
        return value, (value >= threshold if threshold is not None else None), ""
    if isinstance(result, Mapping):
        return _read_mapping(result, threshold)
    raise ValueError(f"returned {_shown(result)} ({type(result).__name__})")


def _read_mapping(result: Mapping[str, Any], threshold: float | None) -> tuple[float | None, bool | None, str]:
    """``{score, pass, reason}``: a score alone is held to the threshold, a pass alone is 1 or 0."""
    _check_result_keys(result)
    reason = result.get("reason", "")
    if not isinstance(reason, str):
        raise ValueError(f"returned a reason that is {type(reason).__name__}, not text")
    passed = _passed(result.get("pass"))
    score = result.get("score")
    if score is None:
        return (None if passed is None else float(passed)), passed, reason
    value = _fraction(score, "returned score")
    if passed is None and threshold is not None:
        passed = value >= threshold
    return value, passed, reason


def _passed(passed: Any) -> bool | None:
    """``pass``: true, false or none given."""
    if passed is not None and not isinstance(passed, bool):
        raise ValueError(f"returned pass: {passed!r}, expected true or false")
    return passed


def _check_result_keys(result: Mapping[str, Any]) -> None:
    unknown = [key for key in result if key not in RESULT_KEYS]
    if unknown:
        guess = did_you_mean(str(unknown[0]), RESULT_KEYS)
        raise ValueError(f"returned a mapping with key {unknown[0]!r}" + (f"; {guess}" if guess else "")
                         + f" (keys: {', '.join(RESULT_KEYS)})")


def _fraction(number: Any, what: str) -> float:
    if not is_number(number) or not math.isfinite(number) or not 0 <= number <= 1:
        raise ValueError(f"{what} {number!r}, expected a number from 0 to 1")
    return float(number)


def _shown(result: Any, *, quote: bool = True) -> str:
    """The returned value (or reason) as evidence: short."""
    text = repr(result) if quote else str(result)
    return text if len(text) <= _SHOWN_REASON else text[: _SHOWN_REASON - 3] + "..."


def _where(exc: BaseException) -> str:
    """`` (file.py, line 12)``: the innermost frame of the error (the user's code, usually)."""
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None:
        return ""
    code = frame.tb_frame.f_code
    return f" ({code.co_filename.rsplit('/', 1)[-1]}, line {frame.tb_lineno})"


class PythonScorer:
    """``type: python``: ``function`` names ``module:function`` or ``file.py:function`` in the suite's folder."""

    @classmethod
    def parse(cls, spec: ScorerSpec) -> CodeScorer:
        """Check the options; the function itself is imported per suite folder, in ``check_case``.

        Raises:
            ValueError: a missing or malformed ``function``, or another bad option.
        """
        if "function" not in spec.options:
            raise ValueError("python needs function: 'module:function' or 'file.py:function' (in the suite's folder)")
        return CodeScorer.parse_options(spec, ref=FunctionRef.parse(spec.options["function"]))


@dataclass(frozen=True)
class FunctionScorerType:
    """The scorer type of a function registered by name (``pytest_bench_scorer_types`` returning a function).

    Args:
        function: called as ``function(output, context)`` or ``function(output)``.
    """

    function: ScorerFunction
    arity: int

    @classmethod
    def of(cls, function: object) -> FunctionScorerType:
        """Check that ``function`` can be called as a code scorer.

        Raises:
            TypeError: it takes neither ``(output, context)`` nor ``(output)``.
        """
        name = getattr(function, "__qualname__", type(function).__name__)
        try:
            arity = check_signature(function, name)
        except ValueError as exc:
            raise TypeError(str(exc)) from exc
        return cls(function, arity)  # type: ignore[arg-type]

    def parse(self, spec: ScorerSpec) -> CodeScorer:
        """Raises: ValueError for an option other than ``value``, ``config``, ``target``."""
        return CodeScorer.parse_options(spec, function=self.function, arity=self.arity)
