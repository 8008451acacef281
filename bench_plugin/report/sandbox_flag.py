"""The cases whose agent commands ran without a sandbox (``sandbox: none``), as every report flags them.

Isolation is off only when the user asked for it (``--bench-sandbox none``, or a suite's ``sandbox: none``
they consented to), and then every output says so, from the record's ``agent.sandbox`` (or the ``sandbox`` of a
``runs_tests`` component, which ran the answer's code): the terminal
(``sandbox_notice.py``), summary.json (a suite's ``sandbox``), report.md (a warning under the title and in
the suite's section), dashboard.html and report.html (a banner). Node ids come from suites: each format
escapes them with its own helper.

Where no sandbox works, the cases that need one are skipped (record ``error.kind`` ``sandbox``): the
terminal, summary.json (a suite's ``sandbox.skipped``), report.md, dashboard.html and report.html name
them with the reason and the fix.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench_plugin.report.escape import markdown_code, markdown_text
from bench_plugin.results.record import CaseRecord

NONE = "none"
SKIPPED = "skipped"
SKIPPED_HEADLINE = "agent cases SKIPPED: no sandbox works on this machine"
HEADLINE = "WARNING: agent commands ran WITHOUT a sandbox"
RISK = ("they could read this machine's files and pytest's environment (API keys included), write outside "
        "their workspace and reach the network")
MAX_NAMED = 10
"""Cases named per suite file; the rest are counted."""
# inline, so that the banner looks the same in dashboard.html (whose CSP allows inline styles) and report.html
_NOTE_STYLE = ("border:2px solid #b45309;background:#fffbeb;color:#78350f;padding:8px 14px;margin:10px 0;"
               "border-radius:6px;font-size:14px")
_BANNER_STYLE = ("border:2px solid #b91c1c;background:#fef2f2;color:#7f1d1d;padding:8px 14px;margin:10px 0;"
                 "border-radius:6px;font-size:14px")


def ran_without_sandbox(agent: Any, scores: Any = None) -> bool:
    """Whether a record's ``agent`` part, or a component of its ``scores`` (``runs_tests``), ran programs unconfined."""
    if isinstance(agent, Mapping) and agent.get("sandbox") == NONE:
        return True
    components = scores.get("components") if isinstance(scores, Mapping) else None
    return isinstance(components, list) and any(
        isinstance(component, Mapping) and component.get("sandbox") == NONE for component in components)


def skipped_for_want_of_sandbox(status: Any, error: Any) -> bool:
    """Whether a record (its ``status`` and ``error``) is a case skipped because no sandbox works here."""
    return status == SKIPPED and isinstance(error, Mapping) and error.get("kind") == "sandbox"


def sandbox_section(records: Iterable[CaseRecord]) -> dict[str, Any]:
    """A suite summary's ``sandbox`` entry; ``{}`` when every case that ran programs was isolated.

    ``{"sandbox": {"none": [nodeid, ...]}}`` names the cases that ran without one; ``"skipped"`` and
    ``"reason"`` the cases skipped because no sandbox works here. Records do not say which sandbox isolated
    a case. The entry is left out rather than empty, so the summaries of runs without agent commands do
    not change.
    """
    records = list(records)
    section: dict[str, Any] = {}
    unconfined = [record.nodeid for record in records if ran_without_sandbox(record.agent, record.scores)]
    if unconfined:
        section[NONE] = unconfined
    section.update(_skipped_section(records))
    return {"sandbox": section} if section else {}


def _skipped_section(records: list[CaseRecord]) -> dict[str, Any]:
    """``{"skipped": [nodeid, ...], "reason": ...}`` for the cases skipped for want of a sandbox; ``{}`` if none."""
    skipped = [record for record in records if skipped_for_want_of_sandbox(record.status, record.error)]
    return {SKIPPED: [record.nodeid for record in skipped], "reason": skipped[0].reason} if skipped else {}


def unsandboxed_cases(summary: Mapping[str, Any]) -> list[str]:
    """Every case of the run that ran without a sandbox, suite by suite (``summary`` as ``summarize`` made it)."""
    return [nodeid for suite in summary.get("suites") or [] for nodeid in suite_cases(suite)]


def skipped_cases(summary: Mapping[str, Any]) -> tuple[list[str], str]:
    """Every case of the run skipped because no sandbox works here, and the first one's reason."""
    sections = [suite.get("sandbox") or {} for suite in summary.get("suites") or []]
    skipping = [section for section in sections if section.get(SKIPPED)]
    cases = [str(nodeid) for section in skipping for nodeid in section[SKIPPED]]
    return cases, str(skipping[0].get("reason", "")) if skipping else ""


def suite_cases(suite: Mapping[str, Any]) -> list[str]:
    """The cases of one suite summary that ran without a sandbox."""
    found = (suite.get("sandbox") or {}).get(NONE) or []
    return [str(nodeid) for nodeid in found]


def by_file(nodeids: Iterable[str]) -> dict[str, list[str]]:
    """Node ids grouped by their suite file (the part before ``::``), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for nodeid in nodeids:
        groups.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    return groups


def _counted(count: int) -> str:
    return f"{count} case" + ("" if count == 1 else "s")


def markdown_warning(summary: Mapping[str, Any]) -> list[str]:
    """The warning under report.md's title: how many cases, the risk, and each suite file with its cases.

    Returns:
        Lines ending with a blank one; none when every case was isolated.
    """
    lines = _markdown_skipped(summary)
    cases = unsandboxed_cases(summary)
    if not cases:
        return lines
    lines += [f"> **{HEADLINE}** (`sandbox: none`) in {_counted(len(cases))}: {RISK}.", ">"]
    for path, found in by_file(cases).items():
        named = ", ".join(markdown_code(nodeid) for nodeid in found[:MAX_NAMED])
        more = f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
        lines.append(f"> - {markdown_code(path)} ({_counted(len(found))}): {named}{more}")
    return [*lines, ""]


def _markdown_skipped(summary: Mapping[str, Any]) -> list[str]:
    """The note of the cases skipped because no sandbox works here: how many, which, why and the fix."""
    cases, reason = skipped_cases(summary)
    if not cases:
        return []
    named = ", ".join(markdown_code(nodeid) for nodeid in cases[:MAX_NAMED])
    more = f" and {len(cases) - MAX_NAMED} more" if len(cases) > MAX_NAMED else ""
    why = [f"> {markdown_text(line.strip())}" for line in reason.removeprefix("sandbox: ").splitlines()]
    return [f"> **{_counted(len(cases))} {SKIPPED_HEADLINE.removeprefix('agent cases ')}** (nothing was run): "
            f"{named}{more}.", *(line for paragraph in why for line in (">", paragraph)), ""]


def markdown_suite_warning(suite: Mapping[str, Any]) -> list[str]:
    """The line under a suite's heading in report.md when some of its cases ran without a sandbox."""
    cases = suite_cases(suite)
    if not cases:
        return []
    return [f"> **{HEADLINE}** (`sandbox: none`) in {_counted(len(cases))} of this suite.", ""]


def html_warning(nodeids: Sequence[str]) -> str:
    """The banner of dashboard.html and report.html: escaped HTML, empty when every case was isolated."""
    if not nodeids:
        return ""
    items = []
    for path, found in by_file(nodeids).items():
        named = ", ".join(f"<code>{html.escape(nodeid)}</code>" for nodeid in found[:MAX_NAMED])
        more = f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
        items.append(f"<li><code>{html.escape(path)}</code> ({_counted(len(found))}): {named}{more}</li>")
    return (f'<div class="bench-unsandboxed" role="alert" style="{_BANNER_STYLE}"><strong>{HEADLINE}</strong> '
            f"(sandbox: none) in {_counted(len(nodeids))}: {html.escape(RISK)}.<ul>{''.join(items)}</ul></div>")


def html_skipped_note(nodeids: Sequence[str], reason: str) -> str:
    """The note of dashboard.html and report.html naming the cases skipped for want of a sandbox; escaped."""
    if not nodeids:
        return ""
    named = ", ".join(f"<code>{html.escape(nodeid)}</code>" for nodeid in nodeids[:MAX_NAMED])
    more = f" and {len(nodeids) - MAX_NAMED} more" if len(nodeids) > MAX_NAMED else ""
    why = html.escape(" ".join(line.strip() for line in reason.removeprefix("sandbox: ").splitlines()))
    return (f'<div class="bench-sandbox-skipped" role="note" style="{_NOTE_STYLE}"><strong>{_counted(len(nodeids))} '
            f"{SKIPPED_HEADLINE.removeprefix('agent cases ')}</strong> (nothing was run): {named}{more}."
            f"<br>{why}</div>")


def html_suite_warning(suite: Mapping[str, Any]) -> str:
    """The line at the top of a suite's section of dashboard.html, escaped; empty when its cases were isolated."""
    cases = suite_cases(suite)
    if not cases:
        return ""
    return (f'<p class="bench-unsandboxed" role="alert" style="{_BANNER_STYLE}"><strong>{HEADLINE}</strong> '
            f"(sandbox: none) in {_counted(len(cases))} of this suite.</p>")
