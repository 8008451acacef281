"""Cases run without a sandbox are flagged in summary.json, report.md and dashboard.html, as escaped text."""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt

from bench_plugin.report.dashboard import render_dashboard
from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.sandbox_flag import MAX_NAMED, html_skipped_note, html_warning, sandbox_section
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import CaseRecord

HOSTILE = "x<img src=x onerror=alert(1)>`[a](javascript:alert(1))"


def record(task: str, *, suite: str = "agents", sandbox: str | None = "none", model: str = "m") -> CaseRecord:
    agent: dict[str, Any] = {"tools": ["run_command"], "tool_calls": []}
    if sandbox is not None:
        agent["sandbox"] = sandbox
    return CaseRecord(nodeid=f"suites/{suite}.yaml::{task}[{model}-run1]", suite=suite, path=f"suites/{suite}.yaml",
                      task=task, model=model, model_id=model, model_label=model, provider="scripted", run=1,
                      status="passed", composite=1.0, threshold=0.5, agent=agent)


def test_summary_lists_the_unsandboxed_cases_of_each_suite_and_nothing_otherwise() -> None:
    records = [record("a"), record("b", sandbox=None), record("c", suite="other", sandbox=None)]
    suites = summarize(records)["suites"]
    assert suites[0]["sandbox"] == {"none": ["suites/agents.yaml::a[m-run1]"]}
    assert "sandbox" not in suites[1]  # isolated (or no programs): the summary is as it always was
    assert sandbox_section([record("x", sandbox=None)]) == {}


def test_report_md_warns_first_and_in_the_suite_section() -> None:
    records = [record("a"), record("b"), record("c", suite="other", sandbox=None)]
    text = render_markdown(summarize(records))
    lines = text.splitlines()
    assert lines[2] == ("> **WARNING: agent commands ran WITHOUT a sandbox** (`sandbox: none`) in 2 cases: they could "
                        "read this machine's files and pytest's environment (API keys included), write outside their "
                        "workspace and reach the network.")
    assert lines[4] == ("> - `suites/agents.yaml` (2 cases): `suites/agents.yaml::a[m-run1]`, "
                        "`suites/agents.yaml::b[m-run1]`")
    sections = text.split("\n## ")
    assert "WITHOUT a sandbox** (`sandbox: none`) in 2 cases of this suite." in sections[1]
    assert "WITHOUT a sandbox" not in sections[2]  # the isolated suite's section has no warning
    assert "WITHOUT a sandbox" not in render_markdown(summarize([record("x", sandbox=None)]))


def test_report_md_warning_renders_hostile_ids_as_text() -> None:
    text = render_markdown(summarize([record(HOSTILE)]))
    tokens = MarkdownIt("commonmark", {"html": True}).parse(text)
    children = [child for token in tokens for child in (token.children or [])]
    assert not [t for t in [*tokens, *children] if t.type in ("html_block", "html_inline", "link_open", "image")]
    shown = [child.content for child in children if child.type == "code_inline"]
    assert f"suites/agents.yaml::{HOSTILE}[m-run1]" in shown


def test_many_cases_are_counted_after_the_first_few() -> None:
    records = [record(f"t{i}") for i in range(MAX_NAMED + 3)]
    text = render_markdown(summarize(records))
    assert f"`suites/agents.yaml::t{MAX_NAMED - 1}[m-run1]` and 3 more" in text
    assert f"t{MAX_NAMED}[m-run1]" not in text.split("\n## ")[0]
    assert " and 3 more</li>" in html_warning([r.nodeid for r in records])


def test_dashboard_has_an_escaped_banner_and_a_line_in_the_suite() -> None:
    records = [record(HOSTILE), record("b", suite="other", sandbox=None)]
    page = render_dashboard(summarize(records), records)
    header = page.split("<main>")[0]
    banner = re.search(r'<div class="bench-unsandboxed" role="alert"[^>]*><strong>WARNING: agent commands ran '
                       r"WITHOUT a sandbox</strong> \(sandbox: none\) in 1 case: (.*?)</div>", header)
    assert banner is not None
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in banner.group(1)
    sections = page.split('<section class="suite"')
    assert 'class="bench-unsandboxed"' in sections[1] and "in 1 case of this suite" in sections[1]
    assert "bench-unsandboxed" not in sections[2]
    quiet = [record("x", sandbox=None)]
    assert "bench-unsandboxed" not in render_dashboard(summarize(quiet), quiet)


def test_html_banner_is_empty_without_cases_and_escapes_file_names() -> None:
    assert html_warning([]) == ""
    banner = html_warning(['suites/"a"&<b>.yaml::t[m-run1]'])
    assert "<code>suites/&quot;a&quot;&amp;&lt;b&gt;.yaml</code> (1 case)" in banner


def skipped(task: str, *, suite: str = "agents") -> CaseRecord:
    """A case skipped because no sandbox works here, as run/case.py records it."""
    reason = "sandbox: agent commands run in a sandbox, and it does not work here: <b>x</b>\n  hint: install bubblewrap"
    return CaseRecord(nodeid=f"suites/{suite}.yaml::{task}[m-run1]", suite=suite, path=f"suites/{suite}.yaml",
                      task=task, model="m", model_id="m", model_label="m", provider="scripted", run=1,
                      status="skipped", reason=reason,
                      error={"kind": "sandbox", "type": "SandboxError", "message": reason})


def test_cases_skipped_for_want_of_a_sandbox_are_named_with_the_fix_in_every_file() -> None:
    records = [skipped(HOSTILE), skipped("b", suite="other"), record("c", sandbox=None)]
    summary = summarize(records)
    first, second = summary["suites"]
    assert first["sandbox"]["skipped"] == [f"suites/agents.yaml::{HOSTILE}[m-run1]"]
    assert second["sandbox"]["reason"].endswith("hint: install bubblewrap")
    text = render_markdown(summary)
    note = text.split("\n## ")[0]
    assert "> **2 cases SKIPPED: no sandbox works on this machine** (nothing was run): " in note
    assert "install bubblewrap" in note and "<b>" not in note  # the reason is text, not markup
    tokens = MarkdownIt("commonmark", {"html": True}).parse(note)
    children = [child for token in tokens for child in (token.children or [])]
    assert not [t for t in [*tokens, *children] if t.type in ("html_block", "html_inline", "link_open", "image")]
    page = render_dashboard(summary, records)
    assert "2 cases SKIPPED: no sandbox works on this machine</strong>" in page
    assert "<img" not in page and "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert html_skipped_note([], "") == "" and sandbox_section([record("x", sandbox=None)]) == {}
