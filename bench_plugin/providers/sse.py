"""Server-sent events read from a byte stream: the ``text/event-stream`` framing, and nothing more.

Our own few lines rather than a library: the body arrives through the pool's transport in pieces
(``connection.py``), and a stream must be bounded as it arrives and timed event by event, which a
parser over ``httpx``'s line iterator (httpx-sse) would leave to its caller anyway. The framing is the
WHATWG one: lines end in LF or CRLF; ``event:`` names the event, ``data:`` lines are joined with LF,
``:`` starts a comment (a keep-alive), and a blank line dispatches the event. ``id:`` and ``retry:``
are read and ignored (a call is never resumed). A lone CR as a line end is not supported: no LLM
server sends one, and splitting on it would cut a CRLF that arrives across two pieces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

MAX_LINE_BYTES = 1024 * 1024
"""The longest line kept: a line without an end longer than this is not an event stream."""


@dataclass(frozen=True)
class ServerEvent:
    """One dispatched event: its name (``message`` when the stream gave none) and its data."""

    event: str
    data: str


class StreamFormatError(ValueError):
    """Bytes that are not an event stream: an endless line, or text that is not UTF-8."""


class EventParser:
    """Turns pieces of a body into events; feed it pieces as they come, then ``close`` it."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._max_line = max_line_bytes
        self._pending = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, piece: bytes) -> list[ServerEvent]:
        """The events that ``piece`` completes, in order.

        Raises:
            StreamFormatError: a line longer than ``max_line_bytes``, or one that is not UTF-8.
        """
        lines = (self._pending + piece).split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > self._max_line:
            raise StreamFormatError(f"a line longer than {self._max_line:,} bytes without an end")
        events: list[ServerEvent] = []
        for line in lines:
            event = self._line(line.removesuffix(b"\r"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerEvent]:
        """The event the body's end completes (a last event without its blank line), if any."""
        pending, self._pending = self._pending, b""
        events = self.feed(pending + b"\n") if pending else []
        last = self._dispatch()
        return events + ([last] if last is not None else [])

    def _line(self, raw: bytes) -> ServerEvent | None:
        if not raw:
            return self._dispatch()
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StreamFormatError(f"a line that is not UTF-8: {exc}") from exc
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None  # a comment (empty name), id, retry, or a field nobody defined: ignored, as the standard says

    def _dispatch(self) -> ServerEvent | None:
        event, data, self._event, self._data = self._event, self._data, "", []
        if not data:
            return None  # an event without data is not dispatched
        return ServerEvent(event or "message", "\n".join(data))


async def read_events(pieces: AsyncIterator[bytes], parser: EventParser | None = None) -> AsyncIterator[ServerEvent]:
    """Each event of a body given piece by piece, the last one included when the body ends without a blank line."""
    parser = parser or EventParser()
    async for piece in pieces:
        for event in parser.feed(piece):
            yield event
    for event in parser.close():
        yield event
