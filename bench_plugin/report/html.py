"""pytest-html 4.x integration: Model / Task / Score columns and per-case extras, all escaped.

What pytest-html 4.2 does with what we give it (read in its basereport.py and app.js):

- Table cells are HTML strings. They travel in a JSON blob and the page's script puts each one
  in place through ``innerHTML``, so a cell must be escaped by whoever builds it: here.
- ``text`` and ``json`` extras never enter the page as HTML. With ``--self-contained-html`` the
  content becomes a ``data:text/plain;charset=utf-8;base64,...`` (or ``application/json``) link;
  otherwise it is written to ``assets/*.txt`` / ``*.json`` and linked. A browser shows either as
  plain text, so model output goes there unescaped and stays readable.
- The extra's *name* is pasted raw into the link's ``<a>...</a>``: names are escaped here.
- A ``json`` extra takes a dict: pytest-html calls ``json.dumps`` on it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

import pytest

from bench_plugin.record import ERROR, INVALID, SKIPPED, UNSCORED

try:
    from pytest_html import extras as html_extras
except ImportError:  # pragma: no cover - pytest-html is a dependency, but extras must not need it
    html_extras = None

# (column key, header text); the key names the CSS class and pytest-html's sort key
COLUMNS = (("model", "Model"), ("task", "Task"), ("score", "Score"))


class HtmlReportHooks:
    """pytest-html hooks; the plugin registers one instance on the controller when ``--html`` is on.

    ``optionalhook=True`` keeps registration harmless when pytest-html is not installed.
    """

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        """Insert Model / Task / Score right after the test id column."""
        at = column_after(cells, 'data-column-type="testId"')
        for offset, (key, text) in enumerate(COLUMNS):
            cells.insert(at + offset, f'<th class="sortable" data-column-type="{key}">{text}</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        """Fill the three columns from ``report.bench_record``; blank for reports without one."""
        escape_test_id_cell(report, cells)
        record = getattr(report, "bench_record", None)
        values = row_values(record) if isinstance(record, Mapping) else ("", "", "")
        at = column_after(cells, 'class="col-testId"')
        for offset, ((key, _), value) in enumerate(zip(COLUMNS, values, strict=True)):
            cells.insert(at + offset, f'<td class="col-{key}">{html.escape(value)}</td>')


def row_values(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """(model, task, score) as plain text, escaped later by the caller."""
    model = str(record.get("model_label") or record.get("model") or "")
    return model, str(record.get("task") or ""), score_text(record)


def score_text(record: Mapping[str, Any]) -> str:
    """The composite with 4 decimals, or why a case has no score (``unscored``, ``error``...)."""
    status = str(record.get("status") or "")
    if status in (UNSCORED, ERROR, INVALID, SKIPPED):
        return status  # a leftover partial composite would read as a real score
    composite = record.get("composite")
    if isinstance(composite, (int, float)) and not isinstance(composite, bool):
        return f"{composite:.4f}"
    return ""  # passed or failed without scorers: a verdict but no number


def column_after(cells: list[str], marker: str) -> int:
    """Index just after the cell holding ``marker`` (the test id), wherever other plugins put it."""
    for index, cell in enumerate(cells):
        if marker in str(cell):
            return index + 1
    return min(2, len(cells))


def escape_test_id_cell(report: pytest.TestReport, cells: list[str]) -> None:
    """Escape the test id cell, which pytest-html 4.2 builds from the node id without escaping.

    Node ids come from suite YAML (task and model names). The cell is replaced only when it is
    exactly the raw form pytest-html builds, so a fixed pytest-html is never double-escaped.
    """
    test_id = report.nodeid
    when = getattr(report, "when", "call")
    if when != "call":
        test_id += f"::{when}"
    escaped = html.escape(test_id)
    if escaped == test_id:
        return
    raw_cell = f'<td class="col-testId">{test_id}</td>'
    for index, cell in enumerate(cells):
        if cell == raw_cell:
            cells[index] = f'<td class="col-testId">{escaped}</td>'


def extras_for(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """pytest-html extras for one case: transcript, each judge's raw reply, and the record.

    Set the result as ``report.extras`` in a ``pytest_runtest_makereport`` wrapper. Content is
    left as is (pytest-html links it as plain text); names are escaped (pytest-html does not).
    """
    # a model-to-model conversation's response is its transcript, with speakers and events
    shown = record.get("response") if record.get("conversation") else None
    extras = [text_extra(str(shown) if shown else format_transcript(record), "Transcript")]
    components = (record.get("scores") or {}).get("components") or []
    for component in components:
        name = component["name"]
        judge_output = component.get("judge_output") if isinstance(component, Mapping) else None
        if judge_output:
            extras.append(text_extra(str(judge_output), f"Judge: {name}"))
    # a JSON round trip: a private copy of plain builtins that pytest-html's json.dumps cannot trip on
    extras.append(json_extra(json.loads(json.dumps(record, default=str)), "Record"))
    return extras


def format_transcript(record: Mapping[str, Any]) -> str:
    """The conversation as readable text: ``role (name): content``, one blank line between messages.

    Falls back to the prompt plus the final response when the record has no transcript.
    """
    messages = list(record.get("transcript") or [])
    if not messages:
        messages = list(record.get("messages") or [])
        if record.get("response") is not None:
            messages.append({"role": "assistant", "content": record["response"]})
    if not messages:
        return "(no transcript)"
    return "\n\n".join(format_message(message) for message in messages)


def format_message(message: Any) -> str:
    """One message as ``role (name): content``, then any other field (tool calls...) as indented JSON."""
    if not isinstance(message, Mapping):
        return str(message)
    speaker = str(message.get("role") or "?")
    if message.get("name"):
        speaker += f" ({message['name']})"
    content = message.get("content")
    text = content if isinstance(content, str) else "" if content is None else to_json(content)
    lines = [f"{speaker}: {text}"]
    for key, value in message.items():
        if key not in ("role", "name", "content") and value not in (None, "", [], {}):
            lines.append(f"  [{key}] {to_json(value)}")  # tool calls and the like
    return "\n".join(lines)


def to_json(value: Any) -> str:
    """Indented JSON that keeps non-ASCII text readable and never fails (unknown types as ``str``)."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


_EXTRA_FORMATS = {"text": ("text/plain", "txt"), "json": ("application/json", "json")}


def text_extra(content: str, name: str) -> dict[str, Any]:
    """A plain-text pytest-html extra named ``name``."""
    return _extra("text", content, name)


def json_extra(content: Any, name: str) -> dict[str, Any]:
    """A JSON pytest-html extra named ``name``; ``content`` must be plain builtins."""
    return _extra("json", content, name)


def _extra(format_type: str, content: Any, name: str) -> dict[str, Any]:
    """A pytest-html extra with an escaped name (pytest-html inserts names raw)."""
    safe_name = html.escape(name)
    if html_extras is not None:
        return dict(getattr(html_extras, format_type)(content, name=safe_name))
    mime_type, extension = _EXTRA_FORMATS[format_type]
    return {"name": safe_name, "format_type": format_type, "content": content, "mime_type": mime_type,
            "extension": extension}
