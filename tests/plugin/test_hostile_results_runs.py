"""Hostile input in whole runs: a stored record read back (resume, --bench-rejudge), an answer past the limit."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from bench_plugin.mock.server import MockServer

SUITE = """
suite: again
models:
  parrot: {provider: echo}
tasks:
  - {id: t, prompt: "Say hi to Ada"}
scorers:
  - {type: contains, value: Ada}
"""
GOLDEN = Path(__file__).parents[1] / "golden" / "pairwise_two_cases.jsonl"
HOSTILE = {
    "composite 1e400": ('"composite": 0.5', '"composite": 1e400'),
    "200,000-deep value": ('"composite": 0.5', '"composite": ' + "[" * 200_000 + "]" * 200_000),
    "call_log [1, 'x']": ('"call_log": [', '"call_log": [1, "x", '),
}


def hostile_line(variant: str) -> str:
    line = json.dumps(json.loads(GOLDEN.read_text(encoding="utf-8").splitlines()[0]), sort_keys=True)
    old, new = HOSTILE[variant]
    assert old in line
    return line.replace(old, new, 1) + "\n"


@pytest.mark.parametrize("variant", list(HOSTILE))
@pytest.mark.parametrize("how", ["resume", "rejudge"])
def test_a_hostile_stored_record_stops_the_session_naming_the_line(
    pytester: pytest.Pytester, variant: str, how: str
) -> None:
    pytester.makefile(".yaml", **{"suites/again": SUITE})
    folder = pytester.path / "bench-results" / ("runs/nightly" if how == "resume" else "")
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text(hostile_line(variant), encoding="utf-8")
    option = ["--bench-run", "nightly"] if how == "resume" else ["--bench-rejudge"]
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off", *option)
    output = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in output and "Traceback" not in output and "RecursionError" not in output, output
    assert result.ret != 0
    assert "results.jsonl:1: not a case record this version can read" in output, output


LIMITED_SUITE = """
providers:
  mock: {{type: openai_compatible, base_url: '{url}', timeout: 5, max_retries: 0, max_response_bytes: 2048}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: long, prompt: 'Say hello to Ada'}}
scorers:
  - {{type: contains, value: Ada}}
"""


def test_a_providers_max_response_bytes_refuses_a_longer_answer_as_an_error(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = f"long-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "reply": "Ada " * 2000})
    pytester.makefile(".yaml", **{"suites/limited": LIMITED_SUITE.format(url=mock_server.openai_base_url,
                                                                        model_id=model_id)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off", "-rE")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*an answer longer than 2,048 bytes (the provider's max_response_bytes)*"])
