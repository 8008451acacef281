"""The check machinery: a ``CheckType`` row and the ``CheckScorer`` that turns any row into a scorer.

The scorer merges a check's options with their defaults, rejects unknown keys (with a
did-you-mean), wrong types and bad choices, renders ``{{ templates }}`` in the options that allow
them, and runs the check on the target text. The checks themselves live in ``checks.py``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.errors import CaseError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.suite.spec import ScorerSpec

Options = Mapping[str, Any]
Outcome = tuple[bool, str]

def _raw(context: ScoringContext) -> str:
    turn = context.last_turn
    return (turn.raw or "") if turn is not None else context.response


def _thinking(context: ScoringContext) -> str:
    turn = context.last_turn
    return (turn.thinking or "") if turn is not None else ""


# Where the checked text comes from; the seam for checking tool calls or files later. ``response``
# is the answer (after any thinking tags), ``raw`` the reply as sent back, ``thinking`` the reasoning.
TARGETS: dict[str, Callable[[ScoringContext], str]] = {
    "response": lambda context: context.response,
    "raw": _raw,
    "thinking": _thinking,
}
COMMON_DEFAULTS: Mapping[str, Any] = {"target": "response"}
_IGNORED_KEYS = frozenset({"name", "type"})  # tolerated if a spec builder leaves them in options


def _accept(options: Options) -> None:
    return None


@dataclass(frozen=True)
class CheckType:
    """One check: what it computes, its option keys (required ones have no default), what it accepts.

    ``choices`` lists allowed values of enum-like options; a key whose default is a bool must be a bool.
    ``templated`` options are rendered with the case variables before the check runs.
    """

    run: Callable[[str, Options], Outcome]
    required: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    templated: tuple[str, ...] = ()
    check: Callable[[Options], None] = _accept

    @property
    def keys(self) -> list[str]:
        return [*self.required, *self.defaults, *self.optional, *COMMON_DEFAULTS]


def _has_markup(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_has_markup(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_markup(item) for item in value)
    return False


class CheckScorer:
    """The scorer for one row of ``CHECK_TYPES``: value 1.0 or 0.0, with the evidence in ``detail``."""

    def __init__(self, type_name: str, check_type: CheckType) -> None:
        self.type_name = type_name
        self.check_type = check_type

    def _with_defaults(self, options: Options) -> dict[str, Any]:
        kind = self.check_type
        unknown = [key for key in options if key not in kind.keys and key not in _IGNORED_KEYS]
        for key in unknown:
            close = difflib.get_close_matches(key, kind.keys, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"unknown option {key!r} for {self.type_name}{hint} (options: {', '.join(kind.keys)})"
            )
        missing = [key for key in kind.required if key not in options]
        if missing:
            raise ValueError(f"{self.type_name} needs option(s) {', '.join(missing)}")
        merged = {
            **COMMON_DEFAULTS,
            **kind.defaults,
            **{k: v for k, v in options.items() if k not in _IGNORED_KEYS},
        }
        for key, default in kind.defaults.items():
            if isinstance(default, bool) and not isinstance(merged[key], bool):
                raise TypeError(f"{key} must be true or false, got {merged[key]!r}")
        for key, allowed in {**kind.choices, "target": tuple(TARGETS)}.items():
            if merged[key] not in allowed:
                raise ValueError(f"{key} must be one of {', '.join(allowed)}, got {merged[key]!r}")
        return merged

    def _checked(self, options: Options, *, rendered: bool) -> dict[str, Any]:
        # option checks raise TypeError for a wrong type; callers of validate expect ValueError
        try:
            merged = self._with_defaults(options)
            if rendered or not any(_has_markup(merged.get(key)) for key in self.check_type.templated):
                self.check_type.check(merged)
        except TypeError as exc:
            raise ValueError(str(exc)) from exc
        return merged

    def validate(self, spec: ScorerSpec) -> None:
        """Check the options; checks of options that hold templates wait until they are rendered.

        Raises:
            ValueError: naming the option and what is wrong with it.
        """
        self._checked(spec.options, rendered=False)

    def _render(self, value: Any, spec: ScorerSpec, option: str, context: ScoringContext) -> Any:
        templates = context.case.templates
        if templates is None:
            return value
        if isinstance(value, list):
            return [self._render(item, spec, option, context) for item in value]
        if isinstance(value, Mapping):
            return {key: self._render(item, spec, option, context) for key, item in value.items()}
        key = f"{spec.key}.{option}"
        return templates.evaluate(value, context.case.variables, key=key, line=spec.line)

    def _resolve(self, spec: ScorerSpec, context: ScoringContext) -> dict[str, Any]:
        case = context.case
        try:
            options = self._checked(spec.options, rendered=False)
            for key in self.check_type.templated:
                if key in options:
                    options[key] = self._render(options[key], spec, key, context)
            return self._checked(options, rendered=True)
        except ValueError as exc:
            raise CaseError(f"{self.type_name}: {exc}", path=case.path, line=spec.line, key=spec.key) from exc

    async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
        """Run the check on the target text.

        Raises:
            CaseError: when an option is wrong once its templates are rendered.
        """
        options = self._resolve(spec, context)
        passed, detail = self.check_type.run(TARGETS[options["target"]](context), options)
        return ComponentScore(name=spec.name, value=1.0 if passed else 0.0, passed=passed, detail=detail)
