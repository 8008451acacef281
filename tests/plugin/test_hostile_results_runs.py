"""A resumed named run and --bench-rejudge read results.jsonl back: a hostile record stops them in words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
