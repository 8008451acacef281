"""The controller's writer: streams records to results.jsonl, then writes report.md and summary.json.

Registered only where ``workerinput`` is absent, and fed by ``pytest_runtest_logreport``, which fires
for local and xdist reports alike. A write that fails (a full disk, a read-only folder) stops the run
cleanly: the error names the file, results.jsonl keeps its complete lines, and the exit status is non-zero.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bench_plugin.plugin.options.quality_gates import GATE_SETTINGS_KEY
from bench_plugin.plugin.session import STATE_KEY, SUITE_TASKS_OUTPUT
from bench_plugin.plugin.summary_text import (
    continuation_lines,
    interrupted_lines,
    left_out_lines,
    scored_otherwise_lines,
    summary_lines,
    tasks_gone,
)
from bench_plugin.report.conversation_log import FOLDER, ConversationLogWriter
from bench_plugin.report.escape import log_line
from bench_plugin.report.spend import SessionSpend
from bench_plugin.results.journal import delete_journals, journal_records
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.rejected import set_aside_lines
from bench_plugin.results.store import ResultsStore, remove_stale_temp_files
from bench_plugin.suite.discover import SUITE_SUFFIXES

if TYPE_CHECKING:  # start-up: the comparison imports numpy; it is made only when a baseline is given
    from bench_plugin.plugin.baseline import BaselineComparison


class BenchReporter:
    """Collects case records as reports arrive and writes the run's files."""

    def __init__(self, config: pytest.Config, output_dir: Path, cache_problem: str | None = None,
                 baseline: BaselineComparison | None = None) -> None:
        self.config = config
        self.baseline = baseline  # --bench-baseline: compared with at the end, after the reports
        self.cache_problem = cache_problem  # why the response cache cannot serve this run (``cache_problem``)
        self.output_dir = output_dir
        self.store = ResultsStore(output_dir / "results.jsonl")
        self._opened = False
        # a named run resumed, --lf, --bench-rejudge: results.jsonl keeps the cases this session does not run
        self._run = config.stash[STATE_KEY].history.settings
        self.reused = 0  # cases reported again from the named run's stored records
        self.rejudged = 0  # cases whose stored transcript was scored again
        self._rejudged_now: set[str] = set()  # their node ids: the others may be scored otherwise (scoring_mix.py)
        self.scored_apart: dict[str, int] | None = None
        self.refused = 0  # selected cases that could not be re-judged: their stored records stay as they were
        self.scored_otherwise = 0  # reused cases scored otherwise than the suite says now
        self.appended = 0  # records this session wrote
        self.adopted = 0  # of those, cases that finished but were never reported (journal.py)
        self._now: set[str] = set()  # node ids reported this session (a named run's, to adopt the others)
        self.spend = SessionSpend()  # what their calls cost (the budget's line) and their cache use
        self._html = bool(getattr(config.option, "htmlpath", None))
        self._csv_files: list[str] = []
        self.conversations = ConversationLogWriter(output_dir)
        self.session: pytest.Session | None = None
        self.write_error: str | None = None  # the first failed write: nothing more is written after it
        self._write_note = ""  # what the files hold after it
        self._writers: threading.Thread | None = None  # prepares the report writers while the cases run
        self._cases = 0  # collected, to decide when the writers load (see ``writers_load_late``)
        # the cases the session selected: when the results are its own, a shard's or -k's reports expect of each
        # model the cases it was selected for, not those of other shards
        self._selected: list[str] | None = None
        self._finished = True  # the session ran to its end (not Ctrl-C, SIGTERM, -x): its journals can go
        self._interrupted = False  # Ctrl-C or SIGTERM: the summary says what did not run, and how to resume
        # node id -> the report carrying its record, until pytest-html has drawn the case's row (at its teardown)
        self._drawing: dict[str, pytest.TestReport] = {}
        self._summary: list[str] | None = None  # the terminal's per-model lines, once reported
        self._state = config.stash[STATE_KEY]
        # suite path -> task -> earlier cases left out of the reports: the suite no longer has the task
        self.left_out: dict[str, dict[str, int]] = {}
        if self._html:
            check_folder(Path(config.option.htmlpath).parent)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Say before any call that the response cache cannot serve the run: it would pay for every call."""
        if self.cache_problem is None:
            return []
        return [f"bench_plugin: WARNING: response cache: {log_line(self.cache_problem)}; the run goes on without it"]

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Keep the session, to stop it when a file cannot be written."""
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count what was collected (a case or a test of the project's own, alike: the count only sizes the run)."""
        self._cases = len(session.items)
        self._select(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller collects nothing: each worker reports the whole collection's ids."""
        self._cases = max(self._cases, len(ids))
        self._select(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker's collected suites and their tasks: which earlier records belong to tasks no suite has now."""
        found = getattr(node, "workeroutput", {}).get(SUITE_TASKS_OUTPUT)
        if isinstance(found, dict):
            tasks = self._state.suite_tasks
            for path, names in found.items():
                tasks[path] = tasks.get(path, frozenset()) | frozenset(names)

    def _select(self, nodeids: Iterable[str]) -> None:
        # under xdist every worker collects the same cases: the first one's ids are the session's
        if self._selected is None:
            self._selected = list(nodeids)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """The first case starts: its calls leave now, and the writers load while the first answers travel.

        Loaded at the first record instead, they met the first burst of answers and held the calls behind it.
        """
        if self._writers is not None:
            return
        suite = nodeid.partition("::")[0]
        if suite.endswith(SUITE_SUFFIXES) and not writers_load_late(self._cases, self._html):  # a case
            state = self.config.stash[STATE_KEY]
            self._writers = prepare_in_background(suite, self.config.rootpath, self._html,
                                                  quiet=lambda: state.wait_until_quiet(QUIET_WAIT_S))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Stream each case's record to results.jsonl as it arrives (local and xdist reports alike)."""
        data = getattr(report, "bench_record", None)
        if data is None:
            self.refused += bool(getattr(report, "bench_kept", False))
            return
        if self._html:  # built here, before pytest-html reads them, so records cross xdist only once
            from bench_plugin.report.html import extras_for  # start-up: only when an HTML report is written

            extras, earlier = extras_for(data, root=self.config.rootpath), getattr(report, "extras", None)
            report.extras = [*earlier, *extras] if earlier else extras  # type: ignore[attr-defined]
        self._record(data, reused=getattr(report, "bench_reused", None) is not None)
        self.scored_otherwise += bool(getattr(report, "bench_scored_otherwise", False))
        self.config.hook.pytest_bench_case_recorded(config=self.config, record=data)

    def _record(self, data: dict[str, Any], reused: bool = False) -> None:
        """Append one case's record to results.jsonl (unless reused: it is there), and its conversation log."""
        if self.write_error is not None:
            return
        try:
            if not self._opened:  # first record: only runs that have cases touch the output folder
                self.store.open(keep_earlier=self._run.keep_earlier)
                remove_stale_temp_files(self.output_dir, self.output_dir / FOLDER)  # of a killed session's writes
                self._opened = True
            if self._run.name is not None:
                self._now.add(data["nodeid"])
            if reused and self.store.has(data["nodeid"]):
                self.reused += 1  # already in results.jsonl, its conversation log already written
            else:
                self.store.append(data)
                self.appended += 1
                self.spend.add(data)
                self.conversations.write(data)
                if self._run.rejudge and data.get("rejudged"):
                    self.rejudged += 1
                    self._rejudged_now.add(data["nodeid"])
        except (OSError, ValueError) as exc:  # ValueError: the earlier results.jsonl has a bad line
            if isinstance(exc, ValueError):
                exc = OSError(0, str(exc))
            kept = self.store.count
            self.stop_writing(exc, self.output_dir, (
                f"{self.store.path} keeps the {kept} case{'s' * (kept != 1)} written before, each a whole "
                "line; the run stopped there and no report was written" if self._opened else "nothing was written"
            ))

    def _adopt_journals(self) -> None:
        """Record the cases of a named run that finished but that pytest never reported (Ctrl-C, SIGTERM, ``-x``).

        They ran ahead of the case pytest waited for; their records are in the journals (``journal.py``), and
        resuming the run reuses them instead of paying for them again.
        """
        results = self._run.results
        if self._run.name is None or results is None or self.write_error is not None:
            return
        for data in journal_records(results):
            if data["nodeid"] not in self._now:
                self._record(data)  # notes it in _now: a journal holds a case once per process that ran it
                self.adopted += 1
                self.config.hook.pytest_bench_case_recorded(config=self.config, record=data)

    @pytest.hookimpl(specname="pytest_runtest_logreport", wrapper=True)
    def pytest_runtest_logreport_release(self, report: pytest.TestReport) -> Any:
        """Take the record off its report once every plugin has read it: pytest keeps every report to the end.

        The store has its line and what the reports need; left on the report (kept by the terminal reporter and
        by pytest-html), the whole record was the largest thing kept per case. pytest-html draws a case's row
        from its reports when the teardown report arrives, so with HTML on the record stays until then.
        """
        result = yield
        if getattr(report, "bench_record", None) is not None:
            if self._html and report.when != "teardown":
                self._drawing[report.nodeid] = report
            else:
                del report.bench_record
        if report.when == "teardown":
            drawn = self._drawing.pop(report.nodeid, None)
            if drawn is not None and hasattr(drawn, "bench_record"):
                del drawn.bench_record
        return result

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        """Write our reports once every other plugin's sessionfinish has run, and catch those plugins' write errors.

        Ours come after pytest-html's report.html (trylast: the innermost wrapper, so still before the terminal's
        summary): the records are unpacked only now, so the two largest things the end of a run builds, report.html's
        page and the records with their summary, are never in memory together. A write error of another plugin
        (report.html, junit.xml) is reported, after ours are written, inside the terminal's summary.
        """
        other: OSError | None = None
        # an interrupted session's xdist workers may still finish cases into their journals: the next one reads them
        self._finished = session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and not (
            session.shouldstop or session.shouldfail)
        self._interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED
        try:
            return (yield)
        except OSError as exc:
            other = exc
            return None
        finally:
            self.write_reports()
            if other is not None:
                self.stop_writing(other, "a report of another plugin (report.html, junit.xml)", "")
                withdraw_html_report_line(self.config)
            if self.write_error is not None and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if self.baseline is not None and not self._gates_decide():
                session.exitstatus = self.baseline.exit_status(session.exitstatus)

    def _gates_decide(self) -> bool:
        """``--bench-exit-on-gates``: the quality gates alone decide the exit status, not the comparison's verdict."""
        settings = self.config.stash.get(GATE_SETTINGS_KEY, None)
        return settings is not None and settings.exit_on_gates

    def write_reports(self) -> None:
        """Put results.jsonl in case order and write every report from the records the store kept for them."""
        self._adopt_journals()
        if not self._opened or self.write_error is not None:
            return
        if self._writers is not None:  # imported in the background since the first case started
            self._writers.join()
        # start-up: the report writers import numpy and the dashboard (a third of the plugin's start-up);
        # only a run that recorded a case needs them
        from bench_plugin.report.write import in_case_order, write_reports  # start-up: as above
        from bench_plugin.suite.aggregates.build import read_suite_aggregates  # start-up: as above
        from bench_plugin.suite.leaderboard import read_suite_leaderboards  # start-up: as above

        records = in_case_order(self.store.report_records())
        try:
            # under xdist the controller collected no suite: aggregates come from the files records name
            leaderboards = read_suite_leaderboards((r.path for r in records), self.config.rootpath)
            earlier = self._earlier_for_leaderboards(leaderboards)
            self.store.finalize([r.nodeid for r in records])  # the file keeps them all, tasks gone from a suite too
        except OSError as exc:
            self.stop_writing(exc, self.store.path, f"{self.store.path} keeps its {len(records)} cases, each a "
                              "whole line, in the order they finished; no report was written")
            return
        records = self._after_finalize(records)
        try:
            aggregates = read_suite_aggregates((r.path for r in records), self.config.rootpath)
            written = write_reports(records, self.output_dir, aggregates, leaderboards, whole=self._whole_suite,
                                    # records of earlier sessions too (a resumed run): every model, every case
                                    selected=self._selected if not self.store.earlier else None,
                                    left_out=self.left_out, skipped=self._state.history.set_aside
                                    + self._state.history.set_aside_before,
                                    earlier=lambda path: [r for r in earlier.get(path, ()) if self._kept(r)],
                                    scored_apart=self._scored_apart(records))
        except OSError as exc:
            self.stop_writing(exc, "a report", f"{self.store.path} holds every case; some reports were not written")
            return
        self._note_written(written)
        self._compare_with_baseline(self._kept)

    def _after_finalize(self, records: list[CaseRecord]) -> list[CaseRecord]:
        """Once results.jsonl holds every case: the journals go, and the records of tasks a suite lost are left out."""
        if self._run.name is not None and self._run.results is not None and self._finished:
            delete_journals(self._run.results)  # every record they hold is in results.jsonl
        # a task removed or renamed: its earlier records no longer describe the suite
        self.left_out = tasks_gone(records, self._state.suite_tasks) if self.store.earlier else {}
        records = [r for r in records if self._kept(r)]
        self._summary = summary_lines(records)  # what the terminal prints at its summary
        return records

    def _whole_suite(self, path: str) -> list[CaseRecord]:
        """A suite's whole records, read back from results.jsonl (a leaderboard's session digest reads them)."""
        return self.store.read_records(lambda r: r.path == path and self._kept(r))

    def _kept(self, record: CaseRecord) -> bool:
        """Whether the reports keep a record: not one of a task the suite no longer has (``left_out``)."""
        return record.task not in self.left_out.get(record.path, ())

    def _earlier_for_leaderboards(self, leaderboards: Mapping[str, Any]) -> dict[str, list[CaseRecord]]:
        """What a continued run's leaderboards were given before this session: read before the file is rewritten."""
        earlier: dict[str, list[CaseRecord]] = {}
        if self.store.earlier and leaderboards:
            for record in self.store.read_earlier(lambda r: r.path in leaderboards):
                earlier.setdefault(record.path, []).append(record)
        return earlier

    def _note_written(self, written: Mapping[str, Path]) -> None:
        """The CSVs and leaderboards written, for the terminal's list of files."""
        self._csv_files = [path.name for key, path in written.items() if key.startswith("csv:")]
        self._csv_files += [str(path.relative_to(self.output_dir)) for key, path in written.items()
                            if key.startswith("leaderboard:")]

    def _compare_with_baseline(self, kept: Callable[[CaseRecord], bool]) -> None:
        """--bench-baseline: compare.md and compare.json, from the records as results.jsonl holds them now.

        Read back from the file, in case order, whole (the comparison reads prompts and answers): the same records
        in one process and under xdist.
        """
        if self.baseline is not None:
            self.baseline.compare(lambda: self.store.read_records(kept), self.store.path, self.output_dir)

    def _baseline_summary(self, terminalreporter: Any) -> None:
        if self.baseline is not None:
            self.baseline.summary(terminalreporter)

    def stop_writing(self, exc: OSError, where: Path | str, note: str) -> None:
        """Remember the first failed write and stop the run after the cases already running.

        Args:
            exc: the error; its ``filename`` names the file, else ``where`` does.
            where: the file (or what) was being written.
            note: what the output folder holds now, printed under the error.
        """
        if self.write_error is None:
            target = exc.filename if exc.filename is not None else where
            self.write_error = f"bench: cannot write {log_line(target)}: {log_line(exc.strerror or exc)}"
            self._write_note = note
        self.store.close()
        if self.session is not None and not self.session.shouldstop:
            self.session.shouldstop = self.write_error
        dsession = self.config.pluginmanager.get_plugin("dsession")  # under xdist the controller's loop
        if dsession is not None and not getattr(dsession, "shouldstop", True):
            dsession.shouldstop = self.write_error

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the per-model summary and where the files went, or which file could not be written."""
        self._print_set_aside(terminalreporter)
        if not self._opened and self.write_error is None:
            self._print_refused(terminalreporter)
            self._print_interrupted(terminalreporter)
            return
        if self._summary is None:  # no report was written: a write failed
            self._summary = summary_lines(self.store.report_records())
        terminalreporter.section("bench summary")
        for line in self._summary:
            terminalreporter.write_line(log_line(line))
        self._print_spend(terminalreporter)
        self._print_continuation(terminalreporter)
        self._print_interrupted(terminalreporter)
        if self.write_error is not None:
            terminalreporter.write_line(self.write_error, red=True, bold=True)
            if self._write_note:  # ours failed; else another plugin's report did, after ours were written
                terminalreporter.write_line(log_line(self._write_note), red=True)
                return
        self._print_files(terminalreporter)
        self._baseline_summary(terminalreporter)

    def _print_set_aside(self, terminalreporter: Any) -> None:
        """The lines of the continued results file that were not case records (``rejected.py``), each named."""
        history = self._state.history
        if self._run.results is not None and (history.set_aside or history.set_aside_before):
            terminalreporter.section("bench: earlier records left out", yellow=True)
            for line in set_aside_lines(history.set_aside, self._run.results, len(history.set_aside_before)):
                terminalreporter.write_line(log_line(line), yellow=True)

    def _print_refused(self, terminalreporter: Any) -> None:
        """Nothing was written: every selected case was refused (or none ran)."""
        if self.refused:
            terminalreporter.section("bench summary")
            for line in continuation_lines(self._run, 0, 0, 0, self.refused):
                terminalreporter.write_line(log_line(line))

    def _print_spend(self, terminalreporter: Any) -> None:
        """What the response cache did, and what this session spent against its budget."""
        from bench_plugin.report.summary import describe_cache_use  # start-up: see write_reports

        cache = self.spend.cache_use()  # this session's calls: not those of cases reused from a named run
        if cache is not None:
            terminalreporter.write_line(log_line(describe_cache_use(cache)))
        if self.cache_problem is not None:
            terminalreporter.write_line(f"response cache: {log_line(self.cache_problem)}; the run went on without it",
                                        yellow=True)
        budget = (self.config.getoption("bench_budget_usd", None), self.config.getoption("bench_budget_tokens", None))
        for line in self.spend.describe(*budget):
            terminalreporter.write_line(log_line(line))

    def _scored_apart(self, records: Sequence[CaseRecord]) -> dict[str, int] | None:
        """Re-judging part of the run: how many other records may be scored otherwise (said in every report)."""
        from bench_plugin.report.scoring_mix import scored_apart  # start-up: as the other writers

        self.scored_apart = scored_apart(records, self._rejudged_now) if self._rejudged_now else None
        return self.scored_apart

    def _print_continuation(self, terminalreporter: Any) -> None:
        """A named run's cases: adopted from journals, reused, re-judged, kept from earlier, left out."""
        kept = self.store.count - self.appended - self.reused if self._run.keep_earlier else 0
        kept -= sum(sum(tasks.values()) for tasks in self.left_out.values()) + self.refused  # said apart below
        if self.adopted:
            many = "s" * (self.adopted != 1)
            terminalreporter.write_line(f"{self.adopted} case{many} finished ahead of where pytest stopped: saved to "
                                        f"run {log_line(self._run.name)} too, and reused when it resumes")
        for line in continuation_lines(self._run, self.reused, self.rejudged, kept, self.refused) + \
                left_out_lines(self.left_out) + scored_otherwise_lines(self.scored_otherwise):
            terminalreporter.write_line(log_line(line))
        if self.scored_apart:
            from bench_plugin.report.scoring_mix import describe_scored_apart  # start-up: as the other writers

            terminalreporter.write_line(log_line(describe_scored_apart(self.scored_apart)), yellow=True)

    def _print_interrupted(self, terminalreporter: Any) -> None:
        """After Ctrl-C or SIGTERM: how many selected cases have no result, and how to finish them."""
        if not self._interrupted:
            return
        selected = sum(nodeid.partition("::")[0].endswith(SUITE_SUFFIXES) for nodeid in self._selected or ())
        recorded = self.appended + self.reused + self.refused
        for line in interrupted_lines(self._run, selected, recorded):
            terminalreporter.write_line(log_line(line), yellow=True)

    def _print_files(self, terminalreporter: Any) -> None:
        """Where the files went: those this run wrote, then those of earlier runs it left as they were."""
        # a continued run's logs are there from its earlier sessions, whether or not this one wrote any
        kept_logs = self._run.keep_earlier and (self.output_dir / FOLDER).is_dir()
        logs = [f"{FOLDER}/"] if self.conversations.written or kept_logs else []
        listed = ["results.jsonl", "report.md", "summary.json", "dashboard.html", *self._csv_files, *logs]
        terminalreporter.write_line(f"results: {log_line(self.output_dir)}{os.sep} ({', '.join(listed)})")
        earlier = left_from_earlier_runs(self.output_dir, listed)
        if earlier:
            names = log_line(", ".join(earlier))
            terminalreporter.write_line(f"left from earlier runs, not written by this one: {names}")


def left_from_earlier_runs(output_dir: Path, listed: Collection[str]) -> list[str]:
    """The CSVs and conversation logs in the output folder that this run did not write (``listed`` names those)."""
    found = sorted(path.name for path in output_dir.glob("*.csv") if path.name not in listed)
    stale_logs = (output_dir / FOLDER).is_dir() and f"{FOLDER}/" not in listed
    return [*found, f"{FOLDER}/"] if stale_logs else found


def withdraw_html_report_line(config: pytest.Config) -> None:
    """Leave out pytest-html's "Generated html report" line: after a report's write failed, its page is cut or missing.

    pytest-html writes report.html after junit.xml, so whichever of the two failed, report.html is not whole; our
    line ``bench: cannot write ...`` is then the one thing the terminal says about it.
    """
    try:
        from pytest_html.basereport import BaseReport
    except ImportError:
        return
    for plugin in list(config.pluginmanager.get_plugins()):
        if isinstance(plugin, BaseReport):
            config.pluginmanager.unregister(plugin)


LATE_WRITERS_FROM = 2000  # collected items


def writers_load_late(collected: int, html: bool) -> bool:
    """Whether the report writers wait for the end of the run, after report.html, instead of loading as it starts.

    They hold about 16 MB (numpy, the dashboard). Loaded early, that sits under pytest-html's page, the largest
    thing the end of a run builds (about 5 KB a case: its rows as JSON, escaped, rendered); from a few thousand
    cases that moment is the run's peak. Loading at the end costs about 0.15 s, nothing next to such a run.
    """
    return html and collected >= LATE_WRITERS_FROM


QUIET_WAIT_S = 0.5
"""How long each step of the writers' loading waits for the runner's loop to be quiet before it goes ahead anyway."""
WRITER_STEPS = ("numpy", "bench_plugin.report.summary", "bench_plugin.report.write")
"""The writers' imports, in steps that each hold the GIL a few ms to 30 ms (numpy's core is the longest)."""


def prepare_in_background(
    suite: str | None, root: Path, html: bool, quiet: Callable[[], object] = lambda: None
) -> threading.Thread:
    """Import the report writers and read the first case's suite for them, in a daemon thread.

    Started as the first case starts, while its calls travel and the process has nothing else to do; the end
    of the run would otherwise wait for both (the writers' imports, numpy, the dashboard and pytest-html's
    hooks, about 0.15 s; a 1000-case suite's YAML, about 0.05 s, read once and cached by
    ``suite/sections.py``). Each step waits for ``quiet`` (the runner's loop waiting on its connections) first:
    imports hold the GIL, and begun while the first calls were still being sent, they kept the first answers
    30-90 ms longer (64 cases, 200 ms, all in flight). A failure is left for the same work at the end to
    meet in place.
    """

    def prepare() -> None:
        with contextlib.suppress(Exception):
            # start-up: the writers are imported here, in the background, once the first case has started
            for name in WRITER_STEPS + (("bench_plugin.report.html",) if html else ()):
                quiet()
                importlib.import_module(name)
            if isinstance(suite, str):
                from bench_plugin.suite.aggregates.build import read_suite_aggregates  # start-up: as above

                quiet()
                read_suite_aggregates([suite], root)

    thread = threading.Thread(target=prepare, name="bench-report-prepare", daemon=True)
    thread.start()
    return thread


def check_folder(folder: Path) -> None:
    """Make the report folder now, as pytest-html is about to: a folder that cannot be made is a usage error.

    pytest-html makes it while pytest configures, where an ``OSError`` would be an INTERNALERROR.

    Raises:
        pytest.UsageError: naming the folder, why, and what to do.
    """
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # results and logs hold prompts and answers
    except OSError as exc:
        where = log_line(exc.filename if exc.filename is not None else folder)
        raise pytest.UsageError(
            f"bench: cannot write {where}: {log_line(exc.strerror or exc)}; choose a folder that can be written "
            "with --bench-output (and --bench-html PATH or --html PATH for report.html)"
        ) from exc
