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


THREE_TASKS = """
suite: again
models:
  parrot: {provider: echo}
tasks:
  - {id: first, prompt: "Say hi to Ada"}
  - {id: middle, prompt: "Say hello to Ada"}
  - {id: last, prompt: "Greet Ada"}
scorers:
  - {type: contains, value: Ada}
"""


def spoil_middle_line(results: Path, variant: str) -> str:
    """Make the middle of three records hostile (as an edited or damaged file would be); return that line."""
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 3
    record = {**json.loads(lines[1]), "composite": 0.5, "call_log": [{}]}
    old, new = HOSTILE[variant]
    lines[1] = json.dumps(record, sort_keys=True).replace(old, new, 1) + "\n"
    assert new[:20] in lines[1]
    results.write_text("".join(lines), encoding="utf-8")
    return lines[1]


@pytest.mark.parametrize("variant", list(HOSTILE))
@pytest.mark.parametrize("how", ["resume", "rejudge"])
def test_a_hostile_stored_record_is_set_aside_named_and_counted(
    pytester: pytest.Pytester, variant: str, how: str
) -> None:
    """A bad line stopped a resumed run (or a re-judging) with a usage error; now it is moved aside and named."""
    pytester.makefile(".yaml", **{"suites/again": THREE_TASKS})
    option = ["--bench-run", "nightly"] if how == "resume" else ["--bench-rejudge"]
    folder = pytester.path / "bench-results" / ("runs/nightly" if how == "resume" else "")
    run = ("suites", "-p", "no:cacheprovider", "--bench-html", "off", "-rE", *option)
    first = pytester.runpytest(*run[:4], "off", *(option if how == "resume" else []))
    first.assert_outcomes(passed=3)
    hostile = spoil_middle_line(folder / "results.jsonl", variant)

    result = pytester.runpytest(*run)
    output = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in output and "Traceback" not in output and "RecursionError" not in output, output
    field = "'call_log[0]'" if "call_log" in variant else "composite"  # the field the warning names
    warning = next(line for line in output.splitlines() if "results.jsonl:2: not a case record" in line)
    assert field in warning and "that line is left out" in warning, warning
    assert "1 record left out" in output and "results.rejected.jsonl" in output, output
    if how == "resume":  # the other two reused, the middle one run again
        result.assert_outcomes(passed=3)
        assert "2 cases reused from run nightly" in output, output
    else:  # nothing left to re-judge for the middle case: the usual error saying so
        result.assert_outcomes(passed=2, errors=1)
        assert "has no record of this case" in output, output
    rejected = folder / "results.rejected.jsonl"
    assert rejected.read_text(encoding="utf-8") == hostile
    assert rejected.stat().st_mode & 0o777 == 0o600
    kept = [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(kept) == (3 if how == "resume" else 2)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["skipped_records"]["count"] == 1
    assert "**1 record left out**" in (folder / "report.md").read_text(encoding="utf-8")


def test_later_sessions_and_bench_report_still_count_the_lines_set_aside(pytester: pytest.Pytester) -> None:
    """Only the session that moved a line to results.rejected.jsonl counted it; a later one said nothing of it."""
    from bench_plugin.cli import main

    pytester.makefile(".yaml", **{"suites/again": THREE_TASKS})
    folder = pytester.path / "bench-results" / "runs" / "nightly"
    run = ("suites", "-p", "no:cacheprovider", "--bench-html", "off", "--bench-run", "nightly")
    pytester.runpytest(*run).assert_outcomes(passed=3)
    spoil_middle_line(folder / "results.jsonl", "composite 1e400")
    pytester.runpytest(*run).assert_outcomes(passed=3)  # sets the line aside (the test above)

    later = pytester.runpytest(*run)
    later.assert_outcomes(passed=3)
    later.stdout.fnmatch_lines(["*1 line set aside by earlier sessions stays in *results.rejected.jsonl*"])
    assert json.loads((folder / "summary.json").read_text(encoding="utf-8"))["skipped_records"]["count"] == 1
    assert "**1 record left out**" in (folder / "report.md").read_text(encoding="utf-8")

    out = pytester.path / "rebuilt"
    assert main(["report", str(folder / "results.jsonl"), "-o", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["skipped_records"]["count"] == 1
    assert "**1 record left out**" in (out / "report.md").read_text(encoding="utf-8")


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
