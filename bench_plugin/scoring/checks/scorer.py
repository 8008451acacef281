"""What every check shares: its options read once against the kind's table, templates, the verdict.

A check kind is a frozen dataclass deriving from ``Check``: class variables list its option keys
(required ones have no default), allowed choices and the options that may hold ``{{ templates }}``;
``build`` turns checked options into its typed fields and ``run`` judges one text. The class itself
is the scorer type (``Contains.parse(spec)``), so adding a check is one class and one registry line.
An option that holds a template can only be checked once it is rendered, for each case: such a
check parses to a ``TemplatedCheck``, which renders, builds and runs the kind per case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from typing_extensions import Self

from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.context import ComponentScore, Scorer, ScoringContext
from bench_plugin.scoring.options import IGNORED_KEYS, check_choice, check_flag, check_option_names
from bench_plugin.scoring.targets import TARGETS
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

Options = Mapping[str, Any]
Outcome = tuple[bool, str]
COMMON_DEFAULTS: Mapping[str, Any] = MappingProxyType({"target": "response"})
_MARKUP = ("{{", "{%", "{#")


def has_markup(value: Any) -> bool:
    """Whether ``value`` (or anything in it) is a template to render per case."""
    if isinstance(value, str):
        return _is_template(value)
    if isinstance(value, Mapping):
        return any(has_markup(item) for item in value.values())
    if isinstance(value, list):
        return any(has_markup(item) for item in value)
    return False


def _is_template(text: str) -> bool:
    return any(mark in text for mark in _MARKUP)


def flags(**on: bool) -> str:
    """`` (ignore_case, strip)`` for the flags that are set, for evidence text."""
    names = [name for name, value in on.items() if value]
    return f" ({', '.join(names)})" if names else ""


@dataclass(frozen=True)
class Check:
    """One check of a text: value 1.0 when it holds, else 0.0, with the evidence in ``detail``."""

    spec: ScorerSpec
    target: str

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    DEFAULTS: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    OPTIONAL: ClassVar[tuple[str, ...]] = ()
    CHOICES: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({})
    TEMPLATED: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def keys(cls) -> list[str]:
        """Every option the kind takes, in the order messages list them."""
        return [*cls.REQUIRED, *cls.DEFAULTS, *cls.OPTIONAL, *COMMON_DEFAULTS]

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Scorer:
        """Check the options; one that holds a template is checked per case, once rendered.

        Raises:
            ValueError: naming the option and what is wrong with it.
        """
        try:
            options = cls.merged(spec.type, spec.options)
            if any(has_markup(options.get(key)) for key in cls.TEMPLATED):
                return TemplatedCheck(spec, cls, MappingProxyType(options))
            return cls.build(spec, options)
        except TypeError as exc:  # a wrong type is a bad option like any other
            raise ValueError(str(exc)) from exc

    @classmethod
    def merged(cls, type_name: str, options: Options) -> dict[str, Any]:
        """The options over their defaults: known keys, required ones present, flags and choices valid.

        Raises:
            ValueError: an unknown or missing option, a value outside its choices.
            TypeError: a flag that is not true or false.
        """
        check_option_names(options, cls.keys(), type_name)
        missing = [key for key in cls.REQUIRED if key not in options]
        if missing:
            raise ValueError(f"{type_name} needs option(s) {', '.join(missing)}")
        merged = {**COMMON_DEFAULTS, **cls.DEFAULTS, **{k: v for k, v in options.items() if k not in IGNORED_KEYS}}
        cls._check_values(merged)
        return merged

    @classmethod
    def _check_values(cls, merged: Mapping[str, Any]) -> None:
        """Raises: TypeError for a flag that is not a boolean, ValueError for a value outside its choices."""
        flags = [key for key, default in cls.DEFAULTS.items() if isinstance(default, bool)]
        for key in flags:
            check_flag(key, merged[key])
        for key, allowed in {**cls.CHOICES, "target": tuple(TARGETS)}.items():
            check_choice(key, merged[key], allowed)

    @classmethod
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        """The check with its typed fields, from options ``merged`` has checked.

        Raises:
            ValueError or TypeError: a value the kind cannot use (a regex that does not compile...).
        """
        raise NotImplementedError

    def run(self, text: str) -> Outcome:
        """Whether ``text`` passes, and the evidence a person reads."""
        raise NotImplementedError

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Run the check on the target text."""
        passed, detail = self.run(TARGETS[self.target](context))
        return ComponentScore(name=self.spec.name, value=1.0 if passed else 0.0, passed=passed, detail=detail)


@dataclass(frozen=True)
class TemplatedCheck:
    """A check whose options hold templates: rendered with each case's variables, then built and run.

    ``options`` are the options as ``Check.merged`` checked them (names, flags and choices are never
    templated); only the ``TEMPLATED`` ones are rendered, and the kind's own checks wait for that.
    The templates see only the case's variables, never the answer, so binding renders them for each
    case at collection (``check_case``): a typo fails the case there, before its model is called.
    """

    spec: ScorerSpec
    kind: type[Check]
    options: Mapping[str, Any]

    def _render(self, value: Any, option: str, case: CaseSpec) -> Any:
        """``value`` with every template in it rendered for the case (lists and mappings item by item)."""
        if case.templates is None:
            return value
        if isinstance(value, list):
            return [self._render(item, option, case) for item in value]
        if isinstance(value, Mapping):
            return {key: self._render(item, option, case) for key, item in value.items()}
        return case.templates.evaluate(value, case.variables, key=f"{self.spec.key}.{option}", line=self.spec.line)

    def for_case(self, case: CaseSpec) -> Check:
        """The check with its options rendered for ``case`` and checked.

        Raises:
            CaseError: when a template fails, or an option is wrong once rendered.
        """
        spec = self.spec
        rendered = {
            key: self._render(value, key, case) if key in self.kind.TEMPLATED else value
            for key, value in self.options.items()
        }
        try:
            return self.kind.build(spec, rendered)
        except (TypeError, ValueError) as exc:
            raise CaseError(f"{spec.type}: {exc}", path=case.path, line=spec.line, key=spec.key) from exc

    def check_case(self, case: CaseSpec) -> None:
        """Render the options for ``case`` at collection (``ChecksCase``): what fails there fails before any call.

        Raises:
            CaseError: as ``for_case``.
        """
        self.for_case(case)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Render the templated options, check them and run the check.

        Raises:
            CaseError: when a template fails, or an option is wrong once rendered.
        """
        return await self.for_case(context.case).score(context)
