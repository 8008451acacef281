"""report.html stays a lean per-case view: each case's pieces shown once, inline and escaped, long text folded.

The bundled run's page (pytest suites/, self-contained by default) must stay under 5 MB: it was 34 MB when
every case carried its transcript, each judge reply and its whole record again as base64 links.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.report.html import FOLD_CHARS, MAX_SHOWN_CHARS, case_view, extras_for

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = "<script>alert(1)</script>"
# tags the case view writes; nothing else may reach the page from a record
VIEW_TAGS = {"div", "p", "b", "table", "tr", "th", "td", "details", "summary", "pre"}

SUITE = f"""\
models:
  talker:
    provider: scripted
    script:
      - {{task: long, reply: {json.dumps(PAYLOAD + " and more. " * 300)}}}
      - {{reply: {json.dumps("Short: " + PAYLOAD)}}}
  other:
    provider: scripted
    default: false
    script: [{{reply: "The other answer."}}]
judges:
  referee:
    provider: scripted
    script: [{{reply: {json.dumps("Better: " + PAYLOAD + " [[A]]")}}}]
tasks:
  - {{id: long, prompt: "Talk at length."}}
  - {{id: short, prompt: "Be brief."}}
scorers:
  - {{name: P, type: llm_judge_pairwise, judge: referee, against: {{model: other}},
      prompt: "Q: {{{{ question }}}} A: {{{{ answer_a }}}} B: {{{{ answer_b }}}}"}}
pass_threshold: 0
"""


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.blob: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if ("id", "data-container") in attrs:
            self.blob = dict(attrs)["data-jsonblob"]


def tags_in(fragment: str) -> list[str]:
    parser = Tags()
    parser.feed(fragment)
    return parser.tags


def page_data(path: Path) -> dict[str, Any]:
    """The JSON the page's script turns into rows (the attribute as the browser decodes it)."""
    parser = Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    assert parser.blob is not None
    data: dict[str, Any] = json.loads(parser.blob)
    return data


def record(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "nodeid": "s.yaml::t[m-run1]", "model": "m", "task": "t", "run": 1, "status": "passed",
        "reason": "score 0.5000 >= threshold 0", "composite": 0.5,
        "variables": {"secret_dataset_field": "only in results.jsonl"},
        "transcript": [{"role": "user", "content": "Question?"}, {"role": "assistant", "content": PAYLOAD}],
        "scores": {"composite": 0.5, "components": [{
            "name": "P", "value": 0.5, "raw": 0.5, "detail": "vs rival: tie", "judge_output": "Judge says " + PAYLOAD,
            "pairwise": {"against": "rival", "other_answer": "Rival says " + PAYLOAD,
                         "orders": [{"order": 1, "verdict": "first", "judge_output": "Judge says " + PAYLOAD}]},
        }]},
    }
    return {**base, **fields}


def test_case_view_shows_every_piece_once_and_escaped() -> None:
    view = case_view(record())
    assert PAYLOAD not in view and "<script" not in view
    assert set(tags_in(view)) <= VIEW_TAGS
    assert view.count("Judge says &lt;script&gt;") == 1  # the reply, not again per order
    assert view.count("Rival says &lt;script&gt;") == 1
    assert "assistant: &lt;script&gt;alert(1)&lt;/script&gt;" in view
    assert "<td>P<td>0.5<td>0.5<td>vs rival: tie" in view
    assert "only in results.jsonl" not in view  # the record itself is not copied into the page
    assert "<details open><summary>Transcript (2 messages" in view  # short: shown open


def test_long_transcripts_fold_and_huge_texts_are_cut() -> None:
    long = record(transcript=[{"role": "assistant", "content": "x" * (FOLD_CHARS + 1)}])
    assert "<details><summary>Transcript (1 messages" in case_view(long)
    huge = record(transcript=[{"role": "assistant", "content": "y" * (MAX_SHOWN_CHARS * 2)}])
    view = case_view(huge)
    assert view.count("y") < MAX_SHOWN_CHARS + 100
    # the one non-Latin-1 character, the ellipsis, is a character reference: the view stays one byte a character
    assert f"&#8230; {MAX_SHOWN_CHARS + len('assistant: '):,} more characters in results.jsonl" in view


def test_tool_calls_and_conversations_are_shown() -> None:
    agent = {"tool_calls": [{"step": 1, "name": "write_file", "target": "<b>notes.md</b>", "ok": True, "error": None}]}
    view = case_view(record(agent=agent))
    assert "<summary>Tool calls (1;" in view
    assert "<td>1<td>write_file<td>&lt;b&gt;notes.md&lt;/b&gt;<td>True<td>" in view
    conversation = case_view(record(conversation={"mode": "shared"}, response="AI-1: " + PAYLOAD))
    assert "<summary>Conversation (" in conversation and "AI-1: &lt;script&gt;" in conversation


def test_extras_for_gives_one_inline_view_by_default() -> None:
    (extra,) = extras_for(record())
    assert extra["format_type"] == "html" and extra["content"] == case_view(record())


def test_suite_run_page_holds_one_escaped_inline_view_per_case(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/talk": SUITE})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    page = pytester.path / "bench-results" / "report.html"
    text = page.read_text(encoding="utf-8")
    assert PAYLOAD not in text and "data:text/plain" not in text and "data:application/json" not in text
    tests = {nodeid.split("::")[-1]: runs[0] for nodeid, runs in page_data(page)["tests"].items()}
    for name, row in tests.items():
        (extra,) = row["extras"]
        assert extra["format_type"] == "html"
        assert set(tags_in(extra["content"])) <= VIEW_TAGS, name
        assert extra["content"].count("Better: &lt;script&gt;alert(1)&lt;/script&gt; [[A]]") == 2  # both orders
    assert "<details><summary>Transcript" in tests["long[talker-run1]"]["extras"][0]["content"]
    assert "<details open><summary>Transcript" in tests["short[talker-run1]"]["extras"][0]["content"]
    cells = tests["short[talker-run1]"]["resultsTableRow"]
    assert '<td class="col-run">1</td>' in cells and '<td class="col-components">P 0.5</td>' in cells


@pytest.mark.slow
def test_bundled_run_report_html_is_under_5_mb(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--bench-output", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    page = tmp_path / "report.html"
    size = page.stat().st_size
    assert size < 5_000_000, f"report.html is {size:,} bytes"
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    tests = page_data(page)["tests"]
    cases = {r["nodeid"] for r in records}
    shown = {nodeid.removesuffix("::setup") for nodeid in tests}
    assert cases <= shown
    # one inline view per case, no base64 copies; a long answer appears once in the whole page
    assert all([e["format_type"] for e in runs[0]["extras"]] == ["html"] for nodeid, runs in tests.items()
               if nodeid.removesuffix("::setup") in cases)
    answer = next(r["response"] for r in records if r["suite"] == "mt_bench" and len(r["response"] or "") > 2000)
    blob = json.dumps(tests)
    assert blob.count(json.dumps(html.escape(answer[:200], quote=False))[1:-1]) == 1


def test_one_row_per_passed_case_and_teardown_output_still_reaches_its_log(pytester: pytest.Pytester) -> None:
    """Passed setups and quiet teardowns get no row built (pytest-html would drop it).

    A teardown that printed still adds its output to the case's row, as pytest-html does.
    """
    pytester.makefile(".yaml", **{"suites/talk": SUITE})
    pytester.makeconftest(
        "def pytest_runtest_teardown(item):\n"
        "    if 'short' in item.name:\n"
        "        print('said at teardown')\n"
    )
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    tests = page_data(pytester.path / "bench-results" / "report.html")["tests"]
    assert sorted(len(rows) for rows in tests.values()) == [1, 1]
    logs = {nodeid.split("::")[-1]: rows[0]["log"] for nodeid, rows in tests.items()}
    assert "said at teardown" in logs["short[talker-run1]"]
    assert "said at teardown" not in logs["long[talker-run1]"]


def test_a_view_with_a_few_wide_characters_is_stored_one_byte_a_character() -> None:
    """pytest-html keeps every view to the end of the run: one dash must not double a view's size."""
    from bench_plugin.report.html import latin1

    dashed = record(scores={"components": [{"name": "C", "value": 1.0, "detail": "expected 'x' — found"}]})
    view = case_view(dashed)
    assert view.isascii() and "expected 'x' &#8212; found" in view and "<td>&#8212;" in view  # raw: none
    assert html.unescape(view) == html.unescape(latin1(view))
    # Latin-1 letters stay as they are; a text mostly in another script keeps its characters (as references
    # it would be larger); so does a string with too many wide characters to be worth it
    assert latin1("café — " + "x" * 40) == "café &#8212; " + "x" * 40
    assert latin1("中文" * 50) == "中文" * 50
    assert latin1("a — b" * 10) == "a — b" * 10


WATCH_PAGE = """\
import json
from pathlib import Path

from pytest_html.basereport import BaseReport

CALLS = []


def pytest_runtest_logreport(report):
    if report.when == "call":
        CALLS.append(report)


def pytest_unconfigure(config):
    page = next(p for p in config.pluginmanager.get_plugins() if isinstance(p, BaseReport))
    out = {"reports": len(page._reports), "rows": len(page._report.data["tests"]),
           "extras": sum(hasattr(r, "extras") for r in CALLS), "calls": len(CALLS)}
    Path(__file__).parent.joinpath("kept.json").write_text(json.dumps(out))
"""


def test_pytest_html_keeps_no_case_reports_and_no_rows_once_its_page_is_written(pytester: pytest.Pytester) -> None:
    """Its reports by node id, the reports' extras and, once the page is written, its rows: no longer held."""
    pytester.makefile(".yaml", **{"suites/talk": SUITE})
    pytester.makeconftest(WATCH_PAGE)
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    kept = json.loads((pytester.path / "kept.json").read_text())
    assert kept == {"reports": 0, "rows": 0, "extras": 0, "calls": 2}
    tests = page_data(pytester.path / "bench-results" / "report.html")["tests"]  # the page has them all
    assert sorted(len(rows) for rows in tests.values()) == [1, 1]
    assert all("bench-case" in json.dumps(rows[0]["extras"]) for rows in tests.values())
