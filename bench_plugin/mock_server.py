"""A mock OpenAI/Anthropic-compatible LLM server (stdlib only), for trying suites offline and for our tests.

Run it with ``bench-mock-server --port 8000 --latency 0.2 --rules rules.yaml`` (or
``python -m bench_plugin.mock_server``), then point a provider at ``http://127.0.0.1:8000/v1`` (OpenAI
format) or ``http://127.0.0.1:8000`` (Anthropic format). Routes: ``POST /v1/chat/completions``,
``POST /v1/messages``, ``GET /v1/models`` and ``GET /health``; anything else is a 404.

By default a model answers ``echo: <last user message>``. Rules change that. They are checked in order and
the first one whose matchers all hold is applied.

Matchers (all optional; a rule without matchers applies to every request):
    ``model``: the exact model name of the request. ``match``: a regex searched in the last user message.
    ``path``: ``openai`` or ``anthropic``.

Actions:
    ``reply``: the answer text. When the rule has ``match``, it is a Python ``re`` template: ``\\1`` and
    ``\\g<name>`` are replaced with the groups of the match (in YAML, write it in single quotes).
    ``delay``: seconds to wait before answering (added to the server-wide ``--latency``).
    ``status``: the HTTP status; 4xx/5xx answer an error body in the route's wire format. 401 and 403
    error messages quote the credential the client sent, as some real APIs partly do.
    ``error``: the message of that error body. ``retry_after``: the value of the ``Retry-After`` header.
    ``headers``: more response headers. ``body``: raw text sent as-is (status 200 unless ``status``).
    ``drop: true``: close the connection without answering. ``times``: apply to the first N matching
    requests only, then skip the rule.

Example rules file (YAML or JSON), "rate-limited twice, then the capital of France"::

    - {model: flaky, status: 429, retry_after: 1, times: 2}
    - {match: 'capital of (\\w+)', reply: 'The capital of \\1 is Paris.'}
    - {model: slow, delay: 5}
    - {model: broken, body: "<html>Bad gateway</html>"}
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import yaml

if TYPE_CHECKING:
    from typing_extensions import Self

MATCHERS = ("model", "match", "path")
ACTIONS = ("reply", "delay", "status", "error", "retry_after", "headers", "body", "drop", "times")
ROUTES = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass
class _Rule:
    spec: Mapping[str, Any]
    pattern: re.Pattern[str] | None
    remaining: int | None  # None: no ``times`` limit

    def applies(self, route: str, model: Any, prompt: str) -> bool:
        return (
            self.remaining != 0
            and self.spec.get("model", model) == model
            and self.spec.get("path", route) == route
            and (self.pattern is None or self.pattern.search(prompt) is not None)
        )


@dataclass
class _Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


class MockServer:
    """A threaded HTTP server on loopback that answers in the OpenAI and Anthropic wire formats.

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
    ) -> None:
        self.host, self.port, self.latency, self.verbose = host, port, latency, verbose
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
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
        if self._httpd is None:
            raise RuntimeError("MockServer is not started")
        return f"http://{self.host}:{self._httpd.server_port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the requests received: ``method``, ``path``, ``headers``, ``body``, ``model``."""
        with self._lock:
            return list(self._requests)

    def add_rule(self, rule: Mapping[str, Any]) -> None:
        """Append a rule (see the module docstring).

        Raises:
            ValueError: unknown keys, a bad ``path``, regex or ``times``.
        """
        unknown = sorted(set(rule) - set(MATCHERS) - set(ACTIONS))
        if unknown:
            raise ValueError(f"unknown rule keys {unknown}; valid keys: {', '.join(MATCHERS + ACTIONS)}")
        if rule.get("path", "openai") not in ("openai", "anthropic"):
            raise ValueError(f"rule path must be 'openai' or 'anthropic', got {rule['path']!r}")
        times = rule.get("times")
        if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
            raise ValueError(f"rule times must be a positive integer, got {times!r}")
        for key in ("delay", "status"):
            if key in rule and (isinstance(rule[key], bool) or not isinstance(rule[key], (int, float))):
                raise ValueError(f"rule {key} must be a number, got {rule[key]!r}")
        pattern = re.compile(rule["match"]) if "match" in rule else None
        with self._lock:
            self._rules.append(_Rule(dict(rule), pattern, times))

    def clear_rules(self) -> None:
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
        }
        with self._lock:
            self._requests.append(entry)

    def answer(self, route: str, body: dict[str, Any], headers: Mapping[str, str]) -> _Answer:
        """Decide the response to one completion request (``headers`` with lower-case names)."""
        model, prompt = body.get("model"), _last_user_text(body)
        rule, match = self._pick_rule(route, model, prompt)
        delay = self.latency + float(rule.get("delay", 0))
        if rule.get("drop"):
            return _Answer(delay=delay, drop=True)
        extra = {str(k): str(v) for k, v in rule.get("headers", {}).items()}
        if "retry_after" in rule:
            extra["Retry-After"] = str(rule["retry_after"])
        status = int(rule.get("status", 200))
        if "body" in rule:
            payload: Any = rule["body"]
            raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            return _Answer(status, raw, extra, delay)
        if status >= 400:
            message = str(rule.get("error") or _default_error(status, headers))
            return _Answer(status, _encode(_error_body(route, status, message)), extra, delay)
        reply = str(rule.get("reply", f"echo: {prompt}"))
        if match is not None:
            try:
                reply = match.expand(reply)
            except (re.error, IndexError) as exc:
                message = f"rule reply {reply!r} is not a valid template for /{match.re.pattern}/: {exc}"
                return _Answer(500, _encode(_error_body(route, 500, message)), extra, delay)
        completion = _completion_body(route, str(model), reply, _prompt_words(body), next(self._ids))
        return _Answer(status, _encode(completion), extra, delay)

    def models(self) -> dict[str, Any]:
        with self._lock:
            names = dict.fromkeys(
                ["mock-model", *(r.spec["model"] for r in self._rules if "model" in r.spec)]
            )
        return {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "mock"} for n in names]}

    def _pick_rule(
        self, route: str, model: Any, prompt: str
    ) -> tuple[Mapping[str, Any], re.Match[str] | None]:
        """The first rule that applies, counting it against its ``times``; ``{}`` when none does."""
        with self._lock:
            for rule in self._rules:
                if rule.applies(route, model, prompt):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return rule.spec, rule.pattern.search(prompt) if rule.pattern else None
        return {}, None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], mock: MockServer) -> None:
        super().__init__(address, handler)
        self.mock = mock

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients that time out and hang up
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do, so client pooling is exercised
    server: _HTTPServer

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.server.mock.record("GET", path, self._lower_headers(), None)
        if path == "/health":
            self._send(200, _encode({"status": "ok"}))
        elif path == "/v1/models":
            self._send(200, _encode(self.server.mock.models()))
        else:
            self._send(404, _encode(_error_body("openai", 404, f"no route for GET {path}")))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body, headers = self._read_body(), self._lower_headers()
        self.server.mock.record("POST", path, headers, body)
        route = ROUTES.get(path)
        if route is None:
            self._send(404, _encode(_error_body("openai", 404, f"no route for POST {path}")))
        elif not isinstance(body, dict):
            self._send(400, _encode(_error_body(route, 400, "the request body is not a JSON object")))
        else:
            self._reply(self.server.mock.answer(route, body, headers))

    def _reply(self, answer: _Answer) -> None:
        time.sleep(answer.delay)
        if answer.drop:
            self.close_connection = True
            return
        try:
            self._send(answer.status, answer.body, answer.headers)
        except ConnectionError:  # the client gave up waiting
            self.close_connection = True

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


def _text_of(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of ``{"type": "text", "text": ...}`` blocks."""
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _last_user_text(body: Mapping[str, Any]) -> str:
    users = [m for m in _messages(body) if m.get("role") == "user"]
    return _text_of(users[-1].get("content")) if users else ""


def _prompt_words(body: Mapping[str, Any]) -> int:
    """Whitespace-separated words of the system prompt and every message: the mock's token count."""
    texts = [_text_of(body.get("system"))] + [_text_of(m.get("content")) for m in _messages(body)]
    return sum(len(text.split()) for text in texts)


def _completion_body(route: str, model: str, text: str, prompt_words: int, number: int) -> dict[str, Any]:
    words = len(text.split())
    if route == "anthropic":
        return {
            "id": f"msg_mock_{number}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_words, "output_tokens": words},
        }
    return {
        "id": f"chatcmpl-mock-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": words,
            "total_tokens": prompt_words + words,
        },
    }


def _error_body(route: str, status: int, message: str) -> dict[str, Any]:
    error_type = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if route == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _default_error(status: int, headers: Mapping[str, str]) -> str:
    if status in (401, 403):
        credential = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        return f"Incorrect API key provided: {credential or '(none)'}"
    return f"mock error {status}"


def _encode(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def load_rules(path: str | Path) -> list[dict[str, Any]]:
    """Read a list of rules from a YAML or JSON file (JSON is valid YAML)."""
    rules = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(rules, list) or not all(isinstance(rule, dict) for rule in rules):
        raise ValueError(f"{path}: expected a list of rules (mappings)")
    return rules


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench-mock-server", description="A mock OpenAI/Anthropic-compatible LLM server."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument(
        "--port", type=int, default=8000, help="port, 0 for any free one (default: %(default)s)"
    )
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--rules", help="YAML or JSON file holding a list of rules")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C. Returns the process exit status."""
    args = parse_args(argv)
    try:
        rules = load_rules(args.rules) if args.rules else []
        server = MockServer(args.host, args.port, args.latency, rules, verbose=not args.quiet).start()
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"bench-mock-server: {exc}", file=sys.stderr)
        return 2
    print(
        f"mock LLM server on {server.url}\n  OpenAI base_url:    {server.openai_base_url}\n"
        f"  Anthropic base_url: {server.url}",
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
