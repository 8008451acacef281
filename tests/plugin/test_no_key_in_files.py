"""A marker API key sent to a hostile endpoint appears in no file a run writes, with every output on.

The endpoint echoes the key in response headers, quotes it in a 401 body, a 500 body and a 429 body;
the run writes results, reports, the dashboard, junit XML, DEBUG logs, the response cache and a named
run's folder, once in one process and once under xdist. Every file under the test's folder is then
searched byte for byte (base64 data decoded, the cache's SQLite rows read back), as is the terminal.
``test_debug_logs.py`` covers the keys pytest's own log handlers could see (httpcore's trace, a key
holding a newline).
"""

from __future__ import annotations

import base64
import re
import sqlite3
import uuid
from pathlib import Path

import pytest

from bench_plugin.mock.server import MockServer

_DATA_URI = re.compile(rb"base64,([A-Za-z0-9+/=]{16,})")


def marked_key() -> tuple[str, tuple[str, ...]]:
    """A key shaped like an OpenAI project key, and the pieces of it that must not appear anywhere."""
    tail = uuid.uuid4().hex
    key = f"sk-proj-KEYLEAKMARKER{tail}"
    return key, (key, "KEYLEAKMARKER", tail[:16], tail[-16:])


def suite(server: MockServer, ids: dict[str, str]) -> str:
    models = "".join(f"  {name}: {{provider: hostile, id: {model_id}}}\n" for name, model_id in ids.items()
                     if name != "grader")
    return (
        "providers:\n"
        f"  hostile: {{type: openai_compatible, base_url: '{server.openai_base_url}', api_key_env: OPENAI_API_KEY,"
        " timeout: 5, max_retries: 1}\n"
        f"models:\n{models}"
        f"judges:\n  grader: {{provider: hostile, id: {ids['grader']}}}\n"
        "tasks:\n  - {id: greet, prompt: 'Say hello to Ada'}\n"
        "scorers:\n"
        "  - {name: C, type: contains, value: Ada}\n"
        "  - {name: J, type: llm_judge, judge: grader, prompt: 'Rate this answer: {{ answer }}'}\n"
        "composite: '0.5*C + 0.5*J'\n"
        "pass_threshold: 0.5\n"
    )


def hostile_rules(server: MockServer, ids: dict[str, str], key: str) -> None:
    echoed = {"X-Echo-Key": key, "x-api-key": key, "Authorization": f"Bearer {key}"}
    server.add_rule({"model": ids["grader"], "reply": "Rating: [[8]]", "headers": echoed})
    server.add_rule({"model": ids["ok"], "headers": echoed})
    server.add_rule({"model": ids["refused"], "status": 401})  # the mock's 401 body quotes the key sent
    server.add_rule({"model": ids["broken"], "status": 500, "error": f"upstream rejected key {key}", "headers": echoed})
    server.add_rule({"model": ids["limited"], "status": 429, "retry_after": "1", "times": 1,
                     "error": f"rate limit for key {key}", "headers": echoed})


def every_byte_written(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` as bytes; base64 data (HTML extras) decoded and SQLite rows read back too."""
    found: dict[str, bytes] = {}
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        decoded = [base64.b64decode(chunk + b"==") for chunk in _DATA_URI.findall(data)]
        found[str(path.relative_to(folder))] = b"\n".join([data, *decoded])
        if data.startswith(b"SQLite format 3\0"):
            found[f"{path.relative_to(folder)} (rows)"] = sqlite_rows(path)
    return found


def sqlite_rows(path: Path) -> bytes:
    """Every value of every table, as text (the WAL's pages included, which a byte search may miss)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = [repr(row) for table in tables for row in connection.execute(f'SELECT * FROM "{table}"')]
    finally:
        connection.close()
    return "\n".join(rows).encode()


@pytest.mark.slow
def test_a_marker_key_reaches_no_file_the_run_writes(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, pieces = marked_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    unique = uuid.uuid4().hex[:8]
    ids = {name: f"keys-{name}-{unique}" for name in ("ok", "refused", "broken", "limited", "grader")}
    hostile_rules(mock_server, ids, key)
    pytester.makefile(".yaml", **{"suites/keys": suite(mock_server, ids)})
    common = ("suites", "-p", "no:randomly", "-rA", "--bench-allow-key-env", "OPENAI_API_KEY", "--bench-cache", "on",
              "--log-level=DEBUG", "--log-file-level=DEBUG", "-o", "junit_logging=all")
    first = pytester.runpytest_subprocess(*common, "--bench-run", "first", "--log-cli-level=DEBUG",
                                          "--log-file=debug.log", "--junitxml=junit.xml")
    first.assert_outcomes(passed=2, errors=2)
    second = pytester.runpytest_subprocess(*common, "-n", "2", "--log-file=debug-xdist.log",
                                           "--junitxml=junit-xdist.xml")
    second.assert_outcomes(passed=2, errors=2)

    refused = [r for r in mock_server.requests if r["model"] == ids["refused"]]
    assert refused and refused[0]["headers"]["authorization"] == f"Bearer {key}"  # the key was sent each time
    written = every_byte_written(pytester.path)
    expected = {"debug.log", "debug-xdist.log", "junit.xml", "junit-xdist.xml", ".bench-cache/responses.sqlite3",
                *(f"bench-results/{folder}{name}" for folder in ("", "runs/first/")
                  for name in ("results.jsonl", "report.md", "summary.json", "report.html", "dashboard.html"))}
    assert expected <= set(written), sorted(written)
    assert b"keys-ok-" in written[".bench-cache/responses.sqlite3 (rows)"]  # the cache holds answers
    assert b"Incorrect API key provided" in written["bench-results/results.jsonl"]  # the 401's message is kept
    outputs = {"terminal (one process)": "\n".join(first.outlines + first.errlines).encode(),
               "terminal (xdist)": "\n".join(second.outlines + second.errlines).encode(), **written}
    leaks = sorted({(name, piece) for name, data in outputs.items() for piece in pieces if piece.encode() in data})
    assert leaks == []
