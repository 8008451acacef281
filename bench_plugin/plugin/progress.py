"""Progress on the terminal while cases run: done / total, in flight, errors, and who waits for what.

A case held by a 429 or a rate limit would otherwise sit silent. The runner's loop thread only
counts (``RunStatus``); the main thread draws, through pytest's terminal reporter, while it waits
for a case (pytest's terminal writer is not thread-safe). On a terminal the line is redrawn in
place; elsewhere (CI logs) a line is written every few seconds instead. Under xdist the controller
runs no case: it draws the workers' counters instead (``xdist_progress.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import pytest

from bench_plugin.calls.run_status import RunStatus
from bench_plugin.core.text_safety import log_line
from bench_plugin.plugin.xdist_progress import WorkersStatus, WorkerStatusSender, distributes, runnable_cases

DRAW_AFTER_S = 1.0
"""A wait shorter than this draws nothing: a fast run shows pytest's own output alone."""
LOG_EVERY_S = 5.0
"""Seconds between two progress lines when the output is not a terminal."""


def register_progress(config: pytest.Config, status: RunStatus) -> Callable[[float], None]:
    """Register what shows this process's progress; returns what the runner calls while a case is waited for.

    In one process, the display draws ``status``. An xdist worker sends ``status`` to the controller,
    whose display draws the workers' sum (``xdist_progress.py``).
    """
    if hasattr(config, "workerinput"):
        sender = WorkerStatusSender(config, status)
        config.pluginmanager.register(sender, "bench_worker_status")
        return sender.tick
    if not distributes(config):
        display = ProgressDisplay(config, status)
        config.pluginmanager.register(display, "bench_progress")
        return display.tick
    workers = WorkersStatus(config)
    display = ProgressDisplay(config, workers, resume_line=False)
    workers.on_wake = display.tick
    config.pluginmanager.register(workers, "bench_workers_status")
    config.pluginmanager.register(display, "bench_progress")
    return display.tick


class StatusLine(Protocol):
    """What the display draws: ``RunStatus`` in one process, the workers' sum on an xdist controller."""

    def line(self, total: int | None) -> str:
        """The progress line, given the number of cases when it is known."""
        ...


class ProgressDisplay:
    """Draws a ``StatusLine`` on pytest's terminal while the main thread waits for a case.

    Registered as a plugin by ``register_progress`` in the process that shows results; it learns the
    number of cases at collection (an xdist controller collects nothing: its workers tell it).
    Nothing is drawn under ``-q`` or when the terminal reporter is off. The line goes under pytest's current
    line; on a terminal it is redrawn in place, elsewhere a new line is written every ``LOG_EVERY_S``. Before
    pytest writes its next result, the start of the line pytest was on (the file, or the test under ``-v``) is
    written again, so the result lands after it.

    Args:
        config: the session's config.
        status: what to draw.
        resume_line: write the start of pytest's line again after ours; off on an xdist controller,
            whose results start lines of their own (``[gw0] PASSED ...``) or none (letters).
    """

    def __init__(self, config: pytest.Config, status: StatusLine, *, resume_line: bool = True) -> None:
        self.config = config
        self.status = status
        self.resume_line = resume_line
        self.total: int | None = None
        self._invalid = 0
        self._last_line = 0.0
        self._interrupted: list[object] = []  # what pytest's line started with, while our lines stand below it

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the cases: every bench item; the ones that cannot run are done at once."""
        cases = [item for item in session.items if item.get_closest_marker("bench") is not None]
        self.total = len(cases)
        self._invalid = self.total - runnable_cases(session)  # problems and reused records: done at once

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self) -> None:
        """Before pytest writes a result: end our line and write again the start of pytest's."""
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if not self._interrupted or reporter is None:
            return
        current = self._interrupted.pop()
        if reporter.isatty():
            reporter.write("\n")
        if not self.resume_line:
            current = None
        elif isinstance(current, Path):
            reporter.write(os.path.relpath(current, reporter.startpath) + " ")
        elif isinstance(current, str):
            reporter.write(current)
        reporter.currentfspath = current

    def tick(self, blocked_s: float) -> None:
        """Called on the main thread after ``blocked_s`` without a result; draws when it is time.

        In one process it has waited that long for a case; an xdist controller, for a report.
        """
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None or self.config.get_verbosity() < 0 or blocked_s < DRAW_AFTER_S:
            return
        tty = bool(reporter.isatty())
        now = time.monotonic()
        if not tty and now - self._last_line < LOG_EVERY_S:
            return
        self._last_line = now
        line = log_line(self.status.line(self.total - self._invalid if self.total is not None else None))  # model ids
        capture = self.config.pluginmanager.getplugin("capturemanager")
        suspended = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with suspended:
            if not self._interrupted:
                self._interrupted.append(reporter.currentfspath)
                reporter.ensure_newline()
                if getattr(reporter, "_width_of_current_line", 0):  # xdist writes its letters after no file name
                    reporter.write("\n")
            if tty:  # one line, redrawn in place: cut to the terminal's width so it never wraps
                reporter.rewrite(line[: shutil.get_terminal_size().columns - 1], erase=True)
            else:
                reporter.write_line(line)
            reporter.currentfspath = None
