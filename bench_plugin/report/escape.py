r"""One escaping helper per output format, so text from suites, models and servers renders as text, never as markup.

Writers never paste untrusted text raw (a label may be ``<img src=x onerror=...>``, an answer
``[x](javascript:...)``); they pick the helper for where it goes: ``markdown_text`` (headings,
paragraphs, list items), ``markdown_cell`` (table cells), ``markdown_code`` (inline code outside
tables), ``markdown_fence`` (text shown verbatim), ``log_line`` (a log record or a terminal line; it lives
in ``bench_plugin.core.text_safety`` so that ``http.py`` and the providers use it too), ``csv_cell`` (a cell of a CSV
file a spreadsheet may open).
The Markdown helpers escape rather than delete: ``&``, ``<`` and ``>`` become entities; ``\``, `````,
``[``, ``]``, ``*``, ``~``, emphasis ``_``, a leading ``#``/``+``/``-``/``1.`` and a trailing `` #`` get
a backslash. Rendered, every character shows; raw, the file stays readable.
"""

from __future__ import annotations

import html
import re
from typing import Any

from bench_plugin.core.text_safety import log_line as log_line  # one copy, on the ground floor, for http and providers
from bench_plugin.core.text_safety import shown

# a `_` between two letters or digits can neither open nor close emphasis (CommonMark's flanking rules)
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_INLINE_MARKUP = re.compile(r"[\\`\[\]*~]")
# what opens a block at the start of a line: an ATX heading, a list item or a thematic break
_BLOCK_START = re.compile(r"^(\s*)(?:(#{1,6}|[+-])(?=[\s+-]|$)|(\d{1,9})([.)])(?=\s|$))")
# the closing sequence of an ATX heading, which a renderer would drop
_TRAILING_HASHES = re.compile(r"(\s)#(#*\s*)$")
_BACKTICKS = re.compile(r"`+")
# what makes a spreadsheet read a cell as a formula (OWASP, "CSV Injection"): = + - @, and a tab or CR before one
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def one_line(text: Any) -> str:
    """``text`` as a string on one line: each line break (any Unicode one) becomes a space."""
    return " ".join(str(text).splitlines())


def markdown_text(text: Any) -> str:
    r"""Any text as inline Markdown that renders as exactly that text, on one line.

    For headings, paragraphs, list items and emphasis. Not for table cells (use ``markdown_cell``: a
    ``|`` would end the cell) nor inside a code span or fence (where escapes show as backslashes).

    Example:
        >>> markdown_text("<b>hi</b> ![](http://x/y.png) 2*3")
        '&lt;b&gt;hi&lt;/b&gt; !\\[\\](http://x/y.png) 2\\*3'
    """
    flat = html.escape(shown(one_line(text)), quote=False)  # an ANSI escape would act on `cat report.md`
    flat = _INLINE_MARKUP.sub(lambda found: "\\" + found.group(), flat)
    flat = _EMPHASIS_UNDERSCORE.sub(r"\\_", flat)
    flat = _TRAILING_HASHES.sub(r"\1\\#\2", flat)
    return _BLOCK_START.sub(_escape_block_start, flat, count=1)


def _escape_block_start(found: re.Match[str]) -> str:
    indent, marker, digits, delimiter = found.groups()
    if marker is not None:
        return f"{indent}\\{marker}"
    return f"{indent}{digits}\\{delimiter}"


def markdown_cell(text: Any) -> str:
    r"""Any text as the content of a Markdown (GFM) table cell: ``markdown_text`` with ``|`` escaped.

    The text's own backslashes are escaped first, so ``a\|b`` cannot un-escape its own pipe.

    Example:
        >>> markdown_cell("a|b <i>")
        'a\\|b &lt;i&gt;'
    """
    return markdown_text(text).replace("|", "\\|")


def markdown_code(text: Any) -> str:
    """Any text as an inline code span, fenced by more backticks than it contains.

    Nothing inside a code span is markup (no HTML, link or emphasis), so the text is kept as it is,
    on one line. For headings and list items only: inside a table a ``|`` still ends the cell.

    Example:
        >>> markdown_code("a`b")
        '``a`b``'
    """
    flat = shown(one_line(text))
    fence = "`" * (_longest_backtick_run(flat) + 1)
    edge = flat.startswith("`") or flat.endswith("`") or (flat[:1] == flat[-1:] == " " and flat.strip() != "")
    pad = " " if edge else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def markdown_fence(text: Any, info: str = "text") -> list[str]:
    """Any text, line breaks kept, as the lines of a fenced code block.

    The fence is longer than any run of backticks in the text, so no line of the text can close it.

    Args:
        text: shown verbatim by every CommonMark renderer.
        info: the info string (the language); ours, never untrusted.
    """
    body = shown(text)
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    return [f"{fence}{info}", body, fence]


def csv_cell(value: Any) -> str:
    """Any value as a CSV cell that a spreadsheet shows as text, never runs as a formula.

    Text that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``
    (OWASP's advice: ``=HYPERLINK(...)`` or ``-2+3+cmd|...`` in a label would otherwise be evaluated by
    Excel, LibreOffice or Google Sheets). Numbers stay numbers: an ``int`` or ``float``, and text that is
    exactly a decimal number (``-0.5``, ``1e-3``), pass unchanged; ``None`` is an empty cell. Apply it to
    untrusted text (labels, names, tags), not to figures the report formatted itself.

    Example:
        >>> [csv_cell(v) for v in ("=1+1", "-0.25", -3, "@SUM(A1)", "gpt-4o", None)]
        ["'=1+1", '-0.25', '-3', "'@SUM(A1)", 'gpt-4o', '']
    """
    if value is None:
        return ""
    text = str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return text
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
