"""The response cache: what a key is made of, what is stored, and one file shared by several processes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from bench_plugin.calls.cache import (
    _SCHEMA,
    _STORE,
    _TOUCH,
    DB_NAME,
    ResponseCache,
    _execute_in_order,
    cache_key,
    cache_problem,
    decode_completion,
    encode_completion,
    is_cacheable,
)
from bench_plugin.calls.call_log import CallEntry
from bench_plugin.core.chat import Completion, CompletionRequest, Message, ToolCall, ToolDefinition, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import ProviderError
from bench_plugin.mock.server import MockServer
from bench_plugin.run.runner import Runner, RunnerSettings

PROVIDER = ProviderSpec("mock", "openai_compatible", "http://127.0.0.1:9/v1", "BENCH_TEST_KEY",
                        headers={"X-Title": "bench"})
MODEL = ModelSpec("m", PROVIDER, "model-1", "M", params={"temperature": 0.2})
ANSWER = Completion("Paris.", Usage(12, 3), latency_s=0.25, finish_reason="stop", request_id="chatcmpl-1",
                    attempts=2, tool_calls=(ToolCall("call-1", "search", '{"q": "x"}'),))


def request(**changes: object) -> CompletionRequest:
    base = CompletionRequest(MODEL, (Message("system", "Be brief."), Message("user", "Capital of France?")))
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_the_same_call_has_the_same_key() -> None:
    assert cache_key(request()) == cache_key(request())
    assert len(cache_key(request())) == 64


@pytest.mark.parametrize("changed", [
    pytest.param(request(run=2), id="run index"),
    pytest.param(request(params={"temperature": 0.9}), id="call param"),
    pytest.param(request(params={"max_tokens": 64}), id="max_tokens"),
    pytest.param(request(params={"response_format": {"type": "json_object"}}), id="response format"),
    pytest.param(request(model=dataclasses.replace(MODEL, params={"temperature": 0.3})), id="model param"),
    pytest.param(request(model=dataclasses.replace(MODEL, id="model-2")), id="model id"),
    pytest.param(request(model=dataclasses.replace(MODEL, provider=dataclasses.replace(
        PROVIDER, base_url="http://127.0.0.1:10/v1"))), id="endpoint"),
    pytest.param(request(model=dataclasses.replace(MODEL, provider=dataclasses.replace(PROVIDER, type="anthropic"))),
                 id="provider type"),
    pytest.param(request(messages=(Message("user", "Capital of France?"),)), id="messages"),
    pytest.param(request(tools=(ToolDefinition("search", "look it up"),)), id="tools"),
])
def test_what_decides_the_answer_changes_the_key(changed: CompletionRequest) -> None:
    assert cache_key(changed) != cache_key(request())


def test_identical_calls_of_one_case_are_told_apart_by_occurrence() -> None:
    assert cache_key(request(), occurrence=1) != cache_key(request())


@pytest.mark.parametrize("changed", [
    pytest.param(request(task="other", turn=3, variables={"x": 1}, purpose="judge"), id="what never reaches the wire"),
    pytest.param(request(model=dataclasses.replace(MODEL, name="alias", label="Alias")), id="the suite's name"),
    pytest.param(request(model=dataclasses.replace(MODEL, headers={"Authorization": "Bearer x"})), id="headers"),
    pytest.param(request(model=dataclasses.replace(MODEL, provider=dataclasses.replace(
        PROVIDER, api_key_env="OTHER_KEY", timeout_s=5.0, max_retries=9))), id="key variable and limits"),
    pytest.param(request(params={"temperature": 0.2}), id="a call param equal to the model's"),
    pytest.param(request(params={"top_p": None}), id="a param dropped with None"),
])
def test_what_does_not_decide_the_answer_keeps_the_key(changed: CompletionRequest) -> None:
    assert cache_key(changed) == cache_key(request())


def test_only_http_providers_are_cached() -> None:
    assert is_cacheable(PROVIDER)
    assert is_cacheable(ProviderSpec("openai", "openai_compatible"))  # no base_url: api.openai.com
    assert is_cacheable(ProviderSpec("mine", "my_http_type", "https://llm.example/v1"))
    assert not is_cacheable(ProviderSpec("mine", "in_process_type"))
    assert not any(is_cacheable(ProviderSpec(t, t)) for t in ("echo", "scripted", "replay"))


def test_an_answer_round_trips_marked_cached_without_attempts() -> None:
    back = decode_completion(encode_completion(ANSWER))
    assert back == dataclasses.replace(ANSWER, attempts=0, cached=True)


def test_get_returns_what_put_stored_once_closed(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    key = cache_key(request())
    assert cache.get(key) is None
    assert not (tmp_path / "cache").exists()  # a lookup makes no file
    cache.put(key, ANSWER, "mock", "model-1")
    cache.close()
    again = ResponseCache(tmp_path / "cache")
    assert again.get(key) == dataclasses.replace(ANSWER, attempts=0, cached=True)
    assert again.get(cache_key(request(run=2))) is None
    again.close()
    assert (tmp_path / "cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll ``condition`` (the writer thread commits every 50 ms) until it holds or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_file_only_this_process_wrote_answers_misses_without_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ResponseCache(tmp_path)
    key, other = cache_key(request()), cache_key(request(run=2))
    assert cache.get(key) is None  # no file yet: a first run
    cache.put(key, ANSWER, "mock", "model-1")
    assert cache.get(key) is not None  # this session's answer, before the writer stored it
    assert wait_for(lambda: stored_keys(tmp_path) == {key})
    asked: list[str] = []
    real = cache._reader
    monkeypatch.setattr(cache, "_reader", lambda: asked.append("sqlite") or real())
    assert cache.get(other) is None and asked == []  # any other key: a miss, SQLite not asked
    assert cache.get(key) is not None and asked == ["sqlite"]
    cache.close()


def stored_keys(folder: Path) -> set[str]:
    """The keys committed to the file (none while it does not exist)."""
    if not (folder / DB_NAME).exists():
        return set()
    with contextlib.closing(sqlite3.connect(folder / DB_NAME)) as db:
        try:
            return {key for (key,) in db.execute("SELECT key FROM responses")}
        except sqlite3.OperationalError:  # the writer has not made its table yet
            return set()


def test_this_sessions_answers_are_found_before_they_are_committed_and_in_write_mode(tmp_path: Path) -> None:
    """A second identical call gets the first's answer: so the file replays what this session recorded."""
    key = cache_key(request())
    store_one(tmp_path, key)  # an earlier run's answer
    writer = ResponseCache(tmp_path, "write")
    assert writer.get(key) is None  # write mode: the earlier answer is being replaced
    fresh = dataclasses.replace(ANSWER, text="fresh")
    writer.put(key, fresh, "mock", "model-1")
    assert writer.get(key) == dataclasses.replace(fresh, attempts=0, cached=True)  # queued, not yet stored
    assert wait_for(lambda: not writer._unsaved)  # committed: its value is read from the file now
    assert writer.get(key) == dataclasses.replace(fresh, attempts=0, cached=True)
    writer.close()


@pytest.mark.parametrize("value", [
    '{"text": 5}', '{"text": "x", "latency_s": "fast"}', '{"text": "x", "usage": {"input_tokens": "many"}}',
    '{"text": "x", "tool_calls": [{"id": 1, "name": "t", "arguments": "{}"}]}', '{"text": "x", "usage": []}',
])
def test_a_damaged_value_is_a_miss(tmp_path: Path, value: str) -> None:
    """A value edited by hand (the guide shows pruning with sqlite3) must not fail every case that hits it."""
    key = cache_key(request())
    store_one(tmp_path, key)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE responses SET value = ?", (value,))
    cache = ResponseCache(tmp_path, "read")
    assert cache.get(key) is None
    cache.close()


def test_a_cache_that_cannot_serve_the_run_is_found_before_any_call(tmp_path: Path) -> None:
    assert cache_problem(tmp_path / "new" / "cache", "on") is None  # made at the first answer
    key = cache_key(request())
    store_one(tmp_path / "good", key)
    assert cache_problem(tmp_path / "good", "on") is None and cache_problem(tmp_path / "good", "read") is None
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / DB_NAME).write_bytes(b"not a database" * 1000)
    assert "(file is not a database)" in (cache_problem(tmp_path / "corrupt", "read") or "")
    (tmp_path / "folder" / DB_NAME).mkdir(parents=True)
    assert cache_problem(tmp_path / "folder", "on") == f"{tmp_path / 'folder' / DB_NAME} is not a file"
    (tmp_path / "afile").write_text("x")
    assert "afile is not a folder" in (cache_problem(tmp_path / "afile" / "sub", "write") or "")
    assert cache_problem(tmp_path / "afile" / "sub", "read") is None  # nothing to read, nothing to store
    assert cache_problem(tmp_path / "corrupt", "off") is None


def test_read_mode_reads_a_cache_in_a_read_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A WAL reader makes the file's -shm: in a folder restored read-only (a CI cache) it could not open it."""
    key = cache_key(request())
    store_one(tmp_path, key)
    cache = ResponseCache(tmp_path, "read")
    real = cache._connect

    def read_only_folder(database: str, *, reader: bool = False) -> sqlite3.Connection:
        if "mode=ro" in database:
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, reader=reader)

    monkeypatch.setattr(cache, "_connect", read_only_folder)
    assert cache.get(key) == dataclasses.replace(ANSWER, attempts=0, cached=True)
    cache.close()


def test_once_another_process_writes_lookups_ask_sqlite_again(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    mine, theirs = cache_key(request()), cache_key(request(run=2))
    assert cache.get(mine) is None
    cache.put(mine, ANSWER, "mock", "model-1")
    assert wait_for(lambda: cache.get(mine) is not None)
    other = ResponseCache(tmp_path)  # another process's cache on the same file
    assert other.get(theirs) is None
    other.put(theirs, ANSWER, "mock", "model-1")
    other.close()
    assert wait_for(lambda: cache.get(theirs) is not None)  # the writer saw the file change
    cache.close()


def store_one(folder: Path, key: str, mode: str = "on") -> None:
    """Store ``ANSWER`` under ``key`` through a cache of its own, closed: its writer has drained."""
    cache = ResponseCache(folder, mode)
    cache.put(key, ANSWER, "mock", "model-1")
    cache.close()


def test_a_file_with_answers_at_the_first_lookup_is_always_asked(tmp_path: Path) -> None:
    key = cache_key(request())
    store_one(tmp_path, key)
    cache = ResponseCache(tmp_path)
    assert cache.get(cache_key(request(run=2))) is None
    assert cache.get(key) is not None
    cache.close()


def test_a_batch_of_answers_is_stored_in_order_in_a_few_statements(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute(_SCHEMA)
    statements = [(_STORE, (f"k{n}", f"v{n}", "p", "m", 1.0)) for n in range(400)]
    statements += [(_TOUCH, (2.0, "k1")), (_STORE, ("k1", "again", "p", "m", 3.0))]
    seen: list[str] = []
    db.set_trace_callback(seen.append)
    with db:
        _execute_in_order(db, statements)
    rows = dict(db.execute("SELECT key, value FROM responses").fetchall())
    assert len(rows) == 400 and rows["k1"] == "again" and rows["k399"] == "v399"
    assert db.execute("SELECT hits, created_at FROM responses WHERE key = 'k1'").fetchone() == (1, 3.0)
    assert len([sql for sql in seen if sql.startswith("INSERT")]) == 5  # 128 x 3, the 16 left, then the last one
    db.close()


def test_read_mode_stores_nothing_and_write_mode_finds_nothing(tmp_path: Path) -> None:
    key = cache_key(request())
    store_one(tmp_path, key, "read")
    assert not (tmp_path / DB_NAME).exists()
    store_one(tmp_path, key, "write")
    writer = ResponseCache(tmp_path, "write")
    assert writer.get(key) is None
    writer.close()
    assert ResponseCache(tmp_path, "read").get(key) is not None


def test_a_hit_is_counted_for_pruning(tmp_path: Path) -> None:
    key = cache_key(request())
    store_one(tmp_path, key)
    cache = ResponseCache(tmp_path)
    assert cache.get(key) is not None and cache.get(key) is not None
    cache.close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        hits, hit_at, created_at = db.execute("SELECT hits, hit_at, created_at FROM responses").fetchone()
    assert hits == 2 and hit_at >= created_at


def test_a_broken_file_is_logged_once_and_never_fails_a_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / DB_NAME).write_bytes(b"this is not a database" * 100)
    cache = ResponseCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="bench_plugin.cache"):
        assert cache.get(cache_key(request())) is None
        assert cache.get(cache_key(request(run=2))) is None
        cache.put(cache_key(request()), ANSWER, "mock", "model-1")
        cache.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "bench_plugin.cache"]
    assert len(warnings) == 1 and "this run goes on without it" in warnings[0]


def call(runner: Runner, req: CompletionRequest) -> tuple[Completion | None, CallEntry]:
    entry = CallEntry.of(req)

    async def go() -> Completion:
        return await runner._call(req, entry)

    loop = runner._ensure_started()
    try:
        return asyncio.run_coroutine_threadsafe(go(), loop).result(timeout=30), entry
    except ProviderError:
        return None, entry


def http_model(server: MockServer, model_id: str) -> ModelSpec:
    provider = ProviderSpec("mock", "openai_compatible", server.openai_base_url, "BENCH_TEST_KEY",
                            headers={"X-Secret-Header": "header-marker-5e1f"}, max_retries=0)
    return ModelSpec("m", provider, model_id, "M")


def test_runner_stores_answers_only_and_no_key_material(
    tmp_path: Path, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = "sk-unit-marker-" + uuid.uuid4().hex
    monkeypatch.setenv("BENCH_TEST_KEY", marker)
    good, bad = f"cache-unit-{uuid.uuid4().hex[:8]}", f"cache-unit-down-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": bad, "status": 500})
    runner = Runner(4, settings=RunnerSettings(cache_mode="on", cache_dir=tmp_path))
    try:
        answered, entry = call(runner, request(model=http_model(mock_server, good)))
        failed, failed_entry = call(runner, request(model=http_model(mock_server, bad)))
    finally:
        runner.close()
    assert answered is not None and not answered.cached and entry.cache == "miss"
    assert failed is None and failed_entry.cache == "miss" and failed_entry.error is not None
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("SELECT provider, model FROM responses").fetchall() == [("mock", good)]  # not the failure
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert marker.encode() not in data and b"header-marker-5e1f" not in data, path.name

    runner = Runner(4, settings=RunnerSettings(cache_mode="on", cache_dir=tmp_path))
    try:
        hit, hit_entry = call(runner, request(model=http_model(mock_server, good)))
    finally:
        runner.close()
    assert hit == dataclasses.replace(answered, attempts=0, cached=True)
    assert hit_entry.cache == "hit" and hit_entry.attempts == 0 and hit_entry.cost.usd == 0
    assert runner.budget.spent_tokens == 0  # a hit spends nothing of the session's budget
    assert sum(1 for r in mock_server.requests if r["model"] == good) == 1


WRITER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from bench_plugin.calls.cache import ResponseCache
    from bench_plugin.core.chat import Completion, Usage

    folder, worker = Path(sys.argv[1]), int(sys.argv[2])
    cache = ResponseCache(folder)
    for n in range(200):
        # 150 keys of this worker's own, 50 that every worker stores (the same answer)
        key = f"shared-{n}" if n < 50 else f"w{worker}-{n}"
        text = "shared" if n < 50 else f"worker {worker} answer {n}"
        cache.put(key, Completion(text, Usage(n, 1)), "mock", "m")
        if n % 20 == 0:
            cache.get(f"shared-{n}")
    cache.close()
""")


def test_several_processes_write_one_file_consistently(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    workers = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(w)]) for w in range(4)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    with sqlite3.connect(folder / DB_NAME) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = dict(db.execute("SELECT key, value FROM responses").fetchall())
    assert len(rows) == 4 * 150 + 50
    cache = ResponseCache(folder, "read")
    assert all(cache.get(key) is not None for key in rows)
    assert cache.get("w3-199") == Completion("worker 3 answer 199", Usage(199, 1), attempts=0, cached=True)
    cache.close()
