"""Progress on the terminal while cases run: done / total, in flight, errors, and who waits for what.

A case held by a 429 or a rate limit would otherwise sit silent. The runner's loop thread only
counts (``RunStatus``); the main thread draws, through pytest's terminal reporter, while it waits
for a case (pytest's terminal writer is not thread-safe). On a terminal the line is redrawn in
place; elsewhere (CI logs) a line is written every few seconds instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

import pytest

from bench_plugin.run_status import RunStatus

DRAW_AFTER_S = 1.0
"""A wait shorter than this draws nothing: a fast run shows pytest's own output alone."""
LOG_EVERY_S = 5.0
"""Seconds between two progress lines when the output is not a terminal."""


class ProgressDisplay:
    """Draws ``RunStatus`` on pytest's terminal while the main thread waits for a case.

    Registered as a plugin by ``plugin.py`` (controller or single process only); it learns the number
    of cases at collection. Nothing is drawn under ``-q`` or when the terminal reporter is off. The
    line goes under pytest's current line; on a terminal it is redrawn in place, elsewhere a new line
    is written every ``LOG_EVERY_S``. Before pytest writes its next result, the start of the line
    pytest was on (the file, or the test under ``-v``) is written again, so the result lands after it.
    """

    def __init__(self, config: pytest.Config, status: RunStatus) -> None:
        self.config = config
        self.status = status
        self.total: int | None = None
        self._invalid = 0
        self._last_line = 0.0
        self._interrupted: list[object] = []  # what pytest's line started with, while our lines stand below it

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the cases: every bench item; the ones that cannot run are done at once."""
        cases = [item for item in session.items if item.get_closest_marker("bench") is not None]
        self.total = len(cases)
        self._invalid = sum(1 for item in cases if getattr(getattr(item, "case", None), "problem", None) is not None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self) -> None:
        """Before pytest writes a result: end our line and write again the start of pytest's."""
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if not self._interrupted or reporter is None:
            return
        current = self._interrupted.pop()
        if reporter.isatty():
            reporter.write("\n")
        if isinstance(current, Path):
            reporter.write(os.path.relpath(current, reporter.startpath) + " ")
        elif isinstance(current, str):
            reporter.write(current)
        reporter.currentfspath = current

    def tick(self, blocked_s: float) -> None:
        """Called on the main thread while it has waited ``blocked_s`` for a case; draws when it is time."""
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None or self.config.get_verbosity() < 0 or blocked_s < DRAW_AFTER_S:
            return
        tty = bool(reporter.isatty())
        now = time.monotonic()
        if not tty and now - self._last_line < LOG_EVERY_S:
            return
        self._last_line = now
        line = self.status.line(self.total - self._invalid if self.total is not None else None)
        capture = self.config.pluginmanager.getplugin("capturemanager")
        suspended = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with suspended:
            if not self._interrupted:
                self._interrupted.append(reporter.currentfspath)
                reporter.ensure_newline()
            if tty:  # one line, redrawn in place: cut to the terminal's width so it never wraps
                reporter.rewrite(line[: shutil.get_terminal_size().columns - 1], erase=True)
            else:
                reporter.write_line(line)
            reporter.currentfspath = None
