"""results.jsonl: every finished case, one JSON line each, written the moment it finishes.

The file is appended to and flushed per case, so a Ctrl-C or a crash later in the session loses
nothing that already finished. At the end of the session ``finalize`` puts it in collection order (an
atomic rewrite, unless one process already wrote it so), so ``-n 2`` and ``-n 0`` give files with the same
lines in the same order. A write
that fails (a full disk, a read-only folder) raises an ``OSError`` that names the file, and leaves the
file as it was: complete lines only.

A session that continues earlier results (a named run resumed, ``--lf``, ``--bench-rejudge``) opens the
file with ``keep_earlier``: its complete lines are kept (a line torn by a killed process is cut off) and
new lines are appended after them. A case is its node id: its newest line wins, and ``finalize`` leaves
one line per case.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from bench_plugin.core.json_bounds import BoundsError, loads_bounded
from bench_plugin.core.private_files import open_private, private_folder, refuse_links
from bench_plugin.results.packed_records import PackedRecords, ValuePool, pack_for_reports
from bench_plugin.results.record import CaseRecord, record_problem


def encode_record(record: Mapping[str, Any]) -> str:
    """One record as one JSON line (without the newline), stable across runs.

    ``default=str`` because a result must never be lost to one odd value: records should hold only
    JSON builtins, and anything else is written as its ``str``.
    """
    return json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)


_LARGE_FROM = 2000  # cases from which the kept records are compressed and, unpacked, share their equal values


class ResultsStore:
    """Writer of one session's ``results.jsonl``; lives on the controller only.

    Args:
        path: the file to write; its directory is created by ``open``.

    Example:
        store = ResultsStore(Path("bench-results/results.jsonl"))
        store.open()
        store.append(report.bench_record)  # once per finished case
        records = store.report_records()  # at the end, for the reports
        store.finalize([record.nodeid for record in in_case_order(records)])
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: BinaryIO | None = None
        self._size = 0  # bytes of complete lines in the file
        # nodeid -> where its line is in the file (offset, size): a case's newest line replaces its earlier one.
        # The lines stay on disk until finalize: kept in memory they were 4 KB a case.
        self._spans: dict[str, tuple[int, int]] = {}
        # what the reports read of each case, packed (``packed_records``): about 500 bytes, a hundred in a large
        # run, where the record objects were 2.7 KB, held while pytest-html builds report.html
        self._reported = PackedRecords(squeeze_from=_LARGE_FROM)
        self.earlier = 0  # cases kept from the file when it was opened with keep_earlier
        # their lines as the session found them (kept or re-run since), until finalize: what the run was before
        self._earlier_spans: dict[str, tuple[int, int]] = {}

    @property
    def count(self) -> int:
        """How many cases the store holds."""
        return len(self._spans)

    def report_records(self) -> list[CaseRecord]:
        """One record per case as the reports read it (``CaseRecord.for_reports``), unpacked for the reports.

        In arrival order (kept ones first) until ``finalize`` puts them in collection order; ``read_records``
        reads whole ones. In a large run the records share their equal values (``ValuePool``): unpack them once,
        at the end. Below ``_LARGE_FROM`` cases the copies take a few MB and sharing them would cost more time
        (20 ms at 1000 cases) than the memory is worth.
        """
        pool = ValuePool() if len(self._spans) >= _LARGE_FROM else None
        return self._reported.unpack(self._spans, pool)

    def read_records(self, select: Callable[[CaseRecord], bool] | None = None) -> list[CaseRecord]:
        """The whole records, read back from the file's lines in the store's order (``select``: only those).

        Raises:
            OSError: the file cannot be read (``filename`` names it).
            ValueError: a line is not a case record (``path:line``: the file was changed meanwhile).
        """
        records = (_record(CaseRecord.from_dict, data, self.path, number) for number, data in self._lines())
        return [record for record in records if select is None or select(record)]

    def read_earlier(self, select: Callable[[CaseRecord], bool] | None = None) -> list[CaseRecord]:
        """The whole records the file held when the session opened it, as they were (a case re-run since too).

        Only until ``finalize`` rewrites the file: what an Elo leaderboard was given for the run before, so that
        a session replacing some of its cases replaces their sessions instead of adding them again.
        """
        spans = self._earlier_spans.values()
        records = (_record(CaseRecord.from_dict, data, self.path, number) for number, data in self._lines(spans))
        return [record for record in records if select is None or select(record)]

    def _lines(self, spans: Iterable[tuple[int, int]] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """(place in the store's order, the line's JSON object) of each case, one line at a time.

        Raises:
            OSError: the file cannot be read (``filename`` names it).
            ValueError: a line is not a case record (``path:line``).
        """
        spans = self._spans.values() if spans is None else spans
        if not spans:
            return
        with _naming(self.path), self.path.open("rb") as source:
            for number, (offset, size) in enumerate(spans, start=1):
                source.seek(offset)
                data = parse_record_data(source.read(size).decode("utf-8", "replace"), self.path, number, last=False)
                assert data is not None
                yield number, data

    def has(self, nodeid: str) -> bool:
        """Whether the store holds a record of the case (kept from the file or appended)."""
        return nodeid in self._spans

    @property
    def is_open(self) -> bool:
        """Whether results.jsonl has been opened for this run."""
        return self._file is not None

    def open(self, *, keep_earlier: bool = False) -> None:
        """Create the directory and start an empty file, or continue the file's earlier results.

        Args:
            keep_earlier: keep the records already in the file (a resumed run): a torn last line is
                cut off and new lines are appended. Otherwise the file starts empty: one session's results.

        Raises:
            OSError: the folder or the file cannot be created; ``filename`` names it.
            ValueError: ``keep_earlier`` and a line before the last is not a case record (``path:line``).
        """
        self._spans.clear()
        self._reported.clear()
        self._size = 0
        with _naming(self.path):
            private_folder(self.path.parent)
            refuse_links(self.path)  # before reading it, too
            if keep_earlier and self.path.exists():
                self._size = self._load_earlier()
                self._file = open_private(self.path, "r+b")
                self._file.truncate(self._size)  # the torn line of a killed run, if any
                self._file.seek(self._size)
                return
            # unbuffered: a failed write shows at once, on the line that failed, and can be undone
            self._file = open_private(self.path, "wb")

    def _load_earlier(self) -> int:
        """Read the file's complete lines into the store; returns their size in bytes."""
        data = self.path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        end = 0
        for number, raw in enumerate(complete.splitlines(keepends=True), start=1):
            start, end = end, end + len(raw)
            line = raw.decode("utf-8", "replace")
            if not line.strip():
                continue
            # every line here ends with its newline, so it was written whole: a bad one is an error
            fields = parse_record_data(line, self.path, number, last=False)
            assert fields is not None
            nodeid = str(fields["nodeid"])
            self._reported.add(nodeid, _packed(fields, self.path, number))
            self._spans.pop(nodeid, None)
            self._spans[nodeid] = (start, len(raw))
        self.earlier = len(self._spans)
        self._earlier_spans = dict(self._spans)
        return len(complete)

    @property
    def holds_copies(self) -> bool:
        """Whether the file holds more than the store keeps: a case's older line, a blank line."""
        return not self._file_is_sorted()

    def append(self, record: Mapping[str, Any] | CaseRecord) -> None:
        """Write one finished case and flush it to the OS at once; the store keeps what the reports read of it.

        Flushing (not fsync) keeps results across a crash of this process at no real cost; fsync
        per line would survive a power cut too but costs milliseconds per case.

        Raises:
            RuntimeError: when the store was not opened (or is already finalized).
            OSError: the line could not be written (``filename`` is the file). What part of it reached
                the file is cut off again, the file is closed, and every line before it stays whole.
        """
        if self._file is None:
            raise RuntimeError(f"ResultsStore({str(self.path)!r}) is not open; call open() first")
        data = record.to_dict() if isinstance(record, CaseRecord) else record
        line = encode_record(data)
        # a lone surrogate (odd model output) is written as its JSON escape, which reads back the same
        encoded = (line + "\n").encode("utf-8", "backslashreplace")
        try:
            with _naming(self.path):
                write_all(self._file, encoded)
        except OSError:
            self._drop_torn_line()
            raise
        nodeid = str(data["nodeid"])
        self._reported.add(nodeid, pack_for_reports(data))
        self._spans.pop(nodeid, None)  # a case re-run or re-judged: its newest line is the one kept
        self._spans[nodeid] = (self._size, len(encoded))
        self._size += len(encoded)

    def finalize(self, order: Sequence[str] | None = None) -> None:
        """Close the file and rewrite it atomically, sorted into ``order`` (unless it already is, as it is).

        Args:
            order: node ids in collection order. Records whose id is not in it go last, in arrival
                order; None keeps the arrival order. A crash while rewriting leaves the appended
                file untouched (temp file + ``os.replace``).
        """
        self.close()
        if order is not None:
            position = {nodeid: index for index, nodeid in reversed(list(enumerate(order)))}
            last = len(position)
            ranked = sorted(self._spans, key=lambda nodeid: position.get(nodeid, last))
            self._spans = {nodeid: self._spans[nodeid] for nodeid in ranked}
        if self._file_is_sorted():
            with _naming(self.path), self.path.open("rb") as done:
                os.fsync(done.fileno())  # on disk as a rewritten file would be
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rewritten: dict[str, tuple[int, int]] = {}  # where each line is in the sorted file

        def lines(source: BinaryIO | None) -> Iterator[str]:
            # one at a time from the appended file: one joined copy would be the largest object of a big run
            written = 0
            for nodeid, (offset, size) in self._spans.items():
                assert source is not None
                source.seek(offset)
                rewritten[nodeid] = (written, size)
                written += size
                yield source.read(size).decode("utf-8", "replace")

        with _naming(self.path), (self.path.open("rb") if self._spans else contextlib.nullcontext()) as source:
            write_atomically(self.path, lines(source), private=True)
        self._spans = rewritten
        self._earlier_spans = {}  # their places were in the file as it was
        self._size = sum(size for _, size in rewritten.values())

    def _file_is_sorted(self) -> bool:
        """Whether the file holds exactly the kept lines, in the store's order: what a rewrite would write.

        One process appends its cases in collection order; a case run again (its older line is still in the
        file) or a kept file's blank lines need the rewrite.
        """
        offsets = [offset for offset, _ in self._spans.values()]
        whole = sum(size for _, size in self._spans.values()) == self._size
        return whole and offsets == sorted(offsets) and self.path.exists()

    def close(self) -> None:
        """Close the file without reordering (safe to call twice)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def _drop_torn_line(self) -> None:
        """Cut the file back to its complete lines and close it; the error being raised says why."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):  # truncating frees space, so it works on a full disk too
            os.ftruncate(self._file.fileno(), self._size)
        with contextlib.suppress(OSError):
            self._file.close()
        self._file = None


def write_all(file: BinaryIO, data: bytes) -> None:
    """Write every byte: a raw file may take part of a write and say so, rather than fail."""
    view = memoryview(data)
    while view:
        written = file.write(view)
        if not written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Make an ``OSError`` raised inside name ``path`` (a failed write names no file, a temp file the wrong one)."""
    try:
        yield
    except OSError as exc:
        unnamed = not isinstance(exc.filename, str) or Path(exc.filename).name.startswith(f".{path.name}.")
        if unnamed and exc.errno is not None:  # without an errno, str(exc) would lose the message
            exc.filename = str(path)
        raise


def new_file_mode() -> int:
    """The mode ``open()`` gives a new file here (for a file made another way, then given it)."""
    return _file_mode()


def _file_mode() -> int:
    """The mode ``open()`` gives a new file here: 0666 less the process's umask (read without changing it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:  # Linux 4.7+: no window with another umask
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and put back at once
    os.umask(mask)
    return 0o666 & ~mask


def keep_each_case_once(path: Path) -> None:
    """Rewrite a results file that holds a case more than once (sessions killed in a row) with its newest line only.

    The end of a session does the same; done as a session that continues the file starts (before anything
    notes where its lines are), whatever reads the file meanwhile (``bench report``, another tool) sees each case
    once, and another kill adds no more copies.

    Raises:
        OSError: the file cannot be read or written (``filename`` names it).
        ValueError: a line before the last is not a case record (``path:line``).
    """
    if not path.is_file():
        return
    store = ResultsStore(path)
    store.open(keep_earlier=True)
    if store.holds_copies:
        store.finalize()  # in the store's order: each case where its newest line was
    store.close()


def write_atomically(path: Path, text: str | Iterable[str], *, private: bool = False) -> None:
    """Replace ``path`` with ``text`` so that readers see the old file or the new one, never half.

    ``text`` is the whole text, or its pieces in order (written one by one, never joined in memory). The file
    gets the mode a file written with ``open()`` gets (``mkstemp`` makes its temporary file 0600: reports
    written through it were readable by their owner only), or with ``private`` 0600 (results: prompts and
    answers). The rename replaces a symbolic link in ``path``'s place; it never writes through it.

    Raises:
        OSError: the folder or the file cannot be written; ``filename`` names ``path`` (or the folder that
            could not be made), and ``path`` is left as it was.
    """
    with _naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            if hasattr(os, "fchmod"):  # not on Windows, whose files have no such bits
                with contextlib.suppress(OSError):  # a file system without modes (some network mounts) refuses it
                    os.fchmod(handle, 0o600 if private else _file_mode())
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as temp:
                if isinstance(text, str):
                    temp.write(text)
                else:
                    temp.writelines(text)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, path)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise


_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
"""What ``write_atomically`` names its temporary file: ``.summary.json.k3j9_x2a.tmp`` (``mkstemp``'s 8 characters)."""


def remove_stale_temp_files(folder: Path, *below: Path) -> int:
    """Delete the temporary files ``write_atomically`` left in ``folder`` (and anywhere under ``below``).

    A process killed while replacing a file (SIGKILL, a power cut) leaves its temporary file behind; the next
    session of the same output folder removes it as it starts. Returns how many it removed.
    """
    found = [*folder.glob(".*.tmp"), *(path for deeper in below for path in deeper.rglob(".*.tmp"))]
    removed = 0
    for path in found:
        if _TEMP_NAME.match(path.name) and path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def read_results(path: Path | str) -> list[CaseRecord]:
    """Read ``results.jsonl`` back, e.g. to re-score or re-report a finished run.

    A torn last line (the process died while writing it) is ignored; a bad line anywhere else
    is an error, because silently dropping results would skew every average.

    Raises:
        ValueError: ``path:line: ...`` for a line that is not a JSON object with a ``nodeid``.
    """
    return _read_results(Path(path))[0]


def _read_results(path: Path, skipped: list[str] | None = None) -> tuple[list[CaseRecord], bool]:
    """``read_results``, and whether a torn last line was left out.

    With ``skipped``, a line that is not a case record is left out and its ``path:line: why`` added there.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    records: list[CaseRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = parse_record_line(line, path, number, last=number == len(lines))
        except ValueError as exc:
            if skipped is None:
                raise
            skipped.append(str(exc))
            continue
        if record is None:
            return records, True  # torn by a crash mid-write: everything before it is intact
        records.append(record)
    return records, False


def parse_record_line(line: str, path: Path, number: int, *, last: bool = True) -> CaseRecord | None:
    """One line of a results file as a record; None for a ``last`` line that is not JSON (torn by a crash).

    Raises:
        ValueError: ``path:line: ...`` for a line that is not a JSON object with a ``nodeid``.
    """
    data = parse_record_data(line, path, number, last=last)
    return None if data is None else _record(CaseRecord.from_dict, data, path, number)


def parse_record_data(line: str, path: Path, number: int, *, last: bool = True) -> dict[str, Any] | None:
    """One line of a results file as a JSON object with a ``nodeid``; None for a torn ``last`` line.

    Raises:
        ValueError: ``path:line: ...`` for a line that is not a JSON object with a ``nodeid``.
    """
    try:
        data = loads_bounded(line)
    except json.JSONDecodeError as exc:
        if last:
            return None
        raise ValueError(f"{path}:{number}: not valid JSON: {exc.msg}") from exc
    except BoundsError as exc:
        raise ValueError(f"{path}:{number}: not a case record this version can read: {exc}") from exc
    if not isinstance(data, dict) or "nodeid" not in data:
        raise ValueError(f"{path}:{number}: expected a case record (a JSON object with 'nodeid')")
    problem = record_problem(data)
    if problem is not None:
        raise ValueError(f"{path}:{number}: not a case record this version can read: {problem}")
    return data


def check_record_line(line: str, path: Path, number: int) -> None:
    """Raise unless a whole line is a case record that resuming, re-judging and the reports can all read.

    Raises:
        ValueError: ``path:line: why``, naming the field that is wrong.
    """
    data = parse_record_data(line, path, number, last=False)
    assert data is not None
    _record(CaseRecord.from_dict, data, path, number)
    _packed(data, path, number)


def _packed(data: Mapping[str, Any], path: Path, number: int) -> bytes:
    """``pack_for_reports(data)``, a missing field named as the file's line."""
    try:
        return pack_for_reports(data)
    except TypeError as exc:
        raise ValueError(f"{path}:{number}: incomplete case record: {exc}") from exc


def _record(build: Callable[[Mapping[str, Any]], CaseRecord], data: Mapping[str, Any], path: Path,
            number: int) -> CaseRecord:
    """``build(data)``, a missing field named as the file's line."""
    try:
        return build(data)
    except TypeError as exc:
        raise ValueError(f"{path}:{number}: incomplete case record: {exc}") from exc


def read_result_sets(paths: Iterable[Path | str]) -> tuple[list[CaseRecord], int, list[tuple[Path, str]]]:
    """Read several results files (shards, a re-run, a merged file) as one set of cases.

    A case is its node id: when it appears more than once (the same file given twice, a shard
    merged and given again, a case re-run), its last reading is kept, in the order the files are
    given, so a re-run named after the first run replaces it.

    Args:
        paths: ``results.jsonl`` files, read with :func:`read_results`.

    Returns:
        The records, each case once, in the order each case was first seen; how many duplicate readings
        were left out; and the files that left something out, each with ``empty`` (no case), ``torn`` (a
        last line cut off by a killed run) or, for a line that is not a case record this version can read
        (a hostile or damaged file: ``record_problem``, ``json_bounds``), ``path:line: why``: that line is
        left out, the others read.

    Raises:
        OSError: a file cannot be read.
    """
    cases: dict[str, CaseRecord] = {}
    readings = 0
    left_out: list[tuple[Path, str]] = []
    for path in map(Path, paths):
        skipped: list[str] = []
        records, torn = _read_results(path, skipped)
        left_out += [(path, problem) for problem in skipped]
        if torn or not records:
            left_out.append((path, "torn" if torn else "empty"))
        for record in records:
            cases[record.nodeid] = record  # a dict keeps the first position and takes the last value
            readings += 1
    return list(cases.values()), readings - len(cases), left_out
