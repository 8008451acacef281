"""Progress under ``pytest -n N``: each worker sends its counters, and the controller draws their sum.

The controller runs no case, so its own ``RunStatus`` stays empty. Each worker sends a snapshot of
its counters (``run_status.StatusSnapshot``, plain data) two ways: on the teardown report of every
case (``report.bench_progress``, which xdist carries to the controller with the rest of the report), and,
while its main thread waits for a case, every ``SEND_EVERY_S`` into a file of a folder the controller
made for the session. The second is what shows a run whose every case is held by a ``Retry-After``:
no report arrives then. xdist's controller waits for its workers' events on a queue and calls no
hook in between, so a thread of ours puts a wake-up event of our own on that queue every
``WAKE_EVERY_S``; xdist hands it, on its main thread, to the handler we set on its session object,
which reads the files and lets the display draw. Workers on another machine (``--tx ssh``) cannot
reach the folder: their reports still carry their counters.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.calls.run_status import RunStatus, StatusSnapshot, combine

FOLDER_KEY = "bench_status_folder"
"""The key of the status folder in each worker's ``workerinput``."""
WAKE_EVENT = "bench_progress"
"""Our event on xdist's queue; xdist calls the session object's ``worker_<event>`` for it."""
SEND_EVERY_S = 0.5
"""Seconds between two writes of a worker's status file while it waits for a case."""
WAKE_EVERY_S = 1.0
"""Seconds between two wake-ups of the controller, which then reads the files and may draw."""


def distributes(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller that hands the cases to workers."""
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return False
    return config.getoption("dist", "no") != "no" and not config.option.collectonly


def runnable_cases(session: pytest.Session) -> int:
    """The collected bench cases the runner will run.

    A case with a problem fails at once, and a case a named run finished earlier is reported again
    from its record: neither goes through the runner, so neither is counted.
    """
    cases = [item for item in session.items if item.get_closest_marker("bench") is not None]
    return sum(1 for item in cases if _runs(item))


def _runs(item: pytest.Item) -> bool:
    to_run = getattr(item, "to_run", None)
    if to_run is None:
        return getattr(getattr(item, "case", None), "problem", None) is None
    return to_run() is not None


class WorkerStatusSender:
    """On an xdist worker: sends the runner's counters to the controller.

    Args:
        config: the worker's config (its ``workerinput`` names the worker and the status folder).
        status: the worker runner's counters.
    """

    def __init__(self, config: pytest.Config, status: RunStatus) -> None:
        workerinput: Mapping[str, Any] = getattr(config, "workerinput", {})
        self.status = status
        self.worker = str(workerinput.get("workerid", "gw?"))
        folder = workerinput.get(FOLDER_KEY)
        self.path = Path(folder) / f"{self.worker}.json" if folder else None
        self.collected: int | None = None
        self._seq = itertools.count(1)
        self._sent = 0.0

    def message(self) -> dict[str, Any]:
        """The counters now, numbered so that the controller keeps the newest."""
        return {"worker": self.worker, "seq": next(self._seq), "collected": self.collected,
                **self.status.snapshot().to_dict()}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the cases of the whole collection (every worker collects the same, whatever its share)."""
        self.collected = runnable_cases(session)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """A case's last report carries the counters as they are once the case is over."""
        report = yield
        if report.when == "teardown" and item.get_closest_marker("bench") is not None:
            report.bench_progress = self.message()
        return report

    def tick(self, blocked_s: float) -> None:
        """Called while the main thread waits for a case: write the status file every ``SEND_EVERY_S``."""
        now = time.monotonic()
        if self.path is not None and now - self._sent >= SEND_EVERY_S:
            self._sent = now
            self.write()

    def write(self) -> None:
        """Replace the status file at once (the controller never reads half of one)."""
        if self.path is None:
            return
        partial = self.path.with_suffix(".part")
        try:
            partial.write_text(json.dumps(self.message()), encoding="utf-8")
            os.replace(partial, self.path)
        except OSError:  # a worker on another machine, or the folder is gone: the reports still carry it
            self.path = None

    def pytest_sessionfinish(self) -> None:
        """The last counters, for a controller still waiting for other workers."""
        self.write()


class WorkersStatus:
    """On the xdist controller: the sum of the workers' counters, and the wake-ups that let it be drawn.

    Registered on the controller as a plugin; it is the display's ``StatusLine``. ``on_wake`` is called
    on the controller's main thread, between two of xdist's events or at least every ``WAKE_EVERY_S``,
    with the seconds since the last report came in.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.on_wake: Callable[[float], None] | None = None
        self.collected: int | None = None
        self.folder: Path | None = None
        self._newest: dict[str, tuple[int, StatusSnapshot]] = {}
        self._last_report = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Tell each worker where to write its status file (a folder made for this session)."""
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="bench-progress-"))
        node.workerinput[FOLDER_KEY] = str(self.folder)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Have xdist's loop call ``on_wake`` at least every ``WAKE_EVERY_S``, on its main thread."""
        if self.config.pluginmanager.getplugin("terminalreporter") is None or self.config.get_verbosity() < 0:
            return  # nothing is drawn
        dsession = self.config.pluginmanager.getplugin("dsession")
        queue = getattr(dsession, "queue", None)
        if self.on_wake is None or queue is None or not hasattr(queue, "put"):
            return  # an xdist of another shape: no wake-ups, nothing drawn
        setattr(dsession, f"worker_{WAKE_EVENT}", self._woken)
        self._thread = threading.Thread(target=self._wake, args=(queue,), name="bench-progress", daemon=True)
        self._thread.start()

    def _wake(self, queue: Any) -> None:
        while not self._stop.wait(WAKE_EVERY_S):
            queue.put((WAKE_EVENT, {}))

    def _woken(self) -> None:
        with contextlib.suppress(Exception):  # progress on the terminal never fails a run
            self.read_files()
            if self.on_wake is not None and self._newest:  # nothing to draw before a worker has counted
                self.on_wake(time.monotonic() - self._last_report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the counters a case's report carries; a report resets the time the run has been quiet."""
        self._last_report = time.monotonic()
        message = getattr(report, "bench_progress", None)
        if isinstance(message, Mapping):
            self.take(message)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker that is gone has nothing in flight and waits for nothing."""
        worker = str(getattr(getattr(node, "gateway", None), "id", ""))
        if worker in self._newest:
            seq, last = self._newest[worker]
            self._newest[worker] = (seq, StatusSnapshot(last.finished, last.finished, last.errors, last.not_run))

    def take(self, message: Mapping[str, Any]) -> None:
        """Keep a worker's counters unless newer ones came already; anything malformed is ignored."""
        try:
            worker, seq = str(message["worker"]), int(message["seq"])
            snapshot = StatusSnapshot.from_dict(message)
        except (KeyError, TypeError, ValueError):
            return
        if worker not in self._newest or seq > self._newest[worker][0]:
            self._newest[worker] = (seq, snapshot)
        collected = message.get("collected")
        if isinstance(collected, int):
            self.collected = collected

    def read_files(self) -> None:
        """Take the workers' status files (written while they wait for a case)."""
        if self.folder is None:
            return
        for path in self.folder.glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                message = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(message, Mapping):
                    self.take(message)

    def line(self, total: int | None) -> str:
        """The workers' counters added up, drawn as one process's would be."""
        snapshot = combine(snapshot for _, snapshot in self._newest.values())
        return snapshot.line(total if total is not None else self.collected)

    def close(self) -> None:
        """Stop the wake-ups and remove the status folder."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * WAKE_EVERY_S)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def pytest_sessionfinish(self) -> None:
        """The workers are done: no more wake-ups."""
        self.close()

    def pytest_unconfigure(self) -> None:
        """Also when the session ended early."""
        self.close()
