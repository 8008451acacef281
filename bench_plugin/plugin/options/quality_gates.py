"""The quality-gate options: gates for every suite, the baseline, whether the gates alone decide the exit status.

``--bench-gate`` adds a gate to every suite, ``--bench-baseline`` is the run relative gates compare with, and
``--bench-exit-on-gates`` makes the gates' verdicts the session's exit status.
``plugin/__init__.py`` declares them through ``add_gate_options`` and reads them once with ``read_gate_settings``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from bench_plugin.suite.quality_gates import QualityGateSpec, parse_gate_text

GATE_OPTION = "--bench-gate"


@dataclass(frozen=True)
class GateSettings:
    """What the options say about quality gates.

    ``gates`` are added to every suite. The baseline relative gates compare with is ``--bench-baseline``'s, read
    once for the comparison and the gates (``plugin/baseline.py``).
    """

    gates: tuple[QualityGateSpec, ...] = ()
    exit_on_gates: bool = False


GATE_SETTINGS_KEY = pytest.StashKey[GateSettings]()


def add_gate_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """Declare the options in the ``bench`` group, and their ini keys."""
    group.addoption(GATE_OPTION, action="append", default=[], metavar="GATE",
                    help="a quality gate for every suite, as a suite's quality_gates: entry: 'pass_rate>=0.8', "
                         "'mean(correct)>=0.7', or a YAML mapping such as '{figure: mean, max_drop: 0.02}' "
                         "(repeatable; ini bench_gates)")
    group.addoption("--bench-exit-on-gates", action="store_true", default=None,
                    help="the quality gates alone decide the exit status: failed cases still show as FAILED, but "
                         "the session exits 0 when every gate holds, 1 when one fails (ini bench_exit_on_gates)")
    parser.addini("bench_gates", "quality gates for every suite, one per line (like --bench-gate)", type="linelist",
                  default=[])
    parser.addini("bench_exit_on_gates", "the quality gates alone decide the exit status (like "
                  "--bench-exit-on-gates)", type="bool", default=False)


def read_gate_settings(config: pytest.Config) -> GateSettings:
    """The options, checked.

    Raises:
        pytest.UsageError: a gate that cannot be read, naming it and how to write it.
    """
    written = [*config.getini("bench_gates"), *config.getoption("bench_gate", [])]
    exit_on_gates = config.getoption("bench_exit_on_gates", None)
    return GateSettings(
        gates=tuple(option_gates(written)),
        exit_on_gates=bool(config.getini("bench_exit_on_gates") if exit_on_gates is None else exit_on_gates),
    )


def option_gates(texts: Iterable[str]) -> list[QualityGateSpec]:
    """Each ``--bench-gate`` value (an expression, or a YAML mapping) as a gate.

    Raises:
        pytest.UsageError: naming the value and what is wrong with it.
    """
    try:
        return [parse_gate_text(text, origin=GATE_OPTION) for text in texts]
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
