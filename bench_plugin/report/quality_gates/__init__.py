"""Quality gates' verdicts: each gate of a suite (``suite/quality_gates.py``) read against the run's records.

``figures`` gives each case's value of a figure, ``relative`` the paired drop against a baseline run,
``verdicts`` a gate's outcome per model and overall, ``baseline`` reads the baseline run's records.
"""

from __future__ import annotations

from bench_plugin.report.quality_gates.baseline import BaselineError, read_baseline, resolve_baseline
from bench_plugin.report.quality_gates.verdicts import BROKEN, HELD, SKIPPED, GateVerdict, ModelFigure, judge_gate

__all__ = ["BROKEN", "HELD", "SKIPPED", "BaselineError", "GateVerdict", "ModelFigure", "judge_gate",
           "read_baseline", "resolve_baseline"]
