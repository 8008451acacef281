"""A latency benchmark's load steps measure one process: say so when pytest-xdist splits their cases."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pytest

from bench_plugin.suite.spec import CaseSpec


def warn_if_split(cases: Sequence[CaseSpec], suite_nodeid: str, config: pytest.Config) -> None:
    """Warn (once per suite and worker; pytest's summary folds the copies) that each worker keeps its own steps.

    Each worker runs its share of a step under the step's whole cap, so the figures per step would be a
    worker's, not the step's: the run still goes, as other suites in it may not have steps.
    """
    if not hasattr(config, "workerinput") or all(case.load is None for case in cases):
        return
    warnings.warn(pytest.PytestWarning(
        f"{suite_nodeid}: load steps under pytest-xdist: each worker keeps its own steps and caps, so the latency "
        "figures per step are not the step's; run a latency benchmark without -n"), stacklevel=1)
