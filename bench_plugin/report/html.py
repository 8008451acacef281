"""pytest-html 4.x integration: a lean per-case view (columns and one folded extra per case), all escaped.

What pytest-html 4.2 does with what we give it (read in its basereport.py and app.js):

- Table cells are HTML strings. They travel in a JSON blob and the page's script puts each one
  in place through ``innerHTML``, so a cell must be escaped by whoever builds it: here.
- An ``html`` extra is pasted into the case's detail row through ``insertAdjacentHTML``: it is
  built here from escaped text only, and its ``<details>`` blocks fold what is long.
- ``text`` and ``json`` extras never enter the page as HTML. With ``--self-contained-html`` the
  content becomes a ``data:...;base64,...`` link, which the page holds **twice** (the link cell and
  the extras list), a third larger than the text; otherwise it is written to ``assets/``.
- The extra's *name* is pasted raw into the link's ``<a>...</a>``: names are escaped here.

Why one inline extra, not a link per transcript, judge reply and record: the run's records are
kept once, in ``results.jsonl``. Linking each piece, and the whole record again, made the bundled
run's self-contained report 34 MB; the inline view shows each piece once (the transcript, each
judge's reply, the tool calls, the score breakdown) and points at ``results.jsonl`` for the rest.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.text_safety import shown
from bench_plugin.report.html_file import forget_drawn_reports, write_pages_whole
from bench_plugin.report.media_view import media_html
from bench_plugin.results.record import ERROR, INVALID, PASSED, SKIPPED, UNSCORED

# (column key, header text); the key names the CSS class and pytest-html's sort key
COLUMNS = (("model", "Model"), ("task", "Task"), ("score", "Score"), ("run", "Run"), ("components", "Components"))
# the summary's words for a status: measured cases passed under no rule a score could fail; skipped ones were not run
CASE_STATUS_WORDS = {"measured": "measured (passed: no pass rule a score can fail)",
                     SKIPPED: "skipped (nothing to run)"}
FOLD_CHARS = 2_000  # a transcript (or a conversation) longer than this starts folded
MAX_SHOWN_CHARS = 20_000  # per text block; the whole text stays in results.jsonl
# added once to the page: the case view's style (pytest-html styles nothing inside an html extra) and
# where the whole record is, rather than a copy of either in every case
STYLE = (
    "<style>.bench-case pre{white-space:pre-wrap;word-break:break-word;margin:2px 0 6px 12px}"
    ".col-result.bench-measured{font-size:0}.col-result.bench-measured::before{content:'Measured';font-size:12px}"
    ".col-result.bench-measured::after{font-size:12px}"
    ".bench-case table{border-collapse:collapse}.bench-case td,.bench-case th{border:1px solid #ddd;"
    "padding:2px 6px;text-align:left;vertical-align:top}.bench-case summary{cursor:pointer}</style>"
    "<p>Each case's whole record is its line in <code>results.jsonl</code> (same folder by default).</p>"
)


# the reason scoring/pass_rule.py gives a case that passed because no scorer has a pass rule: measured, not judged
NO_PASS_RULE = "no scorer has a pass rule"
# and one that passed under ``pass_threshold: 0`` alone (MT-Bench's "a grade, not a test"): no score can fail it
_THRESHOLD_ZERO = re.compile(r"score -?[\d.]+ >= threshold 0")


class HtmlReportHooks:
    """pytest-html hooks; the plugin registers one instance on the controller when ``--html`` is on.

    ``optionalhook=True`` keeps registration harmless when pytest-html is not installed.
    """

    def __init__(self) -> None:
        self.case_statuses: dict[str, str] = {}  # node id -> status, of each case with a record
        self._pages: list[Any] = []  # pytest-html's reports

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """pytest-html's page written whole or not at all (``html_file.py``): a full disk leaves no cut-off page."""
        self._pages = write_pages_whole(session.config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        """Once pytest-html has drawn a case's row, it keeps no reports of that case (``forget_drawn_reports``)."""
        result = yield
        forget_drawn_reports(self._pages, report)
        return result

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        """Insert Model / Task / Score / Run / Components right after the test id column."""
        at = column_after(cells, 'data-column-type="testId"')
        for offset, (key, text) in enumerate(COLUMNS):
            cells.insert(at + offset, f'<th class="sortable" data-column-type="{key}">{text}</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        """Fill our columns from ``report.bench_record``; blank for reports without one.

        A passed setup, or a passed teardown that captured nothing, gets no row: pytest-html drops those rows
        after building them (``report_data.add_test``), and an emptied row ends its work before the building.
        """
        if _gets_no_row(report):
            del cells[:]
            return
        escape_test_id_cell(report, cells)
        record = getattr(report, "bench_record", None)
        if isinstance(record, Mapping):
            self.case_statuses[report.nodeid] = case_status(record)
            if self.case_statuses[report.nodeid] == "measured":
                say_measured(cells)
        values = row_values(record) if isinstance(record, Mapping) else ("",) * len(COLUMNS)
        at = column_after(cells, 'class="col-testId"')
        for offset, ((key, _), value) in enumerate(zip(COLUMNS, values, strict=True)):
            cells.insert(at + offset, table_cell(key, value))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        """Add the case view's stylesheet, where each whole record is, and the cases counted, to the page once."""
        prefix.append(STYLE)
        if self.case_statuses:
            prefix.append(f"<p>{html.escape(cases_line(self.case_statuses.values()))}</p>")

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        """A skipped case's log says where and why, as ``-rs`` does, not the Python tuple pytest-html prints."""
        if report.skipped and data and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            data[0] = html.escape(skip_text(report.longrepr)) + "\n"


def skip_text(longrepr: tuple[Any, ...]) -> str:
    """``path:line: message`` of a skip, without pytest's ``Skipped:`` prefix."""
    path, line, message = longrepr
    return f"{path}:{line}: {str(message).removeprefix('Skipped: ')}"


def case_status(record: Mapping[str, Any]) -> str:
    """The record's status; ``measured`` for a case that passed under no rule a score could fail.

    That is no pass rule at all, or ``pass_threshold: 0`` alone (a grade, not a test: MT-Bench's 1-10).
    """
    status = str(record.get("status") or "")
    return "measured" if status == PASSED and _measured_why(record) is not None else status


def _measured_why(record: Mapping[str, Any]) -> str | None:
    reason = str(record.get("reason") or "")
    if NO_PASS_RULE in reason:
        return "no pass rule"
    return "pass_threshold 0" if _THRESHOLD_ZERO.fullmatch(reason) else None


def say_measured(cells: list[str]) -> None:
    """The Result cell of a measured case shows Measured, not Passed.

    pytest-html reads a row's result from the cell's text (``_hydrate_data``) for its filters and counts: the text
    stays ``Passed`` and the page's style (``STYLE``) shows ``Measured`` in its place.
    """
    for index, cell in enumerate(cells):
        if str(cell).startswith('<td class="col-result">'):
            cells[index] = str(cell).replace('class="col-result"', 'class="col-result bench-measured"', 1)


def cases_line(statuses: Iterable[str]) -> str:
    """``827 cases: 700 passed, 6 skipped...``: pytest-html's own count above leaves skipped cases out."""
    counts = Counter(statuses)
    parts = ", ".join(f"{count} {CASE_STATUS_WORDS.get(status, status)}" for status, count in sorted(counts.items()))
    return f"{sum(counts.values())} cases: {parts} (the count above is pytest-html's: it leaves skipped cases out)."


def _gets_no_row(report: pytest.TestReport) -> bool:
    """A passed setup, or a passed teardown that captured nothing: pytest-html shows no row for it."""
    if not report.passed:
        return False
    return report.when == "setup" or (report.when == "teardown" and not _captured_in_teardown(report))


def _captured_in_teardown(report: pytest.TestReport) -> bool:
    return any("teardown" in header for header, _ in report.sections)


@lru_cache(maxsize=256)
def table_cell(key: str, value: str) -> str:
    """One of our cells, escaped; one string for equal cells, as pytest-html keeps every row's cells to the end.

    A model's name, a run, a score or a task repeats from row to row: made once, a 10,000-case run keeps
    2 MB less. Cases arrive in suite order, so a task's repeats (its models and runs) come close together.
    """
    return f'<td class="col-{key}">{html.escape(value)}</td>'


def row_values(record: Mapping[str, Any]) -> tuple[str, ...]:
    """(model, task, score, run, components) as plain text, escaped later by the caller."""
    model = str(record.get("model_label") or record.get("model") or "")
    run = "" if record.get("run") is None else str(record["run"])
    return model, str(record.get("task") or ""), score_text(record), run, components_text(record)


def components_text(record: Mapping[str, Any]) -> str:
    """Each component's value, ``J 0.75, C 1``; ``—`` for one left unscored."""
    components = (record.get("scores") or {}).get("components") or []
    return ", ".join(f"{component.get('name')} {_number(component.get('value'))}"
                      for component in components if isinstance(component, Mapping))


def _number(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{round(float(value), 4):g}"
    return "—"


def score_text(record: Mapping[str, Any]) -> str:
    """The composite with 4 decimals, or why a case has no score (``unscored``, ``error``...).

    A case that passed under no rule a score could fail says ``measured``, and its Result column ``Measured``
    (the page's filters still use pytest's outcome): a low score beside it should not read as a pass.
    """
    status = str(record.get("status") or "")
    if status in (UNSCORED, ERROR, INVALID, SKIPPED):
        return status  # a leftover partial composite would read as a real score
    composite = record.get("composite")
    if not isinstance(composite, (int, float)) or isinstance(composite, bool):
        return ""  # passed or failed without scorers: a verdict but no number
    why = _measured_why(record) if status == PASSED else None
    return f"{composite:.4f} measured, {why}" if why else f"{composite:.4f}"


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


def extras_for(record: Mapping[str, Any], *, linked: bool = False, root: Path | None = None) -> list[dict[str, Any]]:
    """pytest-html extras for one case.

    Set the result as ``report.extras`` (the bench reporter does, for every case). By default one
    ``html`` extra, :func:`case_view`: every piece of the case once, escaped, long text folded.

    Args:
        record: the case record (``CaseRecord.to_dict()``).
        linked: instead, the transcript and each judge's raw reply as plain-text links and the
            whole record as a JSON link: for a conftest of one's own that writes a report with
            ``assets/`` (pytest-html without ``--self-contained-html``), where each is a file.
            Content is left as is (a browser shows it as plain text); names are escaped.
        root: the folder the record's suite ``path`` is relative to: the case's images are read from there
            (``report/media_view.py``); None shows their references only.
    """
    if not linked:
        return [_extra("html", case_view(record, root), "Case")]
    extras = [text_extra(_transcript_text(record), "Transcript")]
    extras += [text_extra(str(output), f"Judge: {name}") for name, output in _judge_outputs(record)]
    # a JSON round trip: a private copy of plain builtins that pytest-html's json.dumps cannot trip on
    extras.append(json_extra(json.loads(json.dumps(record, default=str)), "Record"))
    return extras


def _transcript_text(record: Mapping[str, Any]) -> str:
    # a model-to-model conversation's response is its transcript, with speakers and events
    conversation = record.get("response") if record.get("conversation") else None
    return str(conversation) if conversation else format_transcript(record)


def _judge_outputs(record: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """Each component's name and its judge's raw reply, for the components a judge replied to."""
    found = []
    for component in (record.get("scores") or {}).get("components") or []:
        name = component["name"]
        judge_output = component.get("judge_output") if isinstance(component, Mapping) else None
        if judge_output:
            found.append((name, judge_output))
    return found


def case_view(record: Mapping[str, Any], root: Path | None = None) -> str:
    """The case as one block of escaped HTML: outcome, score breakdown, transcript, judge replies, tool calls.

    Every text from the record is escaped; only the tags written here reach the page. Each piece is
    shown once: a judge's reply under its component's name, the other answer of a pairwise
    comparison once, the transcript as its messages, folded behind ``<details>`` when it is longer
    than ``FOLD_CHARS``. A text longer than ``MAX_SHOWN_CHARS`` is cut, saying how much is left:
    ``results.jsonl`` keeps the whole record (the page says so once, see ``STYLE``'s note). The images the case
    sent follow the transcript (``media_view.py``: read again from the suite's folder under ``root``).
    """
    parts = [_outcome_html(record), _scores_html(record), _transcript_html(record), media_html(record, root)]
    for component in _components(record):
        parts += _replies_html(component)
    parts.append(_tool_calls_html(record))
    return latin1("<div class=bench-case>" + "".join(parts) + "</div>")


def _components(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in (record.get("scores") or {}).get("components") or [] if isinstance(c, Mapping)]


def _replies_html(component: Mapping[str, Any]) -> list[str]:
    """The other answer of a pairwise comparison, and the judge's reply, each folded."""
    parts = []
    pairwise = component.get("pairwise")
    if isinstance(pairwise, Mapping) and pairwise.get("other_answer") is not None:
        parts.append(_folded(f"Other answer ({component.get('name')}: {pairwise.get('against')})",
                             _pre(pairwise["other_answer"])))
    if component.get("judge_output"):
        parts.append(_folded(f"Judge: {component.get('name')}", _pre(component["judge_output"])))
    return parts


def latin1(markup: str) -> str:
    """``markup`` with its few characters beyond Latin-1 as numeric character references (``—`` as ``&#8212;``).

    pytest-html keeps every case's view to the end of the run, and Python stores a string at two or four bytes
    a character as soon as one character needs it: one dash in a check's detail doubled the whole view. A view
    written mostly in another script keeps its characters: as references it would grow, here and in the page.
    """
    if markup.isascii():
        return markup
    referenced = markup.encode("latin-1", "xmlcharrefreplace")
    return referenced.decode("latin-1") if len(referenced) - len(markup) < len(markup) // 3 else markup


def _outcome_html(record: Mapping[str, Any]) -> str:
    line = f"<b>{_text(record.get('status') or '')}</b>"
    reason = str(record.get("reason") or "")
    if reason:
        line += f": {_text(_cut(reason))}"
    return f"<p>{line}{_error_html(record.get('error'), reason)}</p>"


def _error_html(error: Any, reason: str) -> str:
    """`` (kind: message)`` of the record's error, unless the reason already says it."""
    if not isinstance(error, Mapping) or not error.get("message") or str(error["message"]) in reason:
        return ""
    return f" ({_text(error.get('kind') or 'error')}: {_text(_cut(str(error['message'])))})"


def _scores_html(record: Mapping[str, Any]) -> str:
    """One row per component: name, value, raw and detail (closing tags left out, as HTML allows)."""
    components = _components(record)
    if not components:
        return ""
    rows = ["<table><tr><th>component<th>value<th>raw<th>detail", *map(_score_row, components)]
    return "".join(rows) + "</table>"


def _score_row(component: Mapping[str, Any]) -> str:
    cells = (component.get("name"), _number(component.get("value")), _number(component.get("raw")),
             _cut(_score_detail(component)))
    return "<tr>" + "".join(f"<td>{_text('' if cell is None else cell)}" for cell in cells)


def _score_detail(component: Mapping[str, Any]) -> str:
    """The component's detail, with its verdict and its error when it has them."""
    detail = str(component.get("detail") or "")
    if component.get("passed") is not None:
        detail += f" (passed: {component['passed']})"
    if component.get("error"):
        detail += f" (error: {component['error']})"
    return detail


def _transcript_html(record: Mapping[str, Any]) -> str:
    # a model-to-model conversation's response is its transcript, with speakers and events
    if record.get("conversation") and record.get("response"):
        text = str(record["response"])
        return _folded(f"Conversation ({len(text):,} characters)", _pre(text), fold=len(text) > FOLD_CHARS)
    messages = _messages(record)
    if not messages:
        return ""
    shown = [format_message(message) for message in messages]
    size = sum(map(len, shown))
    summary = f"Transcript ({len(shown)} messages, {size:,} characters)"
    return _folded(summary, "".join(map(_pre, shown)), fold=size > FOLD_CHARS)


def _tool_calls_html(record: Mapping[str, Any]) -> str:
    calls = _tool_calls(record)
    if not calls:
        return ""
    rows = ["<table><tr><th>step<th>tool<th>target<th>ok<th>error", *map(_tool_call_row, calls)]
    summary = f"Tool calls ({len(calls)}; their arguments and results are in the transcript)"
    return _folded(summary, "".join(rows) + "</table>")


def _tool_calls(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tool calls an agent case made."""
    agent = record.get("agent")
    calls = agent.get("tool_calls") or [] if isinstance(agent, Mapping) else []
    return [call for call in calls if isinstance(call, Mapping)]


def _tool_call_row(call: Mapping[str, Any]) -> str:
    cells = (call.get(key) for key in ("step", "name", "target", "ok", "error"))
    return "<tr>" + "".join(f"<td>{_text('' if cell is None else _cut(str(cell)))}" for cell in cells)


def _folded(summary: str, body: str, *, fold: bool = True) -> str:
    """``<details>`` (open unless ``fold``); ``summary`` is plain text (escaped here), ``body`` escaped HTML."""
    return f"<details{'' if fold else ' open'}><summary>{_text(summary)}</summary>{body}</details>"


def _pre(text: Any) -> str:
    return f"<pre>{_text(_cut(str(text)))}</pre>"


def _cut(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + f"\n… {len(text) - MAX_SHOWN_CHARS:,} more characters in results.jsonl"


def _text(value: Any) -> str:
    """Any value as element text: ``&``, ``<`` and ``>`` escaped (quotes need no escaping outside attributes).

    Control characters are shown (``text_safety.shown``), as in every other report: a bidirectional override in an
    answer (``safe\u202etxt.exe``) made the browser show it reordered.
    """
    return html.escape(shown(str(value)), quote=False)


def format_transcript(record: Mapping[str, Any]) -> str:
    """The conversation as readable text: ``role (name): content``, one blank line between messages.

    Falls back to the prompt plus the final response when the record has no transcript.
    """
    messages = _messages(record)
    if not messages:
        return "(no transcript)"
    return "\n\n".join(format_message(message) for message in messages)


def _messages(record: Mapping[str, Any]) -> list[Any]:
    """The record's transcript, else its prompt and its final response."""
    messages = list(record.get("transcript") or [])
    if messages:
        return messages
    messages = list(record.get("messages") or [])
    if record.get("response") is not None:
        messages.append({"role": "assistant", "content": record["response"]})
    return messages


def format_message(message: Any) -> str:
    """One message as ``role (name): content``, then any other field (tool calls...) as indented JSON."""
    if not isinstance(message, Mapping):
        return str(message)
    lines = [f"{_speaker(message)}: {_content_text(message.get('content'))}"]
    # tool calls and the like
    lines += [f"  [{key}] {to_json(value)}" for key, value in message.items() if _is_other_field(key, value)]
    return "\n".join(lines)


def _speaker(message: Mapping[str, Any]) -> str:
    """``role (name)``, or the role alone."""
    speaker = str(message.get("role") or "?")
    if message.get("name"):
        speaker += f" ({message['name']})"
    return speaker


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "" if content is None else to_json(content)


def _is_other_field(key: str, value: Any) -> bool:
    """Whether a message's field is shown after its content: not the role, name or content, and not empty."""
    return key not in ("role", "name", "content") and value not in (None, "", [], {})


def to_json(value: Any) -> str:
    """Indented JSON that keeps non-ASCII text readable and never fails (unknown types as ``str``)."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


_EXTRA_FORMATS = {"text": ("text/plain", "txt"), "json": ("application/json", "json"), "html": ("text/html", "html")}


def text_extra(content: str, name: str) -> dict[str, Any]:
    """A plain-text pytest-html extra named ``name``."""
    return _extra("text", content, name)


def json_extra(content: Any, name: str) -> dict[str, Any]:
    """A JSON pytest-html extra named ``name``; ``content`` must be plain builtins."""
    return _extra("json", content, name)


def _extra(format_type: str, content: Any, name: str) -> dict[str, Any]:
    """The dict ``pytest_html.extras`` builds, with the name escaped (pytest-html inserts names raw)."""
    mime_type, extension = _EXTRA_FORMATS[format_type]
    return {"name": html.escape(name), "format_type": format_type, "content": content, "mime_type": mime_type,
            "extension": extension}
