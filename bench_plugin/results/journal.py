"""A named run's journals: each finished case written by the process that ran it, the moment it finishes.

pytest reports cases in collection order, and only then does the controller append them to results.jsonl
(``store.py``). Up to ``--bench-concurrency`` cases run ahead of the one pytest waits for: one held by a
slow answer or a long ``Retry-After`` kept every case that finished after it out of results.jsonl, and a
killed run lost them all (paid for, and paid for again by the resume). So in a named run (``--bench-run``)
every process that runs cases (one, or each xdist worker) appends each finished record to a journal of its
own, ``results.jsonl.<pid>.journal`` beside results.jsonl, flushed at once as results.jsonl is.

The controller folds what journals hold into results.jsonl: those a killed session left, before anything
reads the run's results (``absorb_left_journals``); and at the end of its own session, the records pytest
did not report (an interrupted or ``-x`` session: ``journal_records``), after which the journals go.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.core.private_files import open_private, private_folder
from bench_plugin.core.text_safety import log_line
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import encode_record, write_all

SUFFIX = ".journal"

log = logging.getLogger("bench_plugin.journal")  # the name users filter on, kept when the module moved


def journal_path(results: Path) -> Path:
    """This process's journal for the run whose results file is ``results``."""
    return results.with_name(f"{results.name}.{os.getpid()}{SUFFIX}")


def journals(results: Path) -> list[Path]:
    """Every journal beside ``results``, of any process."""
    return sorted(results.parent.glob(f"{glob.escape(results.name)}.*{SUFFIX}"))


class CaseJournal:
    """This process's journal: append-only, one JSON line per finished case, made at the first one.

    Written from the runner's loop thread. A journal that cannot be written is logged once and left alone: the
    case's record still reaches results.jsonl through its report, as it always did.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._broken = False
        self._lock = threading.Lock()

    def write(self, record: CaseRecord) -> None:
        """Append ``record`` and flush it to the OS (not fsync: as results.jsonl, it survives a killed process)."""
        if self._broken:
            return
        line = (encode_record(record.to_dict()) + "\n").encode("utf-8", "backslashreplace")
        with self._lock:
            try:
                if self._file is None:
                    private_folder(self.path.parent)
                    self._file = open_private(self.path, "ab")
                write_all(self._file, line)
            except OSError as exc:
                self._broken = True
                log.warning("bench: cannot write %s (%s): a killed run may run its finished cases again",
                            log_line(self.path), log_line(exc.strerror or exc))

    def close(self) -> None:
        """Close the file; the journal stays on disk until the controller has its records in results.jsonl."""
        with self._lock, contextlib.suppress(OSError):
            if self._file is not None:
                self._file.close()
            self._file = None


def _complete_lines(path: Path) -> bytes:
    """The file's whole lines: a killed process may have left its last one torn."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b""
    return data[: data.rfind(b"\n") + 1]


def absorb_left_journals(results: Path) -> int:
    """Append the records journals of a killed session hold to ``results``, then delete the journals.

    Run by the controller before the run's results are read. A case's newest line is its record, so a case
    both files hold is the journal's, as finished; ``ResultsStore.finalize`` leaves one line per case. A line
    results.jsonl holds already is not appended again (``_new_lines``).
    Returns how many lines were added.

    Raises:
        OSError: results.jsonl cannot be written (the journals are then kept).
    """
    found = journals(results)
    if not found:
        return 0
    kept = _complete_lines(results)  # a torn last line of results.jsonl is cut off first
    added = _new_lines(kept, b"".join(_complete_lines(path) for path in found))
    if added:
        with open_private(results, "r+b" if results.exists() else "wb") as file:
            file.truncate(len(kept))
            file.seek(len(kept))
            write_all(file, added)
            file.flush()
            os.fsync(file.fileno())
    for path in found:
        path.unlink(missing_ok=True)
    return added.count(b"\n")


def _new_lines(kept: bytes, journaled: bytes) -> bytes:
    """The journal's lines results.jsonl does not hold already, each once, in order.

    A journal repeats the cases pytest had reported into results.jsonl too: appended again they were copies
    that only a rewrite of the whole file took out, and on a full disk (where a resumed run is likely: the run
    stopped for it) that rewrite fails, so they stayed (436 lines for 400 cases).
    """
    seen = set(kept.splitlines(keepends=True))
    new = []
    for line in journaled.splitlines(keepends=True):
        if line not in seen:
            seen.add(line)
            new.append(line)
    return b"".join(new)


def journal_records(results: Path) -> Iterator[dict[str, Any]]:
    """The records in the session's journals, oldest first (whole lines only)."""
    for path in journals(results):
        for line in _complete_lines(path).splitlines():
            with contextlib.suppress(ValueError):  # BoundsError too: a line not as we write it
                record = loads_bounded(line)
                if isinstance(record, dict) and "nodeid" in record:
                    yield record


def delete_journals(results: Path) -> None:
    """Remove the journals beside ``results`` (their records are in it, or the run starts over)."""
    for path in journals(results):
        with contextlib.suppress(OSError):
            path.unlink()
