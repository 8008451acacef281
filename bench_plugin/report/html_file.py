"""report.html written whole or not at all: pytest-html's page goes to a temporary file, renamed into place.

pytest-html 4.x writes its page with ``open(path, "w")``: a full disk left a cut-off report.html (and a planted
link was written through). Its writer still renders and writes the page; only the file it writes is a temporary
one beside the page, renamed over it once written (the old page, or a link, replaced whole) and removed on
failure, so a reader sees the last whole page or none. Named as ``write_atomically`` names its temporary files,
one a killed run leaves is removed as the next session starts.

What pytest-html holds that its page no longer needs is let go (``forget_drawn_reports``, ``_forget_rows``): pytest
keeps every case's reports to the end of the run, and at 10,000 cases these were the margin of the run's peak memory.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.results.store import new_file_mode


def write_pages_whole(config: pytest.Config) -> list[Any]:
    """Make each pytest-html report of ``config`` write its page through a temporary file; the reports it found."""
    found = []
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(getattr(plugin, "_report_path", None), Path) and callable(getattr(plugin, "_write_report", None)):
            plugin._write_report = _whole_page_writer(plugin, type(plugin)._write_report)
            found.append(plugin)
    return found


def forget_drawn_reports(pages: list[Any], report: pytest.TestReport) -> None:
    """Drop a case's reports from each pytest-html report's table of them once its last one drew the case's row.

    pytest-html 4.x keeps every report of every case in a dict by node id (``_reports``) to the end of the run,
    though it reads a case's entry only until its teardown report (not a rerun's) has drawn the row: a dict, a
    list per phase and their keys, about 500 bytes a case kept for nothing. The reports themselves stay where
    pytest's terminal keeps them, without their ``extras``: the row holds those now.
    """
    if report.when != "teardown" or getattr(report, "outcome", "") == "rerun":  # pytest-rerunfailures' outcome
        return
    for page in pages:
        drawn = getattr(page, "_reports", None)
        if isinstance(drawn, dict):
            for phase in drawn.pop(report.nodeid, {}).values():
                for each in phase:
                    each.__dict__.pop("extras", None)


def _whole_page_writer(plugin: Any, write: Callable[[Any, str], None]) -> Callable[[str], None]:
    """pytest-html's own ``write``, pointed at a temporary file that replaces the page once written."""

    def write_whole(rendered: str) -> None:
        page: Path = plugin._report_path
        handle, name = tempfile.mkstemp(dir=page.parent, prefix=f".{page.name}.", suffix=".tmp")
        os.close(handle)
        plugin._report_path = Path(name)
        try:
            write(plugin, rendered)
            with contextlib.suppress(OSError):  # a file system without modes
                os.chmod(name, new_file_mode())
            os.replace(name, page)
        except BaseException as exc:
            Path(name).unlink(missing_ok=True)
            if isinstance(exc, OSError) and (exc.filename is None or exc.filename == name):
                exc.filename = str(page)  # the page, not our temporary file
            raise
        else:
            _forget_rows(plugin)
        finally:
            plugin._report_path = page

    return write_whole


def _forget_rows(plugin: Any) -> None:
    """Drop the rows of a page written for the last time (the session finished): nothing reads them again.

    Our report files are written after report.html, and its rows (every case's cells and view) were the largest
    thing left under them.
    """
    report = getattr(plugin, "_report", None)
    data = getattr(report, "_data", None)
    if getattr(report, "running_state", None) == "finished" and isinstance(data, dict):
        tests = data.get("tests")
        if isinstance(tests, dict):
            tests.clear()
