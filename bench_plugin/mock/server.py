"""A mock OpenAI/Anthropic-compatible LLM server (stdlib HTTP server), for trying suites offline and for our tests.

Run it with ``bench-mock-server --port 8000 --latency 0.2 --rules rules.yaml`` (or
``python -m bench_plugin.mock``), then point a provider at ``http://127.0.0.1:8000/v1`` (OpenAI
format) or ``http://127.0.0.1:8000`` (Anthropic format). Routes: ``POST /v1/chat/completions``,
``POST /v1/messages``, ``POST /v1/embeddings`` (deterministic vectors: ``mock/embeddings.py``),
``POST /app/ask`` (an application in a shape of its own: ``mock/application.py``),
``POST /world/v1/chat/completions`` (a stand-in world interface: ``mock/world.py``),
``GET /v1/models`` and ``GET /health``; anything else is a 404.

By default a model answers ``echo: <last user message>``. Rules change that: ``bench_plugin.mock.rules``
describes their matchers and actions and gives an example rules file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import ssl
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import yaml

from bench_plugin.mock.rules import (
    Answer,
    Rule,
    build_answer,
    compile_rule,
    encode,
    error_body,
    load_rules,
    pick_rule,
)
from bench_plugin.mock.streaming import EventStream, StreamPace

if TYPE_CHECKING:
    from typing_extensions import Self

# load_rules is part of this module's interface (the CLI reads rules files with it)
__all__ = ["MockServer", "load_rules", "main", "parse_args"]

ROUTES = {
    "/v1/chat/completions": "openai", "/v1/messages": "anthropic", "/v1/embeddings": "embeddings",
    "/app/ask": "application", "/world/v1/chat/completions": "world",
}


class MockServer:
    """A threaded HTTP server on loopback that answers in the OpenAI and Anthropic wire formats.

    Given a server-side ``ssl_context`` (a certificate and its key loaded), it answers over TLS and its
    URLs are ``https://``: how the tests check the client's TLS path.

    Example:
        >>> with MockServer(rules=[{"model": "m", "reply": "hi"}]) as server:  # doctest: +SKIP
        ...     base_url = server.openai_base_url
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        rules: Sequence[Mapping[str, Any]] | None = None,
        *,
        verbose: bool = False,
        seed: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        ttft: float = 0.0,
        tokens_per_s: float | None = None,
    ) -> None:
        self.host, self.port, self.latency, self.verbose = host, port, latency, verbose
        self.pace = StreamPace(ttft, tokens_per_s)  # how streamed answers are paced, unless a rule says
        self.ssl_context = ssl_context  # a server-side context: answer over TLS (https URLs)
        self._lock = threading.Lock()
        self._rng = random.Random(seed)  # draws of ``probability`` rules; a seed repeats them
        self._rules: list[Rule] = []
        self._requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        for rule in rules or ():
            self.add_rule(rule)

    def start(self) -> Self:
        """Bind and serve in a daemon thread."""
        if self._httpd is None:
            self._httpd = _HTTPServer((self.host, self.port), _Handler, self)
            if self.ssl_context is not None:
                self._httpd.socket = self.ssl_context.wrap_socket(self._httpd.socket, server_side=True)
            # a short poll interval keeps stop() quick
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                args=(0.05,),
                name=f"mock-llm-{self._httpd.server_port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; a server that is not running is left alone."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The server's root URL, which is also the Anthropic ``base_url``.

        Raises:
            RuntimeError: when the server is not started (its port is not known yet).
        """
        if self._httpd is None:
            raise RuntimeError("MockServer is not started")
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self._httpd.server_port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI ``base_url``: the root URL with the ``/v1`` that OpenAI clients expect in it."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the requests received: ``method``, ``path``, ``headers``, ``body``, ``model``, ``at``."""
        with self._lock:
            return list(self._requests)

    def add_rule(self, rule: Mapping[str, Any]) -> None:
        """Append a rule (see ``bench_plugin.mock.rules``).

        Raises:
            ValueError: unknown keys, a bad ``path``, regex or ``times``.
        """
        compiled = compile_rule(rule)
        with self._lock:
            self._rules.append(compiled)

    def clear_rules(self) -> None:
        """Forget the rules (every model echoes again); recorded requests are kept."""
        with self._lock:
            self._rules.clear()

    def reset(self) -> None:
        """Forget rules and recorded requests."""
        with self._lock:
            self._rules.clear()
            self._requests.clear()

    def record(self, method: str, path: str, headers: Mapping[str, str], body: Any) -> None:
        """Keep one received request for tests to inspect."""
        entry = {
            "method": method,
            "path": path,
            "headers": dict(headers),
            "body": body,
            "model": body.get("model") if isinstance(body, dict) else None,
            "at": time.monotonic(),  # when it was read (the system's monotonic clock: comparable across processes)
        }
        with self._lock:
            self._requests.append(entry)

    def answer(self, route: str, body: dict[str, Any], headers: Mapping[str, str]) -> Answer:
        """Decide the response to one completion or embeddings request (``headers`` with lower-case names)."""
        with self._lock:
            rule, match = pick_rule(self._rules, route, body, self._rng)
        return build_answer(rule, match, route, body, headers, latency=self.latency, ids=self._ids, pace=self.pace)

    def models(self) -> dict[str, Any]:
        """The ``GET /v1/models`` body: ``mock-model`` and every model a rule names."""
        with self._lock:
            names = dict.fromkeys(
                ["mock-model", *(r.spec["model"] for r in self._rules if "model" in r.spec)]
            )
        return {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "mock"} for n in names]}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the stdlib default of 5 resets connections when many cases start at once

    def __init__(self, address: tuple[str, int], handler: type[_Handler], mock: MockServer) -> None:
        super().__init__(address, handler)
        self.mock = mock

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients that time out and hang up
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do, so client pooling is exercised
    # headers and body leave in two writes: with Nagle's algorithm on, the body waits for the client's
    # delayed ACK, 40 ms on every answer
    disable_nagle_algorithm = True
    server: _HTTPServer
    _arrived = 0.0  # when the request being handled arrived (its request line read), time.monotonic()

    def parse_request(self) -> bool:
        """Note when the request arrived: its answer's delay counts from then, not from after parsing it."""
        self._arrived = time.monotonic()
        return super().parse_request()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.server.mock.record("GET", path, self._lower_headers(), None)
        if path == "/health":
            self._send(200, encode({"status": "ok"}))
        elif path == "/v1/models":
            self._send(200, encode(self.server.mock.models()))
        else:
            self._send(404, encode(error_body("openai", 404, f"no route for GET {path}")))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body, headers = self._read_body(), self._lower_headers()
        self.server.mock.record("POST", path, headers, body)
        route = ROUTES.get(path)
        if route == "application" and isinstance(body, str):
            body = {"query": body}  # the application takes its query as a plain-text body too
        if route is None:
            self._send(404, encode(error_body("openai", 404, f"no route for POST {path}")))
        elif not isinstance(body, dict):
            self._send(400, encode(error_body(route, 400, "the request body is not a JSON object")))
        else:
            self._reply(self.server.mock.answer(route, body, headers))

    def _reply(self, answer: Answer) -> None:
        # ``--latency`` is the time from a request's arrival to its answer: the server's own work (parsing,
        # recording, building the answer, waiting for its turn among 64 busy threads) is part of it, so an
        # answer is not later than the latency the benchmarks' ideal is computed from
        time.sleep(max(0.0, self._arrived + answer.delay - time.monotonic()))
        if answer.drop:
            self.close_connection = True
            return
        try:
            if answer.stream is not None:
                self._send_events(answer.stream, answer.headers)
            else:
                self._send(answer.status, answer.body, answer.headers)
        except ConnectionError:  # the client gave up waiting
            self.close_connection = True

    def _send_events(self, stream: EventStream, headers: Mapping[str, str]) -> None:
        """Send the events chunk by chunk, each at its time; a ``drop`` hangs up before the body's end."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        started = time.monotonic()
        for event in stream.events:
            time.sleep(max(0.0, started + event.at - time.monotonic()))
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event.data), event.data))
            self.wfile.flush()
        if stream.drop:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    def _lower_headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _read_body(self) -> Any:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.mock.verbose:
            super().log_message(format, *args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The ``bench-mock-server`` command line (``sys.argv`` when ``argv`` is None)."""
    parser = argparse.ArgumentParser(
        prog="bench-mock-server", description="A mock OpenAI/Anthropic-compatible LLM server."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument(
        "--port", type=int, default=8000, help="port, 0 for any free one (default: %(default)s)"
    )
    parser.add_argument("--latency", type=float, default=0.0,
                        help="seconds from a request's arrival to its answer")
    parser.add_argument("--ttft", type=float, default=0.0,
                        help="seconds from a streamed answer's headers to its first token")
    parser.add_argument("--tokens-per-s", type=float, default=None,
                        help="tokens a second of a streamed answer after its first (default: no wait)")
    parser.add_argument("--rules", help="YAML or JSON file holding a list of rules")
    parser.add_argument("--seed", type=int, default=None, help="seed of the draws of probability rules")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C. Returns the process exit status."""
    args = parse_args(argv)
    try:
        rules = load_rules(args.rules) if args.rules else []
        server = MockServer(args.host, args.port, args.latency, rules, verbose=not args.quiet, seed=args.seed,
                            ttft=args.ttft, tokens_per_s=args.tokens_per_s).start()
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"bench-mock-server: {exc}", file=sys.stderr)
        return 2
    print(
        f"mock LLM server on {server.url}\n  OpenAI base_url:    {server.openai_base_url}\n"
        f"  Anthropic base_url: {server.url}\n  application:        POST {server.url}/app/ask\n"
        f"  world interface:    base_url {server.url}/world (POST /v1/chat/completions)",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
