"""The response cache: answers of HTTP model calls kept in SQLite, so a re-run pays only for what changed.

One file (``<rootdir>/.bench-cache/responses.sqlite3`` by default) in WAL mode is shared by every
process that runs cases at once (xdist workers, parallel runs): readers never wait for writers, and
writes wait for each other through ``busy_timeout``. A key is the SHA-256 of what decides the answer
(``cache_key``), the run index included, so ``--bench-runs 3`` keeps three independent answers and a
second run replays each of them. Only answers are stored: failed calls never, headers and API keys
never (neither in the key's document nor in the value).

Measured by ``benchmarks/cache_speed.py`` (1 KB prompts, this 2-core machine): a miss costs 10-20 us
and a hit 70-150 us (mostly decoding the answer) when read on the runner's loop thread, and a hit 3-7x
that through ``asyncio.to_thread``; so reads run on the loop's thread. Writes are handed over (a deque
append, no wake-up) to one writer thread per process, which every 50 ms commits whatever has come in one
transaction and never holds up the loop; SQLite waits on another process's lock there, not on the loop.
Waking the writer for each answer cost more than the insert itself (a thread switch fighting the loop
for the GIL, twice per case with a judge).

Every SQLite call lets go of the GIL, and the thread that makes it waits for it back: on the loop, behind
pytest's work on the main thread. So a process that made the file knows its keys while no other process
writes to it (a first run): a lookup of any other key is a miss without asking SQLite (1000 cases, 200 ms,
64 in flight: about 50 ms of the run). And the writer stores a batch's answers in one statement, not one each.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from bench_plugin.calls.pricing import Cost
from bench_plugin.core.chat import Completion, CompletionRequest, ToolCall, Usage
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.core.private_files import LINK_REFUSED, open_private, private_folder, refuse_links
from bench_plugin.core.text_safety import log_line
from bench_plugin.providers.interface import merge_params
from bench_plugin.providers.registry import HTTP_TYPES, OFFLINE_TYPES, VARIABLE_TYPES

OFF, READ, WRITE, ON = "off", "read", "write", "on"
MODES = (OFF, READ, WRITE, ON)
DEFAULT_MODE = ON
"""Paid calls are worth keeping: a re-run after a change of suite or rubric pays only for the calls that changed."""
DEFAULT_FOLDER = ".bench-cache"
DB_NAME = "responses.sqlite3"
KEY_VERSION = 1
"""Part of every key's document: raising it retires every stored answer (a change of what a key means)."""

HIT_COST = Cost(0.0, "cache")
"""What an answer from the cache costs this run: nothing (its tokens are still those of the answer)."""

_BUSY_TIMEOUT_S = 30.0  # the writer thread's wait for another process's lock
_READ_TIMEOUT_S = 2.0  # a reader runs on the event loop: it waits briefly (WAL readers rarely wait at all)
_WRITE_EVERY_S = 0.05  # how often the writer commits what came in: one transaction, no wake-up per answer
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    created_at REAL NOT NULL,
    hit_at REAL,
    hits INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID
"""
_STORE = ("INSERT INTO responses (key, value, provider, model, created_at) VALUES (?, ?, ?, ?, ?) "
          "ON CONFLICT(key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at")
_ROWS_PER_STORE = 128  # most answers stored by one statement (a power of two): 5 values each, under SQLite's 999
_TOUCH = "UPDATE responses SET hits = hits + 1, hit_at = ? WHERE key = ?"
_IGNORE_FILE = "# made by bench_plugin: the response cache (--bench-cache); never commit it\n*\n"
_KEPT_OUT = ("attempts", "cached", "ttft_s", "tokens_per_s", "itl_s")  # of the call that made the answer
_ENCODED_FIELDS = tuple(item.name for item in dataclasses.fields(Completion) if item.name not in _KEPT_OUT)
_USAGE_ORDER = tuple(item.name for item in dataclasses.fields(Usage))
_STORED_FIELDS = frozenset(_ENCODED_FIELDS)
_USAGE_FIELDS = frozenset(_USAGE_ORDER)
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "text": str, "usage": (dict, type(None)), "latency_s": (int, float), "finish_reason": (str, type(None)),
    "request_id": (str, type(None)), "tool_calls": (list, type(None)), "refusal": (str, type(None)),
}
"""What each stored field must be, so that a damaged value is a miss and not a failure in every case that hits it."""

log = logging.getLogger("bench_plugin.cache")  # the name users filter on, kept when the module moved


def is_cacheable(provider: ProviderSpec) -> bool:
    """Whether calls to ``provider`` go through the cache: those of HTTP providers.

    Offline providers (echo, scripted, replay) answer for free and always alike, and a provider with
    ``cache: false`` answers from a state of its own (a world interface, a session); a provider type of
    another package is cached when its spec has a ``base_url`` (it calls an endpoint).
    """
    if provider.type in OFFLINE_TYPES or provider.options.get("cache") is False:  # cache: false (a stateful app)
        return False
    return provider.type in HTTP_TYPES or bool(provider.base_url)


def cache_key(request: CompletionRequest, occurrence: int = 0) -> str:
    """The key of a call: SHA-256 of a canonical JSON of what decides its answer.

    That is the provider type, endpoint, model id, every request parameter (the model's ``params`` under
    the call's), the messages as sent (after the model's system-prompt policy), the tools, the answer's
    schema (``output_schema:``), the model's and provider's ``options``, the run index and ``occurrence``
    (how many identical calls the same case made before this one, so that two of them stay two answers).
    Headers are left out, since they may carry keys; the task, turn and variables are left out, since they
    never reach the wire, except for a provider type whose request templates render them
    (``VARIABLE_TYPES``: an application's).
    """
    model = request.model
    document = {
        "version": KEY_VERSION,
        "provider": model.provider.type,
        "endpoint": (model.provider.base_url or "").rstrip("/"),
        "model": model.id,
        "params": merge_params(request),
        "messages": [message.to_dict() for message in request.messages],
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in request.tools],
        "options": [model.provider.options, model.options],
        "run": request.run,
        "occurrence": occurrence,
    }
    if model.provider.type in VARIABLE_TYPES:
        document["where"] = [request.task, request.turn, request.purpose, request.variables]
    if request.response_schema is not None:  # only then: the keys of every other call stay as they were
        schema = request.response_schema
        document["response_schema"] = {"name": schema.name, "schema": schema.schema, "strict": schema.strict}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encode_completion(completion: Completion) -> str:
    """The stored value: the answer's fields as JSON (not ``attempts``, ``cached``, nor a stream's timing).

    Raises:
        TypeError: a field holds a value JSON cannot write (a newer ``Completion`` field): not stored.
    """
    data: dict[str, Any] = {}
    for name in _ENCODED_FIELDS:
        value = getattr(completion, name)
        if isinstance(value, Usage):  # the usual dataclass field: read directly, asdict's deep copy is slow
            value = {field: getattr(value, field) for field in _USAGE_ORDER}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        elif isinstance(value, tuple):
            value = [v.to_dict() if isinstance(v, ToolCall) else v for v in value]
        data[name] = value
    return json.dumps(data, ensure_ascii=False, allow_nan=False)


def decode_completion(text: str) -> Completion:
    """A stored answer, marked ``cached`` with no attempts (none was made this run).

    Raises:
        ValueError, TypeError, KeyError: the value is not one this version wrote (then it is a miss).
    """
    fields = _stored_fields(loads_bounded(text))  # BoundsError: a 400-digit count, a 200,000-deep value
    fields["usage"] = _usage_of(fields.get("usage") or {})
    fields["tool_calls"] = _tool_calls_of(fields.get("tool_calls") or ())
    return Completion(**fields, attempts=0, cached=True)


def _stored_fields(data: Any) -> dict[str, Any]:
    """The fields this version stores, each of its type (a file edited by hand, or damaged, is refused)."""
    if not isinstance(data, dict):
        raise ValueError("a cached value is not an object")
    fields: dict[str, Any] = {key: value for key, value in data.items() if key in _STORED_FIELDS}
    wrong = next((name for name, value in fields.items() if not isinstance(value, _FIELD_TYPES.get(name, object))),
                 None)
    if wrong is not None:
        raise TypeError(f"a cached {wrong} is {type(fields[wrong]).__name__}")
    return fields


def _usage_of(stored: dict[str, Any]) -> Usage:
    usage = {k: v for k, v in stored.items() if k in _USAGE_FIELDS}
    if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in usage.values()):
        raise TypeError("a cached token count is not a whole number")
    return Usage(**usage)


def _tool_calls_of(stored: Any) -> tuple[ToolCall, ...]:
    calls = tuple(ToolCall(**call) for call in stored)
    if not all(isinstance(v, str) for call in calls for v in (call.id, call.name, call.arguments)):
        raise TypeError("a cached tool call is not text")
    return calls


class ResponseCache:
    """Answers by key in one SQLite file, for one process; safe with other processes on the same file.

    Reads run on the caller's thread (each thread gets its own connection); writes are queued to a
    writer thread started on the first one. The file and its folder are made on the first write, so a
    run that never stores anything leaves nothing behind. A cache that cannot be read or written (a
    read-only folder, a corrupt file) is logged once and left alone: it never fails a case.

    Args:
        folder: where ``responses.sqlite3`` lives (made with a ``.gitignore`` of ``*``).
        mode: ``read`` (look up, never store), ``write`` (store, never look up) or ``on`` (both).
    """

    def __init__(self, folder: Path, mode: str = ON) -> None:
        if mode not in (READ, WRITE, ON):
            raise ValueError(f"cache mode {mode!r}: expected one of read, write, on")
        self.path = folder / DB_NAME
        self.mode = mode
        self.reads = mode in (READ, ON)
        self.writes = mode in (WRITE, ON)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._pending: collections.deque[tuple[str, tuple[Any, ...]]] = collections.deque()
        self._writer: threading.Thread | None = None
        self._stop = threading.Event()
        self._broken = False
        # the hash of every key in the file, while this process knows them all: the file did not exist at its
        # first lookup, and no other process has written to it since (the writer thread watches); None: ask
        # SQLite. Hashes: 10,000 keys in under 1 MB, and two keys of one hash only mean one question to SQLite
        self._known: set[int] | None = None
        self._first_lookup = True
        self._immutable = False  # a file in a read-only folder: read as it is, without WAL's shared memory
        # this session's answers: queued for the writer until it commits them, and with ``write`` (no lookups of
        # earlier answers) every key stored (hashes). A later identical call gets the same answer, so that a re-run
        # replays what this one recorded
        self._unsaved: dict[str, str] = {}
        self._stored_now: set[int] = set()

    def get(self, key: str) -> Completion | None:
        """The stored answer for ``key``, or None (also when the cache cannot be read).

        With ``write`` (no lookups), only an answer this session stored: the earlier ones are being replaced.
        """
        if self._broken or not (self.reads or hash(key) in self._stored_now):
            return None
        unsaved = self._unsaved.get(key)
        if unsaved is not None:
            return decode_completion(unsaved)
        known = self._known
        if known is not None and hash(key) not in known:
            return None  # a file only this process has written to: no need to ask SQLite
        connection = self._reader()
        if connection is None:
            return None
        try:
            row = connection.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            # another process made the file and not yet its table, or holds it past the readers' short wait
            if "no such table" in str(exc) or "locked" in str(exc):
                return None
            if self._read_as_immutable(exc, getattr(self._local, "immutable", False)):
                return self.get(key)
            self._give_up("read", exc)
            return None
        except sqlite3.Error as exc:
            self._give_up("read", exc)
            return None
        if row is None:
            return None
        try:
            completion = decode_completion(row[0])
        except (ValueError, TypeError, KeyError):
            return None  # written by another version: called again, and stored over
        if self.writes:
            self._send(_TOUCH, (time.time(), key))
        return completion

    def put(self, key: str, completion: Completion, provider: str, model: str) -> None:
        """Queue ``completion`` to be stored under ``key`` (an answer; failed calls never come here)."""
        if not self.writes or self._broken:
            return
        try:
            value = encode_completion(completion)
        except (TypeError, ValueError) as exc:
            log.warning("bench response cache: an answer of %s was not stored: %s", log_line(model), log_line(exc))
            return
        known = self._known
        if known is not None:
            known.add(hash(key))
        if not self.reads:
            self._stored_now.add(hash(key))
        self._unsaved[key] = value
        self._send(_STORE, (key, value, provider, model, time.time()))

    def close(self) -> None:
        """Store what is queued, stop the writer, close every connection."""
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            self._stop.set()
            writer.join(timeout=_BUSY_TIMEOUT_S + 5)  # a file locked past busy_timeout gives up, then this ends
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            with contextlib.suppress(sqlite3.Error):
                connection.close()

    def _send(self, sql: str, args: tuple[Any, ...]) -> None:
        self._pending.append((sql, args))  # a deque append is atomic: no lock, no wake-up
        if self._writer is None:
            with self._lock:
                if self._writer is None:
                    self._stop = threading.Event()
                    self._writer = threading.Thread(target=self._write_loop, args=(self._stop,),
                                                    name="bench-cache-writer", daemon=True)
                    self._writer.start()

    def _reader(self) -> sqlite3.Connection | None:
        first, self._first_lookup = self._first_lookup, False
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            if not self.path.exists():  # nothing stored yet: do not make the file for a lookup
                if first and self.writes:  # a new file: its keys are this process's until another one writes
                    self._known = set()
                return None
            try:
                refuse_links(self.path.parent, self.path)  # resolve() below would follow them
                query = "?immutable=1" if self._immutable else "?mode=ro"
                connection = self._connect(self.path.resolve().as_uri() + query, reader=True)
            except (sqlite3.Error, OSError) as exc:
                if self._read_as_immutable(exc, self._immutable):
                    return self._reader()
                self._give_up("open", exc)
                return None
            self._local.connection = connection
            self._local.immutable = self._immutable
        return connection

    def _read_as_immutable(self, exc: sqlite3.Error | OSError, already: bool) -> bool:
        """Whether to read again without WAL's shared memory: a cache restored read-only (CI) cannot make its -shm.

        Only for ``read`` (a cache that stores needs the folder anyway), once.
        """
        if already or self.writes or "unable to open" not in str(exc):
            return False
        self._immutable = True
        self._local.connection = None
        return True

    def _write_loop(self, stop: threading.Event) -> None:
        """Each ``_WRITE_EVERY_S``, commit in one transaction what came since the last commit; the rest at ``close``."""
        connection = self._open_for_writing()
        version = self._watch_others(connection)
        stopping = False
        while not stopping:
            stopping = stop.wait(_WRITE_EVERY_S)
            statements = []
            while self._pending:
                statements.append(self._pending.popleft())  # only this thread takes from the deque
            if connection is None:
                continue
            try:
                if statements:
                    with connection:  # one transaction: commits, or rolls back on an error
                        _execute_in_order(connection, statements)
                    self._saved(statements)
                if version is not None and _data_version(connection) != version:
                    self._known, version = None, None  # another process wrote: lookups ask SQLite again
            except sqlite3.Error as exc:
                self._give_up("write", exc)
                connection = None

    def _saved(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Forget the committed answers' values: lookups find them in the file now."""
        unsaved = self._unsaved
        for sql, args in statements:
            if sql == _STORE and unsaved.get(args[0]) is args[1]:  # not an answer stored again since
                unsaved.pop(args[0], None)

    def _watch_others(self, connection: sqlite3.Connection | None) -> int | None:
        """While lookups trust the keys this process stored: the file's version to watch, else None (and they stop).

        ``PRAGMA data_version`` changes when another connection commits; a row already there is another's too.
        """
        if self._known is None or connection is None:
            return None
        try:
            version = _data_version(connection)  # before the look: a commit in between is found or seen later
            if connection.execute("SELECT EXISTS (SELECT 1 FROM responses)").fetchone()[0] == 0:
                return version
        except sqlite3.Error:
            pass
        self._known = None
        return None

    def _open_for_writing(self) -> sqlite3.Connection | None:
        try:
            private_folder(self.path.parent)
            ignore = self.path.parent / ".gitignore"
            if not ignore.exists():
                with open_private(ignore, "wb") as file:
                    file.write(_IGNORE_FILE.encode("utf-8"))
            open_private(self.path, "ab").close()  # made 0600 here, never through a link; SQLite's -wal, -shm follow
            connection = self._connect(str(self.path))
            _with_retries(lambda: connection.execute("PRAGMA journal_mode=WAL"))
            connection.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash may lose the last commits, never the file
            _with_retries(lambda: connection.execute(_SCHEMA))
        except (OSError, sqlite3.Error) as exc:
            self._give_up("open", exc)
            return None
        return connection

    def _connect(self, database: str, *, reader: bool = False) -> sqlite3.Connection:
        # readers: read-only and autocommit; the writer opens a transaction per batch (``with connection``)
        connection = sqlite3.connect(database, timeout=_READ_TIMEOUT_S if reader else _BUSY_TIMEOUT_S, uri=reader,
                                     check_same_thread=False,
                                     isolation_level=None if reader else "DEFERRED")
        with self._lock:
            self._connections.append(connection)
        return connection

    def _give_up(self, what: str, exc: BaseException) -> None:
        if not self._broken:
            self._broken = True
            self._unsaved.clear()
            log.warning("bench response cache %s: cannot %s it (%s); this run goes on without it", log_line(self.path),
                        what, log_line(exc))


def cache_problem(folder: Path, mode: str) -> str | None:
    """Why the cache in ``folder`` cannot serve ``mode``, found before any call; None when it can.

    A cache that fails is left alone and the run goes on without it, logged once: a corrupt file, a file
    in the folder's place or a folder that cannot be written then went unseen, every run paying for every
    call again under a line saying "0 hits". The session says so at its start and in its cache line.
    """
    if mode == OFF:
        return None
    path = folder / DB_NAME
    link = next((place for place in (folder, path) if place.is_symlink()), None)
    if link is not None:
        return f"{link} {LINK_REFUSED}"
    problem = _unreadable(path) if path.exists() else None
    return problem or (_unwritable(folder) if mode in (WRITE, ON) else None)


def _unreadable(path: Path) -> str | None:
    """Why an existing cache file cannot be read, or None."""
    if not path.is_file():
        return f"{path} is not a file"
    for query in ("?mode=ro", "?immutable=1"):  # immutable: a folder restored read-only (WAL cannot share memory)
        try:
            with contextlib.closing(sqlite3.connect(path.resolve().as_uri() + query, uri=True, timeout=1)) as db:
                db.execute("SELECT 1 FROM responses LIMIT 1").fetchall()
            return None
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "locked" in str(exc):
                return None
            if "unable to open" not in str(exc) or query != "?mode=ro":
                return f"cannot read {path} ({exc})"
        except sqlite3.DatabaseError as exc:
            return f"cannot read {path} ({exc})"
    return None


def _unwritable(folder: Path) -> str | None:
    """Why answers could not be stored in ``folder`` (made on the first write), or None."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"cannot make the folder {folder}: {existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot write in {existing}: answers are not stored"
    return None


def _execute_in_order(connection: sqlite3.Connection, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Run the statements in order, answers stored together: each statement lets go of the GIL and waits for it."""
    rows: list[tuple[Any, ...]] = []
    for sql, args in statements:
        if sql == _STORE:
            rows.append(args)
            if len(rows) < _ROWS_PER_STORE:
                continue
        _store(connection, rows)
        rows = []
        if sql != _STORE:
            connection.execute(sql, args)
    _store(connection, rows)


def _store(connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Store ``rows`` in a statement per power of two in their count (128, 64... 1).

    So there are eight statements to prepare, and sqlite3's cache of prepared statements keeps no more: one
    for every count held 2 MB more at the end of a 10,000-case run.
    """
    done, size = 0, _ROWS_PER_STORE
    while size:
        if (len(rows) - done) & size:
            connection.execute(_store_rows(size), [value for row in rows[done:done + size] for value in row])
            done += size
        size //= 2


@functools.lru_cache(maxsize=8)
def _store_rows(count: int) -> str:
    """``_STORE`` for ``count`` answers in one statement (a key twice: the later row updates the earlier)."""
    head, _, tail = _STORE.partition(" VALUES (?, ?, ?, ?, ?) ")
    return f"{head} VALUES {', '.join(['(?, ?, ?, ?, ?)'] * count)} {tail}"


def _data_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA data_version").fetchone()[0])


def _with_retries(statement: Any, tries: int = 20) -> Any:
    """Run a statement that other processes opening the same file at once may briefly lock, past busy_timeout."""
    for attempt in range(tries):
        try:
            return statement()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    return None

