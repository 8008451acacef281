"""No crash from threads: the runner thread parses no Python source, and the 500-case timeout run survives.

On CPython 3.11, ``ast.parse`` on two threads at once can raise ``SystemError: AST constructor recursion
depth mismatch`` (CPython gh-106905): pytest's main thread parses source to format tracebacks while the
runner thread scores cases. Formulas, gates and checks are therefore compiled at collection, on the main
thread; these tests hold that in place.
"""

from __future__ import annotations

import ast
import json
import threading
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

SCORED = """
suite: threads
models:
  a: {provider: scripted, script: [{reply: "Ada, it is 42. Hello!"}]}
  b: {provider: echo}
judges:
  grader: {provider: scripted, script: [{contains: "42", reply: "Score: 8"}, {reply: "Score: 3"}]}
tasks:
  - {id: "single{{ n }}", matrix: {n: [1, 2, 3, 4, 5, 6, 7, 8]}, prompt: "Say hello to Ada {{ n }}"}
  - id: turns
    turns:
      - "Say hello to Ada"
      - {content: "Now count to three", when: {contains: Ada}}
      - {content: "Never sent", when: {regex: "^nothing$"}}
scorers:
  - {name: C, type: contains, value: Ada}
  - {name: L, type: length, max: 200}
  - {name: N, type: regex, pattern: "\\\\d+"}
  - {name: J, type: llm_judge, judge: grader, scale: [0, 10], parse: {regex: "Score: (\\\\d+)"},
     prompt: "Rate: {{ answer }}"}
composite:
  formula: "0.5*C + 0.2*L + 0.1*N + 0.2*J"
  gates:
    - {component: J, when: "C >= 0.5 and (L > 0 or not N < 1)"}
  on_missing: renormalize
pass_threshold: 0.5
"""


def test_the_runner_thread_parses_no_python_source(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    real_parse = ast.parse
    calls: list[tuple[str, str]] = []

    def recording_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((threading.current_thread().name, str(source)[:80]))
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording_parse)
    pytester.makefile(".yaml", **{"suites/threads": SCORED})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(passed=17, failed=1)  # echo never says Ada after the first turn
    formulas = [source for thread, source in calls if "0.5*C" in source or "C >= 0.5" in source]
    assert formulas, "the composite was not compiled through ast.parse at all"
    elsewhere = [(thread, source) for thread, source in calls if thread != threading.main_thread().name]
    assert elsewhere == []  # every parse happened on the main thread (collection), none at case time


TIMEOUTS = """
suite: timeouts
providers:
  mock: {{type: openai_compatible, base_url: '{url}', timeout: 1, max_retries: 0}}
models:
  fast: {{provider: mock, id: {fast}}}
  slow: {{provider: mock, id: {slow}}}
tasks:
  - id: "t{{{{ n }}}}"
    matrix: {{n: {numbers}}}
    prompt: "Say hello to Ada {{{{ n }}}}"
scorers:
  - {{name: C, type: contains, value: Ada}}
  - {{name: L, type: length, max: 60}}
composite: "0.7*C + 0.3*L"
pass_threshold: 0.5
"""
# pytest's main thread formats failures from real source while the runner scores: the other side of the race
NOISE = """
import pytest

@pytest.mark.parametrize("n", range(20))
def test_noise(n):
    values = {"n": n, "nested": [[n] * 3] * 3}
    assert values == {"n": -1}, "a traceback pytest formats from this very source"
"""


@pytest.mark.slow
def test_500_cases_with_timeouts_and_a_composite_never_crash(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    fast, slow = f"fast-{uuid.uuid4().hex[:8]}", f"slow-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": slow, "match": r"Ada \d*(00|25|50|75)$", "delay": 2.5})  # 10 of them time out
    suite = TIMEOUTS.format(url=mock_server.openai_base_url, fast=fast, slow=slow, numbers=list(range(1, 251)))
    pytester.makefile(".yaml", **{"suites/timeouts": suite})
    pytester.makepyfile(test_noise=NOISE)
    for attempt in range(5):
        result = pytester.runpytest(
            "test_noise.py", "suites", "-p", "no:cacheprovider", "--bench-html", "off",
            "--bench-concurrency", "64", "-p", "no:randomly",
        )
        output = "\n".join(result.outlines + result.errlines)
        assert "INTERNALERROR" not in output and "SystemError" not in output, (attempt, output[-3000:])
        outcomes = result.parseoutcomes()
        assert outcomes["failed"] == 20 and outcomes["passed"] + outcomes["errors"] == 500, (attempt, outcomes)
        lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        assert len(records) == 500 and len({record["nodeid"] for record in records}) == 500, attempt
        timed_out = [record for record in records if (record["error"] or {}).get("kind") == "timeout"]
        assert len(timed_out) >= 5, attempt  # the slow model's 10 cases (a loaded machine may add some)
