"""Files a suite names are read as UTF-8; one that is not is reported by line and column, never by byte offset."""

from __future__ import annotations

from pathlib import Path


class NotUtf8(ValueError):
    """A file that is not UTF-8, with where its first bad byte is (``line`` and ``column`` 0-based, as SuiteError's)."""

    def __init__(self, name: str, byte: int, line: int, column: int) -> None:
        super().__init__(f"{name} is not UTF-8: byte 0x{byte:02x} at line {line + 1}, column {column + 1} "
                         "cannot be read")
        self.line = line
        self.column = column
        self.byte = byte


HINT = "save the file as UTF-8 (files are read as UTF-8 whatever the system's locale)"


def decode_utf8(data: bytes, name: str) -> str:
    """``data`` as text.

    Raises:
        NotUtf8: naming ``name`` and the line and column of the first byte that is not UTF-8.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line_start = data.rfind(b"\n", 0, start) + 1
        raise NotUtf8(name, data[start], data.count(b"\n", 0, start), start - line_start) from None


def read_utf8(path: Path, name: str | None = None) -> str:
    """The text of ``path`` (see ``decode_utf8``); OSError as ``Path.read_bytes`` raises it."""
    return decode_utf8(path.read_bytes(), name or path.name)
