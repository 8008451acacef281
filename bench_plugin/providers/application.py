"""Any HTTP application as a model (``type: application``): a request rendered from templates, an answer read by path.

The suite says how to ask (``suite/application.py`` checked it at collection) and this provider renders it
per call, in the sandbox, from the call's messages, its last user message (``prompt``), the case's variables,
the model's params and the key variables the provider lists (``env``). The answer is read by a JSON path or a
template. It is a provider like any other: the runner's limits, retries, cache, budget and call log apply.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from bench_plugin.core.chat import Completion, CompletionRequest, Usage
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import AuthError, CaseError
from bench_plugin.core.json_bounds import BoundsError, loads_bounded
from bench_plugin.core.json_text import PathStep, format_json_path, walk_json_path
from bench_plugin.core.text_safety import log_line
from bench_plugin.providers.http import HttpPool, malformed, redact
from bench_plugin.providers.http_request import Answer, OutgoingRequest, send_request
from bench_plugin.providers.interface import BaseProvider, merge_params
from bench_plugin.suite.application import ApplicationRequest, ApplicationResponse, ApplicationSpec
from bench_plugin.suite.templates import TemplateRenderer

_TEXT_TYPE = "text/plain; charset=utf-8"
_JSON_TYPE = "application/json"
_SHOWN_CHARS = 120


class ApplicationProvider(BaseProvider):
    """One attempt at the application's endpoint; retries belong to the runner.

    Args:
        spec: the endpoint; ``base_url`` is where the application listens, ``options["application"]`` the
            checked request and response (``ApplicationSpec``).
        http: the runner's client pool.
    """

    def __init__(self, spec: ProviderSpec, http: HttpPool) -> None:
        super().__init__(spec, http)
        self._http = http
        self._app: ApplicationSpec = spec.options["application"]
        self._base_url = (spec.base_url or "").rstrip("/")

    def connection_key(self) -> str:
        """The base URL: calls to one application share a pool and its rate limits."""
        return self._base_url

    async def complete(self, request: CompletionRequest) -> Completion:
        """Render the request, send it once and read the answer; failures raise ProviderError."""
        keys = self._keys()
        secrets = tuple(keys.values())
        try:
            outgoing = render_request(self._app.request, self._base_url, request_scope(request, keys))
        except CaseError as exc:
            raise self._located(exc, "request", secrets) from None
        answer = await send_request(self._http, outgoing, timeout_s=self.spec.timeout_s, key=self._base_url,
                                    secrets=secrets, max_bytes=self.spec.max_response_bytes)
        try:
            return read_answer(self._app.response, answer)
        except CaseError as exc:
            raise self._located(exc, "response", secrets) from None

    def _located(self, exc: CaseError, part: str, secrets: tuple[str, ...]) -> CaseError:
        """A template's error at the provider's ``request:`` or ``response:``; what it quotes has no key."""
        app = self._app
        return CaseError(redact(exc.message, secrets), path=app.path, line=app.line, key=f"{app.key}.{part}",
                         hint=exc.hint)

    def _keys(self) -> dict[str, str]:
        """The provider's ``env:`` variables, read at call time.

        Raises:
            AuthError: one is unset or empty (its value is stripped, as ``api_key_env``'s is).
        """
        keys = {}
        for name in self._app.env:
            value = os.environ.get(name, "").strip()
            if not value:
                raise AuthError(f"environment variable {name} is not set (the env: of {self._app.key})", kind="auth")
            keys[name] = value
        return keys


def request_scope(request: CompletionRequest, keys: Mapping[str, str]) -> dict[str, Any]:
    """What request templates see (``suite.application.REQUEST_NAMES``)."""
    messages = [message.to_dict() for message in request.messages]
    users = [message.content for message in request.messages if message.role == "user"]
    return {
        "messages": messages,
        "prompt": users[-1] if users else "",
        "system": "\n\n".join(m.content for m in request.messages if m.role == "system" and m.content),
        "vars": dict(request.variables),
        "model": request.model.template_vars(),
        "params": merge_params(request),
        "env": dict(keys),
        "task": request.task,
        "run": request.run,
        "turn": request.turn,
        "purpose": request.purpose,
    }


@lru_cache(maxsize=1)
def _renderer() -> TemplateRenderer:
    return TemplateRenderer(None, "<application>")


def render_request(spec: ApplicationRequest, base_url: str, scope: Mapping[str, Any]) -> OutgoingRequest:
    """The request for one call: URL, query, headers (empty ones left out) and body, rendered in the sandbox.

    Raises:
        CaseError: a template fails (a missing variable, a sandbox limit), or the body is not JSON.
    """
    renderer = _renderer()
    rendered = {name: _header_value(name, renderer.render(source, scope)) for name, source in spec.headers}
    headers = _lower({name: value for name, value in rendered.items() if value})
    content = b""
    if spec.body_kind == "json":
        content = _json_bytes(_render_json(renderer, spec.body, scope))
        headers.setdefault("content-type", _JSON_TYPE)
    elif spec.body_kind == "text":
        content = renderer.render(spec.body, scope).encode("utf-8")
        headers.setdefault("content-type", _TEXT_TYPE)
    return OutgoingRequest(
        method=spec.method, url=base_url + _url_path(renderer.render(spec.path, scope)), headers=headers,
        content=content, params=tuple((name, renderer.render(source, scope)) for name, source in spec.query),
    )


def _header_value(name: str, value: str) -> str:
    """A rendered header value HTTP can carry: one line of printable ASCII (a line break would add a header)."""
    if value.isascii() and value.isprintable():
        return value
    raise CaseError(f"header {name} rendered a value an HTTP header cannot carry (a line break, a control "
                    "character or a character outside ASCII)", hint="encode it in the template, e.g. | urlencode")


def _url_path(path: str) -> str:
    """The rendered path, which must stay on ``base_url``'s host: empty, or starting with ``/``."""
    if not path or path.startswith("/"):
        return path
    raise CaseError(f"path rendered {log_line(path[:_SHOWN_CHARS])!r}, which does not start with /: it would "
                    "leave base_url's host", hint="start the path with / (it is appended to base_url)")


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names in lower case, so that the suite's ``Content-Type`` replaces ours rather than joining it."""
    return {name.lower(): value for name, value in headers.items()}


def _render_json(renderer: TemplateRenderer, value: Any, scope: Mapping[str, Any]) -> Any:
    """The body with each string rendered; one ``{{ expression }}`` keeps its value (a list stays a list)."""
    if isinstance(value, str):
        return renderer.evaluate(value, scope)
    if isinstance(value, Mapping):
        return {key: _render_json(renderer, item, scope) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_json(renderer, item, scope) for item in value]
    return value


def _json_bytes(body: Any) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise CaseError(f"the request body is not JSON: {exc}") from None


def read_answer(spec: ApplicationResponse, answer: Answer) -> Completion:
    """The answer's text and token counts, as the response spec reads them.

    Raises:
        TransientProviderError: (``kind="malformed"``) the body is not the JSON a path reads, a path finds nothing,
            or a token count is not a whole number.
    """
    needs_json = spec.output is not None or spec.input_tokens is not None or spec.output_tokens is not None
    data = _parsed(answer.text, required=needs_json)
    if spec.template is not None:
        text = _renderer().render(spec.template, {"json": data, "text": answer.text, "status": answer.status})
    elif spec.output is not None:
        text = _as_text(_found(data, spec.output))
    else:
        text = answer.text
    usage = Usage(input_tokens=_count(data, spec.input_tokens), output_tokens=_count(data, spec.output_tokens))
    return Completion(text=text, usage=usage, latency_s=answer.latency_s)


def _parsed(text: str, *, required: bool) -> Any:
    """The body as JSON (bounded: ``core/json_bounds.py``); None when it is not JSON and nothing needs it."""
    try:
        return loads_bounded(text)
    except (json.JSONDecodeError, BoundsError) as exc:
        if not required:
            return None
        shown = log_line(" ".join(text.split()))[:_SHOWN_CHARS] or "(empty body)"
        raise malformed(f"the application's answer is not JSON ({exc}): {shown}") from None


def _found(data: Any, steps: tuple[PathStep, ...]) -> Any:
    try:
        return walk_json_path(data, steps)
    except LookupError as exc:
        message = log_line(str(exc))[:_SHOWN_CHARS * 2]
        raise malformed(f"response path {format_json_path(steps)} finds nothing: {message}") from None


def _as_text(value: Any) -> str:
    """A found string as it is; any other JSON value as JSON text (a number, an object the scorers parse)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _count(data: Any, steps: tuple[PathStep, ...] | None) -> int | None:
    if steps is None:
        return None
    value = _found(data, steps)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise malformed(f"response path {format_json_path(steps)} is {log_line(json.dumps(value))[:_SHOWN_CHARS]}, "
                    "expected a token count (a whole number)")
