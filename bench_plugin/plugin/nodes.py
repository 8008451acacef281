"""SuiteFile(pytest.File) and CaseItem(pytest.Item), nothing else."""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

import pytest

from bench_plugin.core.errors import CaseFailed, SuiteError
from bench_plugin.core.text_safety import shown
from bench_plugin.plugin.gate_items import gate_items
from bench_plugin.plugin.load_notice import warn_if_split
from bench_plugin.plugin.options.quality_gates import GATE_SETTINGS_KEY
from bench_plugin.plugin.refusals import likely_cause
from bench_plugin.plugin.session import STATE_KEY, BenchState
from bench_plugin.providers.offline_checks import check_offline_models
from bench_plugin.results import record as rec
from bench_plugin.results.record import CaseRecord
from bench_plugin.run.case import CasePreparer, PreparedCase, build_record
from bench_plugin.run.catalog import base_urls_from_hooks, catalog_from_hooks
from bench_plugin.run.rejudge import judged_again
from bench_plugin.run.run_history import CANNOT_REJUDGE, REJUDGE, REUSE
from bench_plugin.suite.aggregates.outputs import OutputClaims
from bench_plugin.suite.asked import scoring_digest
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_file
from bench_plugin.suite.quality_gates import suite_quality_gates
from bench_plugin.suite.spec import CaseSpec

RECORD_KEY = pytest.StashKey[CaseRecord]()
OUTPUTS_KEY = pytest.StashKey[OutputClaims]()  # which suite writes each output file (collected so far)
REUSED_KEY = pytest.StashKey[str]()  # the run whose stored record the case reports again
SETUP_PROBLEM_KEY = pytest.StashKey[str]()  # why the case could not start (shown alone, without a traceback)
KEPT_KEY = pytest.StashKey[bool]()  # a case that cannot be re-judged: its stored record is kept as it is
SCORED_OTHERWISE_KEY = pytest.StashKey[bool]()  # a reused case scored otherwise than the suite says now
_MARKER_UNSAFE = re.compile(r"\W+")


class SuiteFile(pytest.File):
    """A YAML suite: one item per model x task x run, then one per quality gate."""

    def collect(self) -> Iterator[pytest.Item]:
        """Load, build and expand the suite; a broken file is one collection error with its message."""
        state: BenchState = self.config.stash[STATE_KEY]
        try:
            loaded = load_suite_file(self.path, display_path=self.nodeid)
            catalog = catalog_from_hooks(self.ihook)  # this folder's conftest.py files may add names
            known = tuple(catalog.providers.names())
            # a conftest.py may point a provider at a server it starts; the user's --bench-base-url wins
            urls = {**base_urls_from_hooks(self.ihook, self.config), **state.build_options.base_urls}
            suite = build_suite(loaded, replace(state.build_options, provider_types=known, base_urls=urls))
            cases = expand_suite(suite, state.expand_options)
            warn_if_split(cases, self.nodeid, self.config)
            # a rule or replay key that never works is a typo, not a failure
            check_offline_models(loaded, suite, cases, catalog.builtin_only)
            # all suites write into one output folder: a second suite naming a file stops here
            self.config.stash.setdefault(OUTPUTS_KEY, OutputClaims()).claim(self.nodeid, suite.outputs)
            state.note_tasks(self.nodeid, cases)
            gates = suite_quality_gates(loaded, cases, suite.models, self.config.stash[GATE_SETTINGS_KEY].gates)
        except SuiteError as exc:
            raise self.CollectError(collection_message(exc, self.config)) from None
        preparer = CasePreparer(catalog)
        # a named run keeps how each case was scored, and so does a re-judging (its reports tell two scorings apart)
        named = state.history.settings.name is not None or state.history.settings.rejudge
        # one MarkDecorator per name for the whole file: pytest keeps every item to the end of the session,
        # and a mark made per item was a quarter of an item's memory
        marks: dict[str, pytest.MarkDecorator] = {}
        for case in map(preparer.prepare, cases):
            if named:
                case = replace(case, scored_by=scoring_digest(case.spec))
            # An explicit nodeid: pytest >= 9.2 parses stored ids (--lf cache) into name + [params],
            # and a name with brackets only matches when the item's id is parsed the same way.
            nodeid = f"{self.nodeid}::{case.spec.case_id}"
            item = CaseItem.from_parent(self, name=case.spec.case_id, nodeid=nodeid, prepared=case)
            for marker in case_markers(case.spec):
                if marker not in marks:
                    state.register_marker(self.config, marker)
                    marks[marker] = getattr(pytest.mark, marker)
                item.add_marker(marks[marker])
            yield item
        yield from gate_items(self, gates)


def _result_unless_stopped(state: BenchState, nodeid: str, prepared: PreparedCase) -> CaseRecord:
    """The case's record; pytest's interruption when a signal stopped the run before the case started.

    The signal handler sets the stop flag, then raises KeyboardInterrupt; Python drops that exception when it
    lands in a weakref callback or ``__del__`` ("Exception ignored in"). The flag is what counts: a case it
    kept from starting ends the session as Ctrl-C does, never as an ERROR of every case left.
    """
    try:
        return state.scheduler.result(nodeid, prepared)
    except concurrent.futures.CancelledError:
        if state.calls.status.calls_stopped:
            raise KeyboardInterrupt("the run was stopped (Ctrl-C or SIGTERM)") from None
        raise

def collection_message(error: SuiteError, config: pytest.Config) -> str:
    """A broken file's message, and (unless the user already passed it) how to run the other suites anyway.

    pytest stops the whole run at any collection error ("Interrupted: 1 error during collection").
    """
    if config.getoption("continue_on_collection_errors", False):
        return str(error)
    return (f"{error}\n  (pytest runs nothing while a file has a collection error: fix it, or pass "
            "--continue-on-collection-errors to run the other suites)")


def case_markers(case: CaseSpec) -> list[str]:
    """``bench``, ``model_<name>``, ``provider_<name>`` and one per tag (``category=math`` -> ``category_math``)."""
    names = ["bench", f"model_{case.model_name}"]
    if case.model is not None:
        names.append(f"provider_{case.model.provider.name}")
    names.extend(case.tags)
    return [_MARKER_UNSAFE.sub("_", n).strip("_") for n in names if n]


class CaseItem(pytest.Item):
    """One case. Its work runs on the runner's loop; the item waits for the record and reports it."""

    def __init__(self, *, prepared: PreparedCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._prepared: PreparedCase | None = prepared

    @property
    def prepared(self) -> PreparedCase:
        """The case ready to run, until the item ran (``release``)."""
        if self._prepared is None:
            raise RuntimeError(f"{self.nodeid}: the case is let go once its item ran (CaseItem.release)")
        return self._prepared

    @prepared.setter
    def prepared(self, prepared: PreparedCase) -> None:
        self._prepared = prepared

    @property
    def case(self) -> CaseSpec:
        """The case's spec (with its problem, when it cannot run)."""
        return self.prepared.spec

    def release(self) -> None:
        """Let the case go once the item ran: its spec, messages and bound scorers (about 1 KB a case).

        pytest keeps every item to the end of the session; what a finished case needs from here on is its
        reports (the record travels on them) and ``location``, which pytest took as the item started.
        """
        self._prepared = None

    def to_run(self) -> PreparedCase | None:
        """What to hand the runner for this case: None when it has a problem or reuses a stored record.

        Under ``--bench-rejudge`` it is the case with its stored record, whose transcript is scored again.
        """
        if self.case.problem is not None:
            return None
        history = self.config.stash[STATE_KEY].history
        decision = history.decide(self.nodeid, self.case)
        if decision in (REUSE, CANNOT_REJUDGE):
            return None
        if decision == REJUDGE and self.prepared.stored is None:
            self.prepared = replace(self.prepared, stored=history.record(self.nodeid))
        return self.prepared

    def setup(self) -> None:
        """Wait for the case's record; an infrastructure failure fails here, so pytest shows ERROR.

        A case a named run finished earlier reports its stored record again, calling no model. The failure is
        ``pytest.fail(pytrace=False)``: for another exception raised in setup pytest formats the traceback,
        reading the source of every frame (about 50 ms a case, in the main thread: 50 s for an outage of
        1000 cases), only for ``annotate_report`` to put the message in its place.
        """
        if self.case.problem is not None:
            return
        state: BenchState = self.config.stash[STATE_KEY]
        prepared = self.to_run()
        if prepared is None:
            history = state.history
            if history.decide(self.nodeid, self.case) == CANNOT_REJUDGE:
                self.stash[SETUP_PROBLEM_KEY] = history.rejudge_problem(self.nodeid)
                if self.nodeid in history:
                    self.stash[KEPT_KEY] = True
                pytest.fail(self.stash[SETUP_PROBLEM_KEY], pytrace=False)
            record = history.record(self.nodeid)
            self.stash[REUSED_KEY] = history.settings.name or ""
            if self._prepared is not None and history.scored_otherwise(self.nodeid, self._prepared.scored_by):
                self.stash[SCORED_OTHERWISE_KEY] = True
        else:
            record = _result_unless_stopped(state, self.nodeid, prepared)
        self.stash[RECORD_KEY] = record
        if record.status == rec.ERROR:
            if record.error and record.error.get("expected"):
                # a replayed recorded failure the suite expects: still an infrastructure failure in
                # records and reports, XFAIL for pytest (--runxfail turns it back into an ERROR)
                raise pytest.xfail.Exception(f"expected infrastructure failure: {record.reason}", pytrace=False)
            pytest.fail(infrastructure_message(record, self._model_args()), pytrace=False)

    def runtest(self) -> None:
        """Turn the record's status into pytest's outcome: pass, fail, or skip when unscored."""
        if self.case.problem is not None:
            record = build_record(
                self.case, self.nodeid, rec.INVALID, str(self.case.problem),
                error={"kind": "suite", "type": type(self.case.problem).__name__, "message": str(self.case.problem)},
            )
            history = self.config.stash[STATE_KEY].history
            if history.decide(self.nodeid, self.case) == REJUDGE:  # keep the transcript to re-judge once fixed
                now = datetime.now(timezone.utc).isoformat(timespec="seconds")
                record = judged_again(history.record(self.nodeid), record, at=now, notes=[])
            self.stash[RECORD_KEY] = record
            raise CaseFailed(str(self.case.problem))
        record = self.stash[RECORD_KEY]
        if record.status in (rec.FAILED, rec.INVALID):
            raise CaseFailed(record.reason)
        if record.status in (rec.UNSCORED, rec.SKIPPED):
            pytest.skip(shown(f"{record.status}: {record.reason}"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        """Our own errors as their message alone: suite authors never see our internals' traceback."""
        if isinstance(excinfo.value, (CaseFailed, SuiteError)):
            return shown(excinfo.value)  # a reply or a name quoted in it: its escape sequences shown, not obeyed
        return super().repr_failure(excinfo, style=style)

    def annotate_report(self, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
        """Put the record on the report that decides the outcome, as plain data (it crosses xdist).

        Also adds junitxml properties, and keeps our internals out of what the user reads.
        """
        self._share_keywords(report, call.when)
        record = self.stash.get(RECORD_KEY, None)
        if record is None and call.when == "setup" and report.failed and SETUP_PROBLEM_KEY in self.stash:
            self._report_setup_problem(report)
            return
        if record is None or not _decides_outcome(record, call.when):
            return
        report.bench_record = record.to_dict()  # type: ignore[attr-defined]
        # the report carries the record from here; pytest keeps every item to the end of the session, and
        # its copy of the record would be the largest thing kept per case (about 6 KB)
        del self.stash[RECORD_KEY]
        self._mark_reused(report)
        self._add_properties(report, record)
        if call.when == "setup" and report.failed:
            report.longrepr = infrastructure_message(record, self._model_args())  # setup errors skip repr_failure
        if report.skipped and isinstance(report.longrepr, tuple):
            self._point_skip_at_task(report, report.longrepr[2])

    def _point_skip_at_task(self, report: pytest.TestReport, message: str) -> None:
        """-rs names the suite's task (1-based, as pytest prints it), not our pytest.skip call."""
        line = self.case.line + 1 if self.case.line is not None else 0
        report.longrepr = (str(self.path), line, message)

    def _report_setup_problem(self, report: pytest.TestReport) -> None:
        report.longrepr = self.stash[SETUP_PROBLEM_KEY]  # setup errors skip repr_failure
        if KEPT_KEY in self.stash:  # selected, and its stored record stays as it was: the controller counts it
            report.bench_kept = True  # type: ignore[attr-defined]

    def _mark_reused(self, report: pytest.TestReport) -> None:
        """A record reused from a named run: the controller counts it and does not write it again."""
        if REUSED_KEY not in self.stash:
            return
        report.bench_reused = self.stash[REUSED_KEY]  # type: ignore[attr-defined]
        if SCORED_OTHERWISE_KEY in self.stash:  # its scores are the earlier scorers': the summary says so
            report.bench_scored_otherwise = True  # type: ignore[attr-defined]

    def _add_properties(self, report: pytest.TestReport, record: CaseRecord) -> None:
        """The case's model, task, status and score as junitxml properties."""
        properties = [
            junit_property("bench_model", record.model),
            junit_property("bench_task", record.task),
            junit_property("bench_status", record.status),
            junit_property("bench_score", "" if record.composite is None else f"{record.composite:.4f}"),
        ]
        self.user_properties.extend(properties)  # junitxml reads them from the teardown report
        report.user_properties = [*report.user_properties, *properties]

    _setup_keywords: tuple[str, Mapping[str, Any]] = ("", {})  # the running case's, see _share_keywords

    def _share_keywords(self, report: pytest.TestReport, when: str) -> None:
        """Give the case's three reports one ``keywords`` dict: pytest makes an equal one for each, and keeps them all.

        A process runs one item's setup, call and teardown at a time, so the setup report's dict is kept in one
        place for the class (an attribute per item would grow every item's ``__dict__``). A report whose keywords
        differ (a plugin changed them) keeps its own.
        """
        if when == "setup":
            CaseItem._setup_keywords = (self.nodeid, report.keywords)
            return
        nodeid, shared = CaseItem._setup_keywords
        if nodeid == self.nodeid and report.keywords == shared:
            report.keywords = shared
        if when == "teardown":
            CaseItem._setup_keywords = ("", {})

    def _model_args(self) -> tuple[str, ...]:
        """The parameters ``--bench-model-arg`` set: a refused request names where its parameter came from."""
        return tuple(key for key, _ in self.config.stash[STATE_KEY].expand_options.model_args)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the case is written: the suite file and the task's line."""
        return self.path, self.case.line, f"{self.case.suite}::{self.name}"


@lru_cache(maxsize=256)  # equal values come close together: a task's models and runs
def junit_property(name: str, value: str) -> tuple[str, str]:
    """One junitxml property, one tuple for equal ones: pytest keeps each case's item and reports to the end."""
    return name, value


_REFUSED = re.compile(r"http_4(?!08|09|25|29)\d\d")
"""Kinds of an endpoint refusing the request as sent (a prompt too long, a bad parameter): no re-run fixes them."""


def infrastructure_message(record: CaseRecord, model_args: Collection[str] = ()) -> str:
    """What pytest shows for an ERROR case: whether running it again can help, and what to fix when not.

    ``model_args``: the parameters ``--bench-model-arg`` set, to say where a refused one came from.
    """
    kind = str((record.error or {}).get("kind") or "")
    reason = shown(record.reason)  # an endpoint's error text
    if kind == "auth" or _REFUSED.fullmatch(kind):
        return (f"{reason}\n(infrastructure failure, not a model failure: the request was refused as sent; "
                f"{_what_to_fix(record, kind, model_args)})")
    return f"{reason}\n(infrastructure failure, not a model failure: re-run this case)"


def _what_to_fix(record: CaseRecord, kind: str, model_args: Collection[str]) -> str:
    """The likely cause the server's answer shows; else the usual suspects."""
    message = str((record.error or {}).get("message") or record.reason)
    cause = likely_cause(message, record.model_params, model_args) if kind != "auth" else None
    return f"likely cause: {cause}" if cause else "fix the key, the model id or the suite before running it again"


def _decides_outcome(record: CaseRecord, when: str) -> bool:
    """The phase whose report carries the record: the call, or setup for an infrastructure failure (ERROR or XFAIL)."""
    return when == "call" or (when == "setup" and record.status == rec.ERROR)
