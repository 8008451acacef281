"""Quality gates judged over stored results (``bench gates``): the merged shards of a run, or any results files.

A session run in shards (``--bench-shard``) holds part of each suite's cases, so its gate items are skipped; here
every suite named by the records has its gates read again from its file (with the command's own), and judged over
all its records, as the gate items would have judged them in one session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from bench_plugin.report.quality_gates.baseline import BaselineError
from bench_plugin.report.quality_gates.verdicts import BROKEN, HELD, GateVerdict, judge_gate
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.quality_gates import QualityGateSpec, build_quality_gates, gate_nodeid
from bench_plugin.suite.sections import read_suite_sections


def judge_stored_results(
    records: Sequence[CaseRecord], root: Path, extra: Sequence[QualityGateSpec] = (),
    baseline: Mapping[str, CaseRecord] | BaselineError | None = None,
) -> dict[str, GateVerdict]:
    """Each gate's verdict by its node id, suites in the records' order; suites are read under ``root``.

    A suite file that is gone or no longer valid has no gates here (as for its aggregates).
    """
    by_path: dict[str, list[CaseRecord]] = {}
    for record in sorted(records, key=lambda r: r.case_index):
        by_path.setdefault(record.path, []).append(record)
    found = read_suite_sections(by_path, root, lambda loaded: build_quality_gates(loaded, extra))
    return {gate_nodeid(path, gate): judge_gate(gate, by_path[path], baseline if gate.relative else None)
            for path, gates in found.items() for gate in gates}


def verdict_lines(verdicts: Mapping[str, GateVerdict]) -> list[str]:
    """What ``bench gates`` prints: each gate's outcome, why, and each model's figure."""
    lines = []
    for nodeid, verdict in verdicts.items():
        lines.append(f"{verdict.outcome.upper()} {nodeid}: {verdict.reason}")
        lines += [f"    {line.strip()}" for line in verdict.lines()[1:]]
    judged = [verdict for verdict in verdicts.values() if verdict.outcome in (HELD, BROKEN)]
    broken = sum(verdict.outcome == BROKEN for verdict in judged)
    lines.append(f"{len(verdicts)} gates: {len(judged) - broken} hold, {broken} broken, "
                 f"{len(verdicts) - len(judged)} skipped")
    return lines
