r"""Untrusted text made safe for a log or a terminal line: control characters are shown, never obeyed.

On the ground floor because every floor writes such lines: ``http.py`` and the providers log server
error bodies and model ids, the reporter writes the terminal's summary, and ``report/escape.py`` lists
this helper beside its Markdown ones. A server's ``\n`` must not forge a second log line, and its
``\x1b[2J`` must not clear the terminal.
"""

from __future__ import annotations

import re
import sys
from typing import IO, Any

# C0 and C1 controls, DEL, line/paragraph separators, bidirectional marks, overrides and isolates
_LOG_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LOG_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# the same but line breaks (CR, LF and the separators) and tabs, which a file shows as they are (``shown``)
_SHOWN_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def log_line(text: Any) -> str:
    r"""Any text as one line of a log or of the terminal: control characters are shown, not obeyed.

    A line break cannot forge a second log line, an ANSI escape cannot recolour or clear the terminal,
    and a bidirectional override cannot reorder what is shown. Printable text, Unicode included, stays.

    Example:
        >>> log_line("ok\nFAKE LINE \x1b[2J")
        'ok\\nFAKE LINE \\x1b[2J'
    """
    return _LOG_CONTROL.sub(_escape_control, str(text))


def shown(text: Any) -> str:
    r"""Text for a file read in a terminal (``cat report.md``): line breaks and tabs kept, other controls shown.

    Example:
        >>> shown("a\tb\nc \x1b[2J")
        'a\tb\nc \\x1b[2J'
    """
    return _SHOWN_CONTROL.sub(_escape_control, str(text))


def echo(text: Any, *, file: IO[str] | None = None, end: str = "\n") -> None:
    """Print ``text`` for a terminal (``shown``): the ``bench`` command's one way to print lines that carry data."""
    print(shown(text), file=file if file is not None else sys.stdout, end=end)


def _escape_control(found: re.Match[str]) -> str:
    char = found.group()
    if char in _LOG_NAMED:
        return _LOG_NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
