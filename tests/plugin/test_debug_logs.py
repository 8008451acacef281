"""At the most verbose log level, no key reaches any output: terminal, log file, junit.xml, report.html, results.

httpx's own stack logged response headers whole (httpcore's trace) and quoted a key holding a newline (h11's
error); the runner's transport logs no headers and names only the refused header, and a filter redacts keys in
whatever the HTTP libraries log. The keys here are markers searched for in every byte written.
"""

from __future__ import annotations

import base64
import re
import uuid
from pathlib import Path

import pytest

from bench_plugin.mock.server import MockServer

ECHOED = "sk-ECHOMARKER-0123456789abcdef"  # a proxy echoes it in response headers
BROKEN = "sk-NEWLINEMARKER-0123456789\nX-Injected: yes"  # a pasted key that holds a newline
MARKERS = ("ECHOMARKER", "NEWLINEMARKER")
_DATA_URI = re.compile(r"base64,([A-Za-z0-9+/=]+)")


def suite(server: MockServer, echo: str, newline: str, rejected: str) -> str:
    def provider(name: str, variable: str) -> str:
        return (f"  {name}: {{type: openai_compatible, base_url: '{server.openai_base_url}', api_key_env: {variable},"
                " timeout: 2, max_retries: 0}\n")

    return (
        "providers:\n" + provider("echoing", "BENCH_TEST_KEY") + provider("pasted", "BENCH_TEST_NEWLINE_KEY")
        + "models:\n"
        f"  echo: {{provider: echoing, id: {echo}}}\n"
        f"  newline: {{provider: pasted, id: {newline}}}\n"
        f"  rejected: {{provider: echoing, id: {rejected}}}\n"
        "tasks:\n  - {id: greet, prompt: 'Say hello to Ada'}\n"
        "scorers:\n  - {type: contains, value: Ada}\n"
    )


def everything_written(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` as text, with base64 data (pytest-html's embedded extras) decoded too."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            decoded = [base64.b64decode(chunk + "==").decode("utf-8", "replace") for chunk in _DATA_URI.findall(text)]
            found[str(path.relative_to(folder))] = "\n".join([text, *decoded])
    return found


def test_debug_logs_carry_no_key_to_any_output(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", ECHOED)
    monkeypatch.setenv("BENCH_TEST_NEWLINE_KEY", BROKEN)
    echo, newline, rejected = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("echo", "newline", "rejected"))
    # a proxy that echoes the key back in a header of its own and in the credential headers
    mock_server.add_rule({"model": echo, "headers": {"X-Echo-Key": ECHOED, "x-api-key": ECHOED,
                                                     "Authorization": f"Bearer {ECHOED}"}})
    mock_server.add_rule({"model": rejected, "status": 401})  # the error body quotes the key sent
    pytester.makefile(".yaml", **{"suites/keys": suite(mock_server, echo, newline, rejected)})
    result = pytester.runpytest_subprocess(
        "suites", "-p", "no:cacheprovider", "--bench-allow-key-env", "BENCH_TEST_KEY,BENCH_TEST_NEWLINE_KEY",
        "--log-level=DEBUG", "--log-cli-level=DEBUG", "--log-file=debug.log", "--log-file-level=DEBUG",
        "--junitxml=junit.xml", "-o", "junit_logging=all", "--html=report.html", "--self-contained-html",
    )
    result.assert_outcomes(passed=1, errors=2)
    terminal = "\n".join(result.outlines + result.errlines)
    # the pasted key was refused before it reached a header, and not quoted
    assert "environment variable BENCH_TEST_NEWLINE_KEY holds a character an HTTP header cannot carry" in terminal
    outputs = {"terminal": terminal, **everything_written(pytester.path)}
    assert {"debug.log", "junit.xml", "report.html", "bench-results/results.jsonl"} <= set(outputs)
    assert "DEBUG" in outputs["debug.log"] and "Using selector" in outputs["debug.log"]  # DEBUG records were kept
    leaks = [(name, marker) for name, text in outputs.items() for marker in MARKERS if marker in text]
    assert leaks == []
