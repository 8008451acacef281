"""report.html written whole or not at all: pytest-html's page goes to a temporary file, renamed into place.

pytest-html 4.x writes its page with ``open(path, "w")``: a full disk left a cut-off report.html (and a planted
link was written through). Its writer still renders and writes the page; only the file it writes is a temporary
one beside the page, renamed over it once written (the old page, or a link, replaced whole) and removed on
failure, so a reader sees the last whole page or none. Named as ``write_atomically`` names its temporary files,
one a killed run leaves is removed as the next session starts.
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


def write_pages_whole(config: pytest.Config) -> int:
    """Make each pytest-html report of ``config`` write its page through a temporary file; how many it found."""
    found = 0
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(getattr(plugin, "_report_path", None), Path) and callable(getattr(plugin, "_write_report", None)):
            plugin._write_report = _whole_page_writer(plugin, type(plugin)._write_report)
            found += 1
    return found


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
        finally:
            plugin._report_path = page

    return write_whole
