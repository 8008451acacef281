"""PyYAML's syntax errors in the suite author's words: file:line:column, key path, the line with a caret, a hint.

PyYAML says what its scanner expected (``mapping values are not allowed here``, ``expected <block
end>, but found '<scalar>'``); the person editing the suite wants to know what in their text caused it.
The common causes are few: an unquoted ``: `` inside a value, a tab, an indentation that does not line
up, a quote or bracket left open, a value starting with a character YAML reserves. Each is recognised
from PyYAML's problem and context, and pointed at where the fix goes (for an unclosed quote: where it
opened, not the end of the file where PyYAML noticed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import yaml

from bench_plugin.core.errors import SuiteError

_QUOTE_HINT = "put the whole value in quotes"
_INDENT_HINT = ("keys of one mapping start in the same column, and the '- ' items of one list line up; "
                "indent with spaces only")
_RESERVED = {
    "@": "YAML reserves it",
    "`": "YAML reserves it",
    "%": "YAML reads it as a directive",
    "*": "YAML reads *name as an alias",
    "&": "YAML reads &name as an anchor",
}
_KEY_VALUE = re.compile(r"^(?P<lead>\s*(?:-\s+)?)(?P<key>[^\s:#'\"{}\[\],][^:#]*?):\s+(?P<value>\S.*?)\s*$")


@dataclass(frozen=True)
class _Reading:
    """What went wrong, where to point (0-based line and column) and how to fix it."""

    message: str
    line: int
    column: int
    hint: str | None = None
    child: str | None = None  # the key written on the line, below the key path being read


def yaml_syntax_error(exc: yaml.YAMLError, source: str, shown: str, key: str | None) -> SuiteError:
    """The SuiteError for a YAML syntax error, pointing at the spot and quoting the line with a caret.

    Args:
        exc: what PyYAML raised while reading the file.
        source: the file's text.
        shown: the file as messages name it.
        key: the key path being read when the error was found, when one was.
    """
    if isinstance(exc, yaml.reader.ReaderError):
        reading = _bad_character(exc, source)
    elif isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        reading = _read(exc, source.splitlines())
    else:
        return SuiteError(f"invalid YAML: {exc}", path=shown, key=key)
    return SuiteError(
        reading.message,
        path=shown,
        line=reading.line,
        column=reading.column,
        key=_with_child(key, reading.child),
        hint=reading.hint,
        excerpt=caret_excerpt(source, reading.line, reading.column),
    )


def _bad_character(exc: yaml.reader.ReaderError, source: str) -> _Reading:
    line, column = _position(source, exc.position)
    what = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
    return _Reading(f"invalid YAML: the file holds the character {what}, which YAML does not allow",
                    line, column, "remove it (a control character pasted with the text?)")


def _with_child(key: str | None, child: str | None) -> str | None:
    """The key path down to the key written on the line, unless the path already ends with it."""
    if not child or (key or "").endswith(child):
        return key
    return f"{key}.{child}" if key else child


def caret_excerpt(source: str, line: int, column: int) -> str:
    """The line (numbered as in ``LoadedSuite.excerpt``) and a caret under ``column``; tabs shown as ``→``."""
    lines = source.splitlines()
    text = lines[line] if line < len(lines) else ""
    width = len(str(line + 1))
    shown = text.replace("\t", "→")  # one character for one, so the caret stays under its column
    return f"  > {line + 1:>{width}} | {shown}\n    {' ' * width} | {' ' * min(column, len(text))}^"


def _position(source: str, index: int) -> tuple[int, int]:
    before = source[:index]
    return before.count("\n"), index - (before.rfind("\n") + 1)


@dataclass(frozen=True)
class _Report:
    """PyYAML's report: its problem and context, where it points, and the line there."""

    problem: str
    context: str
    opened: yaml.Mark | None  # where the construct being read started (a quote, a bracket, a block)
    at: _Reading  # where PyYAML noticed the problem
    text: str  # the line at ``at``
    lines: list[str]


def _read(exc: yaml.MarkedYAMLError, lines: list[str]) -> _Reading:
    """Recognise the common causes; anything else keeps PyYAML's words, located the same way."""
    mark = exc.problem_mark
    assert mark is not None
    report = _Report(exc.problem or "", exc.context or "", exc.context_mark, _Reading("", mark.line, mark.column),
                     _line(lines, mark.line), lines)
    for recognise in _CAUSES:
        reading = recognise(report)
        if reading is not None:
            return reading
    return _unrecognised(report)


def _line(lines: list[str], index: int) -> str:
    return lines[index] if index < len(lines) else ""


def _tab(report: _Report) -> _Reading | None:
    text = report.text
    if "\t" not in text[: len(text) - len(text.lstrip())] and "'\\t'" not in report.problem:
        return None
    return _at(report.at, "a tab character: YAML indents with spaces, never tabs",
               "replace the tab (shown as →) with spaces; a tab may stay only inside quotes")


def _colon_in_value(report: _Report) -> _Reading | None:
    if report.problem != "mapping values are not allowed here":
        return None
    text = report.text
    own_key = re.match(r"\s*([A-Za-z_][\w-]*):\s", text)  # the line's key (not a list item's first key)
    return _Reading("a value holds ': ' (a colon and a space), which YAML reads as the start of another key",
                    report.at.line, report.at.column, _quote_suggestion(text) or _QUOTE_HINT,
                    child=own_key.group(1) if own_key else None)


def _unknown_escape(report: _Report) -> _Reading | None:
    if "escape character" not in report.problem:
        return None
    return _at(report.at, f"{report.problem.replace('found unknown', 'an unknown')} inside double quotes",
               "write \\\\ for a backslash, or use single quotes, where a backslash is an ordinary character")


def _open_quote(report: _Report) -> _Reading | None:
    opened = report.opened
    if "while scanning a quoted scalar" not in report.context or opened is None:
        return None
    return _Reading("this quote is never closed", opened.line, opened.column,
                    "close it; a quote inside the text is written \\\" in double quotes, '' in single quotes")


def _in_brackets(report: _Report) -> _Reading | None:
    """A ``{`` or ``[`` left open, or a value inside one that holds a character flow style reserves."""
    if report.opened is None:
        return None
    for bracket, closing, kind in (("{", "}", "flow mapping"), ("[", "]", "flow sequence")):
        if f"while parsing a {kind}" in report.context:
            if report.opened.line != report.at.line or "end of stream" in report.problem:
                return _Reading(f"this '{bracket}' is never closed with '{closing}'",
                                report.opened.line, report.opened.column,
                                f"close it on the same entry, or write the entries one per line without {bracket}")
            return _unquoted_in_flow(report, bracket, closing)
    return None


def _unquoted_in_flow(report: _Report, bracket: str, closing: str) -> _Reading:
    got = re.search(r"but got '(.+?)'", report.problem)
    char = got.group(1) if got and len(got.group(1)) == 1 else "':' or ','"
    what = f"'{char}'" if len(char) == 1 else char
    message = f"inside {bracket} {closing} a value holding {what} must be quoted"
    entry = _flow_entry(report.text, report.at.column)
    if entry is None:
        return _Reading(message, report.at.line, report.at.column, "quote the value, e.g. {prompt: \"a: b?\"}")
    key, value = entry
    return _Reading(message, report.at.line, report.at.column, f"{_QUOTE_HINT}: {key}: {value}",
                    child=key if bracket == "{" else None)


def _reserved(report: _Report) -> _Reading | None:
    found = re.search(r"found character '(.)' that cannot start any token", report.problem)
    reserved = (found.group(1), report.at) if found is not None else _reserved_start(report)
    if reserved is None:
        return None
    char, spot = reserved
    why = _RESERVED.get(char, "YAML reserves it")
    return _at(spot, f"an unquoted value cannot start with '{char}': {why}",
               _quote_suggestion(_line(report.lines, spot.line)) or _QUOTE_HINT)


def _block_end(report: _Report) -> _Reading | None:
    if not report.problem.startswith("expected <block end>"):
        return None
    return _indentation(report.at, report.problem, report.opened, report.text)


def _missing_colon(report: _Report) -> _Reading | None:
    if "could not find expected ':'" not in report.problem:
        return None
    spot = report.opened if report.opened is not None else report.at
    return _Reading("a line without 'key: value' inside a mapping", spot.line, spot.column,
                    "write key: value; for text over several lines use key: | and indent the text")


def _undefined_alias(report: _Report) -> _Reading | None:
    if not report.problem.startswith("found undefined alias"):
        return None
    return _at(report.at,
               f"{report.problem.replace('found undefined alias', 'the alias')} names no anchor (&name) above it",
               "define the anchor before the alias, or quote a value that starts with '*'")


def _second_document(report: _Report) -> _Reading | None:
    if "expected a single document" not in report.problem + report.context:
        return None
    return _at(report.at, "a second YAML document ('---'): a suite file holds one", "remove the '---' line")


def _tag(report: _Report) -> _Reading | None:
    tagged = ("could not determine a constructor for the tag", "undefined tag handle")
    if not any(words in report.problem for words in tagged):
        return None
    return _at(report.at, "YAML tags (!name) are not used in suites", "quote a value that starts with '!'")


def _unrecognised(report: _Report) -> _Reading:
    opened = report.opened
    where = f" ({report.context}, line {opened.line + 1})" if report.context and opened is not None else ""
    return _at(report.at, f"invalid YAML: {report.problem}{where}", None)


# In this order: the first that recognises the report says what went wrong.
_CAUSES = (_tab, _colon_in_value, _unknown_escape, _open_quote, _in_brackets, _reserved, _block_end,
           _missing_colon, _undefined_alias, _second_document, _tag)


def _at(spot: _Reading, message: str, hint: str | None) -> _Reading:
    return _Reading(message, spot.line, spot.column, hint)


def _reserved_start(report: _Report) -> tuple[str, _Reading] | None:
    """The character (``*`` or ``&``) an unquoted value starts with, and where, when PyYAML read it as an alias."""
    opened = report.opened
    if opened is None or not ("while scanning an alias" in report.context
                              or "while scanning an anchor" in report.context):
        return None
    text = _line(report.lines, opened.line)
    char = text[opened.column] if opened.column < len(text) else "*"
    return char, _Reading("", opened.line, opened.column)


def _indentation(at: _Reading, problem: str, opened: yaml.Mark | None, text: str) -> _Reading:
    """``expected <block end>, but found ...``: text after a closing quote, or a line that does not line up."""
    before = text[: at.column].rstrip()
    dash = re.match(r"\s*(-[^\s-]\S*)", text)
    if dash is not None:
        return _at(at, f"a '-' without a space after it: YAML reads {dash.group(1)!r} as text, not as a list item",
                   "write '- ' (a dash and a space) to start a list item")
    if "'<scalar>'" in problem and before.endswith(("'", '"')):
        return _at(at, "text after the closing quote: the quote ends the value",
                   "inside single quotes write '' for a quote (e.g. 'it''s'), or quote the value with double quotes")
    block = f" of the block that starts at line {opened.line + 1}" if opened is not None else ""
    if "'-'" in problem:
        return _at(at, f"a list item ('- ') where a key{block} was expected", _INDENT_HINT)
    return _at(at, f"this line's indentation does not line up with the keys{block}", _INDENT_HINT)


def _quote_suggestion(text: str) -> str | None:
    """``quote the whole value: prompt: "Hello: world"`` for a ``key: value`` line, else None."""
    found = _KEY_VALUE.match(text)
    if found is None:
        return None
    value = json.dumps(found.group("value"), ensure_ascii=False)
    return f"{_QUOTE_HINT}: {found.group('key').strip()}: {value}"


def _flow_entry(text: str, column: int) -> tuple[str, str] | None:
    """``("prompt", '"Capital of France?"')``: the key and the quoted value of the flow entry at ``column``."""
    start = max(text.rfind(",", 0, column), text.rfind("{", 0, column), text.rfind("[", 0, column)) + 1
    ends = [index for index in (text.find(",", column), text.find("}", column), text.find("]", column)) if index >= 0]
    entry = text[start: min(ends) if ends else len(text)].strip()
    key, sep, value = entry.partition(": ")
    if not sep or not value.strip() or value.strip()[0] in "'\"":
        return None
    return key.strip(), json.dumps(value.strip(), ensure_ascii=False)
