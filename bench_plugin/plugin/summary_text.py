"""What the bench summary says at the end of a session, line by line: per model, and of earlier results."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from bench_plugin.results.record import FAILED, PASSED, CaseRecord
from bench_plugin.run.run_history import RunSettings


def continuation_lines(run: RunSettings, reused: int, rejudged: int, kept: int, refused: int = 0) -> list[str]:
    """What the session took from earlier results: cases reused from a named run, cases kept in results.jsonl."""
    lines = []
    if rejudged:
        lines.append(f"{rejudged} case{'s' * (rejudged != 1)} re-judged from stored transcripts (no call to the models "
                     "under test; earlier scores are kept in each record's judgments)")
    if refused:
        lines.append(f"{refused} selected case{'s' * (refused != 1)} could not be re-judged (ERROR above, saying why): "
                     f"{'their' if refused != 1 else 'its'} stored record{'s' * (refused != 1)} kept as "
                     f"{'they were' if refused != 1 else 'it was'}")
    if run.name is not None and reused:
        lines.append(f"{reused} case{'s' * (reused != 1)} reused from run {run.name} (not sent to a model again; "
                     "--bench-retry-errors re-runs infrastructure errors, --bench-fresh starts over)")
    if kept > 0:
        lines.append(f"results.jsonl also keeps {kept} earlier case{'s' * (kept != 1)} this session did not select")
    return lines


def interrupted_lines(run: RunSettings, selected: int, recorded: int) -> list[str]:
    """What an interrupted session left undone: the selected cases without a result, and how to run them."""
    missing = max(selected - recorded, 0)
    if not missing:
        return []
    line = f"interrupted: {missing} of {selected} selected case{'s' * (selected != 1)} did not run or finish"
    if run.name is None:
        return [f"{line} (a named run, --bench-run NAME, resumes where it stopped)"]
    return [f"{line}; the same command resumes run {run.name}: the cases it finished are reused, not sent again"]


def scored_otherwise_lines(cases: int) -> list[str]:
    """What the terminal says of reused cases whose scores the suite's scorers would not give now."""
    if not cases:
        return []
    many = cases != 1
    return [f"{cases} reused case{'s' * many} {'were' if many else 'was'} scored by other scorers, a composite or a "
            f"threshold than the suite has now: {'their' if many else 'its'} scores are the earlier ones "
            "(--bench-rejudge scores them again)"]


def tasks_gone(records: Iterable[CaseRecord], suite_tasks: Mapping[str, Collection[str]]) -> dict[str, dict[str, int]]:
    """Suite path -> task -> how many records, of the tasks that a suite collected this session no longer has.

    Only suites collected this session are judged (``BenchState.suite_tasks``): a record of a suite the session
    did not read, or of a model or a run the session did not select, still describes its suite.
    """
    gone: dict[str, dict[str, int]] = {}
    for record in records:
        tasks = suite_tasks.get(record.path)
        if tasks is not None and record.task not in tasks:
            counts = gone.setdefault(record.path, {})
            counts[record.task] = counts.get(record.task, 0) + 1
    return gone


def left_out_lines(left_out: Mapping[str, Mapping[str, int]], shown: int = 5) -> list[str]:
    """What the terminal says of earlier records left out of the reports because their tasks are gone."""
    lines = []
    for path, tasks in left_out.items():
        cases = sum(tasks.values())
        names = ", ".join(list(tasks)[:shown]) + (f" and {len(tasks) - shown} more" if len(tasks) > shown else "")
        lines.append(f"{cases} earlier case{'s' * (cases != 1)} of {path} left out of the reports: "
                     f"the suite no longer has task{'s' * (len(tasks) != 1)} {names} (results.jsonl keeps them; "
                     "--bench-fresh starts the run over)")
    return lines


def summary_lines(records: list[CaseRecord]) -> list[str]:
    """One line per suite and model: counts by outcome, the mean score, the cost, and streamed answers' timing."""
    from bench_plugin.report.latency import describe_latency  # start-up: see write_reports
    from bench_plugin.report.summary import describe_spend

    groups: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        groups.setdefault((record.suite, record.model), []).append(record)
    width = max((len(f"{s} {m}") for s, m in groups), default=0)
    lines = []
    for (suite, model), group in groups.items():
        counts = Counter(r.status for r in group)
        scored = [r.composite for r in group if r.composite is not None and r.status in (PASSED, FAILED)]
        mean = f"mean {sum(scored) / len(scored):.4f}" if scored else "mean -"
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        spend = f"; {found}" if (found := describe_spend(group)) else ""
        latency = f"; {timed}" if (timed := describe_latency(group)) else ""  # streamed answers (``stream: true``)
        cases = f"{len(group)} case{'s' * (len(group) != 1)}"
        lines.append(f"{suite + ' ' + model:<{width}}  {cases}: {parts}; {mean}{spend}{latency}")
    return lines

