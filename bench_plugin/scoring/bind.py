"""Binding a case's scoring at collection: every scorer parsed and the composite compiled, once.

Everything that can be wrong with a case's scoring without calling a model is found here and
raised as a ``CaseError`` located at the scorer's (or the composite's) line and key, so the case
fails alone before its model is called. Suites share scorer specs across many cases (480 MT-Bench
cases, one judge spec), so parsed scorers and compiled composites are cached per spec.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, cast

from bench_plugin.core.errors import CaseError, all_of
from bench_plugin.core.registry import Registry
from bench_plugin.scoring.composite import Composite, compile_composite
from bench_plugin.scoring.context import ChecksCase, ComponentScore, Scorer, ScorerType, ScoringContext
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec

T = TypeVar("T")


@dataclass(frozen=True)
class CaseScoring:
    """What scoring one case needs, built once: its scorers parsed and its composite compiled."""

    scorers: tuple[Scorer, ...]  # in case.scorers order
    composite: Composite  # compiled formula + gates


class _Cache(Generic[T]):
    """Values by spec: by the spec itself when it is hashable, else by its identity.

    A spec kept by identity is kept alive, so that its id is never reused for another one.
    """

    def __init__(self) -> None:
        self._values: dict[Hashable, T] = {}
        self._kept: dict[int, object] = {}

    def key(self, spec: object) -> Hashable:
        try:
            hash(spec)
        except TypeError:  # options hold lists or dicts: specs are not deep-frozen
            self._kept[id(spec)] = spec
            return ("id", id(spec))
        return ("spec", spec)

    def get(self, key: Hashable) -> T | None:
        return self._values.get(key)

    def put(self, key: Hashable, value: T) -> T:
        self._values[key] = value
        return value


@dataclass(frozen=True)
class WithVariables:
    """A scorer whose templates see the variables its ``vars:`` gave for this case, over the case's own.

    The scorer is parsed once per spec and shared by many cases; the variables differ per case
    (rendered at expansion, ``suite/scorer_values.py``), so they are added to the case it scores.
    Other attributes are the inner scorer's, so that what asks a scorer what it is (the judges it
    calls, for the pass rule) gets the same answer through the wrapper.
    """

    inner: Scorer
    variables: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being built): no inner to ask
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def spec(self) -> ScorerSpec:
        """The inner scorer's spec."""
        return self.inner.spec

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Score with the case's variables and the scorer's own (its own win)."""
        return await self.inner.score(replace(context, case=with_variables(context.case, self.variables)))


def with_variables(case: CaseSpec, variables: Mapping[str, Any]) -> CaseSpec:
    """``case`` as one scorer sees it: its variables with the scorer's own over them."""
    return replace(case, variables={**case.variables, **variables})


class ScoringBinder:
    """Parses scorers and compiles composites for cases, each distinct spec once.

    Args:
        types: the scorer types the cases may name (a suite folder's catalog).
    """

    def __init__(self, types: Registry[ScorerType]) -> None:
        self.types = types
        self._scorers: _Cache[Scorer] = _Cache()
        self._composites: _Cache[Composite] = _Cache()

    def bind(self, case: CaseSpec) -> CaseScoring:
        """Parse the case's scorers and compile its composite, without calling anything.

        Checks that every scorer type exists and accepts its options, that scorer names are unique,
        that what only the case can tell fits (each judge a scorer names is under ``judges:``, a
        pairwise baseline is one of the suite's models), and that the composite compiles.

        Raises:
            CaseError: located at the scorer's (or the composite's) line and key, so the case fails
                alone with a message that points into the YAML; every scorer's problem and the
                composite's at once (``all_of``), not one per try.
        """
        problems: list[CaseError] = []
        scorers = self._scorers_of(case, problems)
        composite: Composite | None = None
        try:
            composite = self.composite(case)
        except CaseError as exc:
            problems.append(exc)
        error = all_of(problems)
        if error is not None:
            raise error
        assert composite is not None, "a composite that does not compile raises"
        return CaseScoring(tuple(scorers), composite)

    def _scorers_of(self, case: CaseSpec, problems: list[CaseError]) -> list[Scorer]:
        """The case's scorers bound; each one's problem (a name used twice, a type, options) added to ``problems``."""
        first_line: dict[str, int | None] = {}
        scorers: list[Scorer] = []
        for spec in case.scorers:
            if spec.name in first_line:
                problems.append(_name_used_twice(case, spec, first_line[spec.name]))
                continue
            first_line[spec.name] = spec.line
            try:
                scorers.append(self._bound(spec, case))
            except CaseError as exc:
                problems.append(exc)
        return scorers

    def _bound(self, spec: ScorerSpec, case: CaseSpec) -> Scorer:
        """The scorer, checked against the case (with the scorer's own ``vars:``, which it then keeps)."""
        scorer = self.scorer(spec, case)
        own = case.scorer_vars.get(spec.name)
        if _checks_case(type(scorer)):  # what only the case can tell (a pairwise baseline among its models)
            cast(ChecksCase, scorer).check_case(with_variables(case, own) if own else case)
        return WithVariables(scorer, own) if own else scorer

    def scorer(self, spec: ScorerSpec, case: CaseSpec) -> Scorer:
        """The scorer ``spec`` describes, parsed once.

        Raises:
            CaseError: an unknown type (at ``KEY.type``) or bad options (at the scorer's key).
        """
        key = self._scorers.key(spec)
        found = self._scorers.get(key)
        if found is not None:
            return found
        try:
            scorer_type = self.types.get(spec.type)
        except ValueError as exc:
            raise CaseError(str(exc), path=case.path, line=spec.line, key=f"{spec.key}.type") from exc
        try:
            scorer = scorer_type.parse(spec)
        except (ValueError, TypeError) as exc:
            raise CaseError(f"{spec.type}: {exc}", path=case.path, line=spec.line, key=spec.key) from exc
        return self._scorers.put(key, scorer)

    def composite(self, case: CaseSpec) -> Composite:
        """The case's composite compiled against its scorer names, once per (composite, names).

        Raises:
            CaseError: at the composite's line and key, for a formula or gate that does not compile.
        """
        spec: CompositeSpec = case.composite
        names = tuple(scorer.name for scorer in case.scorers)
        key = self._composites.key((spec, names))
        found = self._composites.get(key)
        if found is not None:
            return found
        try:
            composite = compile_composite(spec, names)
        except ValueError as exc:
            raise CaseError(str(exc), path=case.path, line=spec.line, key=spec.key) from exc
        return self._composites.put(key, composite)


def _name_used_twice(case: CaseSpec, spec: ScorerSpec, first: int | None) -> CaseError:
    where = f" (first at line {first + 1})" if first is not None else ""
    return CaseError(
        f"scorer name {spec.name!r} is used twice{where}",
        path=case.path,
        line=spec.line,
        key=f"{spec.key}.name",
        hint="give each scorer its own name: the composite formula refers to scorers by name",
    )


@functools.cache
def _checks_case(kind: type) -> bool:
    """Whether scorers of ``kind`` check their case, asked once per type.

    ``isinstance`` against a runtime protocol costs about 10 us, at every case of a large suite.
    """
    return issubclass(kind, ChecksCase)
