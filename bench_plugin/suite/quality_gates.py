"""The suite's ``quality_gates:`` (and ``--bench-gate``) -> frozen gate specs, checked against the suite's names.

A quality gate is a figure of a suite's results that CI holds it to: absolute (``pass_rate >= 0.8``) or relative
to a baseline run (``{figure: mean, max_drop: 0.02}``). It is not a composite's ``gates:`` (which drop a
component's term from one case's score) nor a gated turn: those read one case, a quality gate reads them all.
Each gate becomes a pytest item ``<suite>::gate[<label>]`` after the suite's cases.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from bench_plugin.core.errors import SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.spec import CaseSpec, parse_case_nodeid

SECTION = "quality_gates"
MEAN, PASS_RATE, ERROR_RATE = "mean", "pass_rate", "error_rate"
FIGURES = (MEAN, PASS_RATE, ERROR_RATE)
"""``mean``: mean score of the scored cases (or of a ``component``); ``pass_rate``: passed / (passed + failed);
``error_rate``: infrastructure errors / all cases."""
LOWER_IS_BETTER = frozenset({ERROR_RATE})
EVERY_MODEL = "*"
ON_INCONCLUSIVE = ("pass", "fail")
ITEM_NAME = "gate"
_EXPRESSION = re.compile(
    r"\s*(?P<figure>[A-Za-z_]\w*)\s*(?:\(\s*(?P<component>[^()]*?)\s*\))?\s*(?P<op>>=|<=)\s*"
    r"(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
)
_EXPRESSION_HELP = "write FIGURE >= NUMBER or FIGURE <= NUMBER, such as 'pass_rate >= 0.8' or 'mean(correct) >= 0.7'"


@dataclass(frozen=True)
class QualityGateSpec:
    """One gate: a figure over a suite's cases (each selected model alone, or one) and the bound it must keep.

    Absolute gates have ``minimum`` and/or ``maximum``; a relative gate has ``max_drop``: compared with the
    baseline's cases, the figure may not get worse by more than that, at ``confidence``; when the data can
    neither show nor exclude such a change the gate is inconclusive, which fails it only with
    ``on_inconclusive: fail``. ``origin`` is where it was written (the suite file, or ``--bench-gate``).
    """

    figure: str
    component: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    max_drop: float | None = None
    confidence: float = 0.95
    on_inconclusive: str = "pass"
    model: str = EVERY_MODEL
    tag: str | None = None
    origin: str = ""
    key: str = ""
    line: int | None = None

    @property
    def relative(self) -> bool:
        """Whether the gate compares with a baseline run (``max_drop``)."""
        return self.max_drop is not None

    @property
    def measured(self) -> str:
        """What the gate reads: ``pass_rate``, ``mean``, ``mean(correct)``."""
        return f"{self.figure}({self.component})" if self.component else self.figure

    @property
    def label(self) -> str:
        """The item's parameter: ``pass_rate>=0.8``, ``model=gpt-4o,mean(correct)>=0.7``, ``drop(mean)<=0.02``.

        It always ends in a number, so no case id (``task[model-runN]``) can look like a gate's.
        """
        scope = "".join(f"{name}={value}," for name, value in (("model", self.model), ("tag", self.tag))
                        if value not in (None, EVERY_MODEL))
        if self.max_drop is not None:
            worse = "rise" if self.figure in LOWER_IS_BETTER else "drop"
            return f"{scope}{worse}({self.measured})<={_number(self.max_drop)}"
        bounds = [f"{self.measured}>={_number(self.minimum)}" if self.minimum is not None else "",
                  f"{self.measured}<={_number(self.maximum)}" if self.maximum is not None else ""]
        return scope + ",".join(bound for bound in bounds if bound)

    def holds(self, value: float) -> bool:
        """Whether an absolute gate's figure keeps its bounds."""
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)


def _number(value: float | None) -> str:
    return format(value, "g") if value is not None else ""


def gate_nodeid(path: str, gate: QualityGateSpec) -> str:
    """The node id of a gate's item: ``suites/qa.yaml::gate[pass_rate>=0.8]``."""
    return f"{path}::{ITEM_NAME}[{gate.label}]"


def is_gate_nodeid(nodeid: str) -> bool:
    """Whether a node id names a gate's item (an xdist controller sees ids only): never a case's."""
    return f"::{ITEM_NAME}[" in nodeid and nodeid.endswith("]") and parse_case_nodeid(nodeid) is None


def parse_gate(entry: Any, *, origin: str, key: str = "", line: int | None = None) -> QualityGateSpec:
    """One gate as written: the expression ``"pass_rate >= 0.8"`` or a mapping with ``figure``.

    Raises:
        ValueError: what is wrong and how to write it (the caller adds where).
    """
    if isinstance(entry, str):
        gate = _from_expression(entry)
    elif isinstance(entry, Mapping):
        gate = _from_mapping(entry)
    else:
        raise ValueError(f"expected an expression ({_EXPRESSION_HELP}) or a mapping with 'figure', got {entry!r}")
    _check_figure(gate)
    return replace(gate, origin=origin, key=key, line=line)


def parse_gate_text(text: str, *, origin: str) -> QualityGateSpec:
    """A gate given on a command line: an expression, or a YAML mapping (``{figure: mean, max_drop: 0.02}``).

    Raises:
        ValueError: naming the text and what is wrong with it.
    """
    try:
        entry = yaml.safe_load(text)
    except yaml.YAMLError:
        entry = text
    try:
        return parse_gate(entry if isinstance(entry, dict) else text, origin=origin)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{origin} {text!r}: {exc}") from None


def _from_expression(text: str) -> QualityGateSpec:
    found = _EXPRESSION.fullmatch(text)
    if found is None:
        raise ValueError(f"cannot read the gate {text!r}: {_EXPRESSION_HELP}")
    bound = float(found["value"])
    at_least = found["op"] == ">="
    return QualityGateSpec(found["figure"], found["component"] or None, minimum=bound if at_least else None,
                           maximum=None if at_least else bound)


_MAPPING_KEYS = ("figure", "component", "min", "max", "max_drop", "confidence", "on_inconclusive", "model", "tag")


def _from_mapping(entry: Mapping[str, Any]) -> QualityGateSpec:
    unknown = [str(key) for key in entry if key not in _MAPPING_KEYS]  # a suite's are refused by the schema first
    if unknown:
        raise ValueError(f"unknown key '{unknown[0]}'; {choices_hint(unknown[0], _MAPPING_KEYS, label='keys')}")
    if "figure" not in entry:
        raise ValueError(f"a gate written as a mapping names its 'figure' ({', '.join(FIGURES)})")
    minimum, maximum, max_drop = _bounds(entry)
    return QualityGateSpec(
        figure=str(entry["figure"]), component=entry.get("component"), minimum=minimum, maximum=maximum,
        max_drop=max_drop, confidence=float(entry.get("confidence", 0.95)),
        on_inconclusive=str(entry.get("on_inconclusive", "pass")), model=str(entry.get("model", EVERY_MODEL)),
        tag=None if entry.get("tag") is None else str(entry["tag"]),
    )


def _bounds(entry: Mapping[str, Any]) -> tuple[float | None, float | None, float | None]:
    """``min``, ``max`` and ``max_drop``: at least one, and not an absolute bound with a relative one."""
    minimum, maximum, max_drop = (None if entry.get(key) is None else float(entry[key])
                                  for key in ("min", "max", "max_drop"))
    if minimum is None and maximum is None and max_drop is None:
        raise ValueError("a gate needs a bound: 'min', 'max' or 'max_drop' (relative to --bench-baseline)")
    if max_drop is not None and (minimum is not None or maximum is not None):
        raise ValueError("a gate is absolute ('min', 'max') or relative ('max_drop'), not both: write two gates")
    return minimum, maximum, max_drop


def _check_figure(gate: QualityGateSpec) -> None:
    if gate.figure not in FIGURES:
        raise ValueError(f"unknown figure '{gate.figure}'; {choices_hint(gate.figure, FIGURES, label='figures')}")
    if gate.component is not None and gate.figure != MEAN:
        raise ValueError(f"'{gate.figure}' has no component: a component's figure is its mean, "
                         f"'mean({gate.component})'")
    if not 0.0 < gate.confidence < 1.0:
        raise ValueError(f"confidence: expected a number between 0 and 1, got {gate.confidence}")
    if gate.on_inconclusive not in ON_INCONCLUSIVE:
        raise ValueError(f"on_inconclusive: expected pass or fail, got {gate.on_inconclusive!r}")


def build_quality_gates(loaded: LoadedSuite, extra: Sequence[QualityGateSpec] = ()) -> tuple[QualityGateSpec, ...]:
    """The gates of a schema-valid suite (``quality_gates:``), then ``extra`` (``--bench-gate``), each once.

    Raises:
        SuiteError: at the gate's line: an expression that cannot be read, a figure or component the suite
            does not have (with a did-you-mean).
    """
    gates: dict[str, QualityGateSpec] = {}
    for index, entry in enumerate(loaded.data.get(SECTION) or ()):
        path: KeyPath = (SECTION, index)
        key, line = format_key_path(path), loaded.lines.line_of(path)
        try:
            gate = parse_gate(entry, origin=loaded.display_path, key=key, line=line)
        except ValueError as exc:
            raise _error(loaded, str(exc), path) from None
        gates.setdefault(gate.label, gate)
    for gate in extra:
        gates.setdefault(gate.label, gate)
    _check_components(loaded, gates.values())
    return tuple(gates.values())


def _check_components(loaded: LoadedSuite, gates: Iterable[QualityGateSpec]) -> None:
    from bench_plugin.suite.scorers import component_names  # start-up: only for suites with gates

    wanted = [gate for gate in gates if gate.component is not None]
    names = component_names(loaded)[0] if wanted else []
    for gate in wanted:
        if gate.component not in names:
            hint = choices_hint(str(gate.component), names, label="components")
            raise _located(loaded, gate, f"unknown component '{gate.component}'", hint)


def check_gate_scopes(loaded: LoadedSuite, gates: Sequence[QualityGateSpec], cases: Sequence[CaseSpec],
                      models: Iterable[str]) -> None:
    """Check that each gate's ``model`` and ``tag`` name something of the suite: a typo would make a gate hold.

    Raises:
        SuiteError: at the gate's line, with a did-you-mean over the suite's models or its cases' tags.
    """
    model_names = list(dict.fromkeys([*models, *(case.model_name for case in cases)]))
    tags = list(dict.fromkeys(tag for case in cases for tag in case.tags))
    for gate in gates:
        if gate.model != EVERY_MODEL and gate.model not in model_names:
            raise _located(loaded, gate, f"unknown model '{gate.model}'",
                           choices_hint(gate.model, [EVERY_MODEL, *model_names], label="models"))
        if gate.tag is not None and gate.tag not in tags:
            hint = choices_hint(gate.tag, tags, label="tags")
            raise _located(loaded, gate, f"no case has the tag '{gate.tag}'", hint)


def _located(loaded: LoadedSuite, gate: QualityGateSpec, message: str, hint: str) -> SuiteError:
    """An error at the gate's line in the suite, or naming ``--bench-gate`` for a gate given as an option."""
    if gate.origin != loaded.display_path:
        return SuiteError(f"{gate.origin} {gate.label}: {message}", path=loaded.display_path, hint=hint)
    return SuiteError(message, path=loaded.display_path, line=gate.line, key=gate.key, hint=hint,
                      excerpt=loaded.excerpt(gate.line, context=0))


def _error(loaded: LoadedSuite, message: str, path: KeyPath) -> SuiteError:
    line = loaded.lines.line_of(path)
    return SuiteError(message, path=loaded.display_path, line=line, key=format_key_path(path),
                      excerpt=loaded.excerpt(line, context=0))


def suite_quality_gates(loaded: LoadedSuite, cases: Sequence[CaseSpec], models: Iterable[str],
                        extra: Sequence[QualityGateSpec] = ()) -> tuple[QualityGateSpec, ...]:
    """The suite's gates and ``extra``'s, checked against its components, models and cases' tags.

    Raises:
        SuiteError: at the gate's line (see ``build_quality_gates`` and ``check_gate_scopes``).
    """
    gates = build_quality_gates(loaded, extra)
    check_gate_scopes(loaded, gates, cases, models)
    return gates
