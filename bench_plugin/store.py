"""results.jsonl: every finished case, one JSON line each, written the moment it finishes.

The file is appended to and flushed per case, so a Ctrl-C or a crash later in the session loses
nothing that already finished. At the end of the session ``finalize`` rewrites it atomically in
collection order, so ``-n 2`` and ``-n 0`` give files with the same lines in the same order.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from bench_plugin.record import CaseRecord


def encode_record(record: Mapping[str, Any]) -> str:
    """One record as one JSON line (without the newline), stable across runs.

    ``default=str`` because a result must never be lost to one odd value: records should hold only
    JSON builtins, and anything else is written as its ``str``.
    """
    return json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)


class ResultsStore:
    """Writer of one session's ``results.jsonl``; lives on the controller only.

    Args:
        path: the file to write; its directory is created by ``open``.

    Example:
        store = ResultsStore(Path("bench-results/results.jsonl"))
        store.open()
        store.append(report.bench_record)  # once per finished case
        store.finalize([item.nodeid for item in session.items])
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None
        self._records: list[CaseRecord] = []
        self._lines: list[tuple[str, str]] = []  # (nodeid, line) exactly as appended

    @property
    def records(self) -> list[CaseRecord]:
        """The records received, in arrival order until ``finalize`` puts them in collection order."""
        return list(self._records)

    @property
    def is_open(self) -> bool:
        """Whether results.jsonl has been opened for this run."""
        return self._file is not None

    def open(self) -> None:
        """Create the directory and start an empty file: one file per session, never a mix of two."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8", newline="\n")
        self._records.clear()
        self._lines.clear()

    def append(self, record: Mapping[str, Any] | CaseRecord) -> CaseRecord:
        """Write one finished case and flush it to the OS at once.

        Flushing (not fsync) keeps results across a crash of this process at no real cost; fsync
        per line would survive a power cut too but costs milliseconds per case.

        Raises:
            RuntimeError: when the store was not opened (or is already finalized).
        """
        if self._file is None:
            raise RuntimeError(f"ResultsStore({str(self.path)!r}) is not open; call open() first")
        data = record.to_dict() if isinstance(record, CaseRecord) else dict(record)
        line = encode_record(data)
        self._file.write(line + "\n")
        self._file.flush()
        case = record if isinstance(record, CaseRecord) else CaseRecord.from_dict(data)
        self._records.append(case)
        self._lines.append((case.nodeid, line))
        return case

    def finalize(self, order: Sequence[str] | None = None) -> None:
        """Close the file and rewrite it atomically, sorted into ``order``.

        Args:
            order: node ids in collection order. Records whose id is not in it go last, in arrival
                order; None keeps the arrival order. A crash while rewriting leaves the appended
                file untouched (temp file + ``os.replace``).
        """
        self.close()
        if order is not None:
            position = {nodeid: index for index, nodeid in reversed(list(enumerate(order)))}
            last = len(position)
            ranked = sorted(range(len(self._lines)), key=lambda i: position.get(self._lines[i][0], last))
            self._lines = [self._lines[i] for i in ranked]
            self._records = [self._records[i] for i in ranked]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, "".join(line + "\n" for _, line in self._lines))

    def close(self) -> None:
        """Close the file without reordering (safe to call twice)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as temp:
            temp.write(text)
            temp.flush()
            os.fsync(temp.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def read_results(path: Path | str) -> list[CaseRecord]:
    """Read ``results.jsonl`` back, e.g. to re-score or re-report a finished run.

    A torn last line (the process died while writing it) is ignored; a bad line anywhere else
    is an error, because silently dropping results would skew every average.

    Raises:
        ValueError: ``path:line: ...`` for a line that is not a JSON object with a ``nodeid``.
    """
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    records: list[CaseRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                break  # torn by a crash mid-write: everything before it is intact
            raise ValueError(f"{path}:{number}: not valid JSON: {exc.msg}") from exc
        if not isinstance(data, dict) or "nodeid" not in data:
            raise ValueError(f"{path}:{number}: expected a case record (a JSON object with 'nodeid')")
        try:
            records.append(CaseRecord.from_dict(data))
        except TypeError as exc:
            raise ValueError(f"{path}:{number}: incomplete case record: {exc}") from exc
    return records
