r"""The mock server's rules: checking them, picking the one that applies, and the answer it gives.

By default a model answers ``echo: <last user message>``. Rules change that. They are checked in order and
the first one whose matchers all hold is applied.

Matchers (all optional; a rule without matchers applies to every request):
    ``model``: the exact model name of the request. ``match``: a regex searched in the last user message.
    ``path``: ``openai``, ``anthropic``, ``embeddings`` (``/v1/embeddings``, where ``match`` searches
    the input texts, one per line), ``application`` (``/app/ask``, where it searches the query) or ``world``.
    ``tool_result``: a regex searched in the request's last message
    when it is a tool result (OpenAI ``role: tool``, Anthropic ``tool_result`` blocks); otherwise no match.
    ``image_sha256``: hex that the SHA-256 of an image or audio clip of the request starts with (either wire
    format, ``mock/media.py``; for a URL, the digest of its text).
    ``every``: N: only every Nth request the other matchers hold for (the Nth, 2Nth...).
    ``probability``: p in [0, 1]: only that fraction of them, drawn at random (the server's ``seed`` makes
    the draws repeatable). Draws of successive rules are independent: a later rule sees only the
    requests earlier ones let through. Faults in a chosen share of the calls::

        - {model: m, probability: 0.10, status: 429, retry_after: 1}
        - {model: m, probability: 0.05, status: 500}

Actions:
    ``reply``: the answer text. When the rule has ``match``, it is a Python ``re`` template: ``\1`` and
    ``\g<name>`` are replaced with the groups of the match (in YAML, write it in single quotes).
    ``delay``: seconds to wait before answering (added to the server-wide ``--latency``).
    ``status``: the HTTP status; 4xx/5xx answer an error body in the route's wire format. 401 and 403
    error messages quote the credential the client sent, as some real APIs partly do.
    ``error``: the message of that error body. ``retry_after``: the value of the ``Retry-After`` header.
    ``retry_after_date``: seconds from now, sent as an HTTP-date ``Retry-After``. Other retry headers
    (``retry-after-ms``, ``x-ratelimit-reset-requests``, a proxy's ``llm_provider-retry-after``) go in ``headers``.
    ``headers``: more response headers. ``body``: raw text sent as-is (status 200 unless ``status``).
    ``drop: true``: close the connection without answering. ``times``: apply to the first N matching
    requests only, then skip the rule. ``tool_calls``: a list of ``{name, arguments}``: the answer calls
    these tools (OpenAI ``tool_calls``, Anthropic ``tool_use`` blocks), after the ``reply`` text if any.
    ``json``: data answered as structured output: the arguments of the tool the request forces (Anthropic
    ``tool_choice: {type: tool, name}``, OpenAI ``{type: function, function: {name}}``: how ``output_schema:`` goes
    as a tool), else the content of its JSON text. ``refusal``: the model declines in these words (OpenAI
    ``message.refusal`` with no content, Anthropic ``stop_reason: refusal``).

Example rules file (YAML or JSON), "rate-limited twice, then the capital of France"::

    - {model: flaky, status: 429, retry_after: 1, times: 2}
    - {match: 'capital of (\w+)', reply: 'The capital of \1 is Paris.'}
    - {model: slow, delay: 5}
    - {model: broken, body: "<html>Bad gateway</html>"}

Answers are in the route's wire format (OpenAI chat completions or Anthropic messages), errors included.
An embeddings request gets vectors (``mock/embeddings.py``); of the actions, ``reply`` and
``tool_calls`` do not apply to it, the others (``status``, ``delay``, ``body``, ``drop``...) do.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench_plugin.mock.application import application_body, application_query
from bench_plugin.mock.embeddings import embedding_inputs, embeddings_body
from bench_plugin.mock.media import media_digests
from bench_plugin.mock.streaming import EventStream, StreamPace, stream_events
from bench_plugin.mock.world import world_reply

ROUTE_NAMES = ("openai", "anthropic", "embeddings", "application", "world")
MATCHERS = ("model", "match", "path", "tool_result", "image_sha256", "every", "probability")
ACTIONS = (
    "reply", "delay", "status", "error", "retry_after", "retry_after_date", "headers", "body", "drop", "times",
    "tool_calls", "ttft", "tokens_per_s", "stream_drop_after", "stream_error_after", "json", "refusal",
)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass
class Rule:
    """A checked rule: its keys, its compiled ``match`` and how many more times it may apply."""

    spec: Mapping[str, Any]
    pattern: re.Pattern[str] | None
    remaining: int | None  # None: no ``times`` limit
    tool_pattern: re.Pattern[str] | None = None
    seen: int = 0  # requests the other matchers held for, counted for ``every``

    def applies(
        self,
        route: str,
        model: Any,
        prompt: str,
        tool_result: str | None = None,
        rng: random.Random | None = None,
        media: frozenset[str] = frozenset(),
    ) -> bool:
        """Whether every matcher of the rule holds for the request and its ``times`` are not used up.

        ``media`` are the digests of the request's images and audio. ``every`` and ``probability`` are decided
        last, so they count only requests the rule matches.
        """
        if not self._matches(route, model, prompt, tool_result) or not self._shows(media):
            return False
        self.seen += 1
        return self._its_turn() and self._drawn(rng)

    def _matches(self, route: str, model: Any, prompt: str, tool_result: str | None) -> bool:
        """The matchers that look at the request (and ``times``, not used up)."""
        return (
            self.remaining != 0
            and self.spec.get("model", model) == model
            and self.spec.get("path", route) == route
            and _found(self.pattern, prompt)
            and _found(self.tool_pattern, tool_result)
        )

    def _shows(self, media: frozenset[str]) -> bool:
        """``image_sha256``: whether one of the request's media has a digest that starts with it."""
        wanted = self.spec.get("image_sha256")
        return wanted is None or any(found.startswith(str(wanted).lower()) for found in media)

    def _its_turn(self) -> bool:
        """``every``: N: whether this is the Nth (2Nth...) request the other matchers held for."""
        return self.seen % int(self.spec.get("every", 1)) == 0

    def _drawn(self, rng: random.Random | None) -> bool:
        """``probability``: whether the random draw lets this request through."""
        return "probability" not in self.spec or (rng or random).random() < float(self.spec["probability"])


def _found(pattern: re.Pattern[str] | None, text: str | None) -> bool:
    """A matcher's regex holds: there is none, or it is found in ``text`` (which a missing text never holds)."""
    if pattern is None:
        return True
    return text is not None and pattern.search(text) is not None


@dataclass
class Answer:
    """What the server sends back for one request (or, with ``drop``, that it hangs up)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    stream: EventStream | None = None  # the answer as paced server-sent events (a request with ``stream: true``)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_route(value: Any) -> bool:
    return value in ROUTE_NAMES


def _is_times(value: Any) -> bool:
    return value is None or _is_positive_int(value)  # ``times: null``: no limit


def _is_fraction(value: Any) -> bool:
    return _is_number(value) and 0 <= value <= 1


def _is_tool_calls(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in value)


# what each checked key must hold, and how the error says it; a key the rule leaves out keeps its valid default
_VALUE_CHECKS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("path", _is_route, f"must be one of {', '.join(ROUTE_NAMES)}"),
    ("times", _is_times, "must be a positive integer"),
    ("delay", _is_number, "must be a number"),
    ("status", _is_number, "must be a number"),
    ("retry_after_date", _is_number, "must be a number"),
    ("every", _is_positive_int, "must be a positive integer"),
    ("probability", _is_fraction, "must be a number from 0 to 1"),
    ("tool_calls", _is_tool_calls, "must be a list of {name, arguments}"),
    ("ttft", _is_number, "must be a number"),
    ("tokens_per_s", _is_number, "must be a number"),
    ("stream_drop_after", _is_count, "must be a whole number"),
    ("stream_error_after", _is_count, "must be a whole number"),
)


def compile_rule(rule: Mapping[str, Any]) -> Rule:
    """Check one rule (see the module docstring) and compile its ``match``.

    Raises:
        ValueError: unknown keys, a bad ``path``, regex or ``times``.
    """
    unknown = sorted(set(rule) - set(MATCHERS) - set(ACTIONS))
    if unknown:
        raise ValueError(f"unknown rule keys {unknown}; valid keys: {', '.join(MATCHERS + ACTIONS)}")
    for key, valid, requirement in _VALUE_CHECKS:
        if key in rule and not valid(rule[key]):
            raise ValueError(f"rule {key} {requirement}, got {rule[key]!r}")
    return Rule(dict(rule), _compiled(rule, "match"), rule.get("times"), _compiled(rule, "tool_result"))


def _compiled(rule: Mapping[str, Any], key: str) -> re.Pattern[str] | None:
    return re.compile(rule[key]) if key in rule else None


def pick_rule(
    rules: Sequence[Rule], route: str, body: Mapping[str, Any], rng: random.Random | None = None
) -> tuple[Mapping[str, Any], re.Match[str] | None]:
    """The first rule that applies, counting it against its ``times``; ``{}`` when none does.

    ``rng`` draws for ``probability`` rules. The caller holds the lock that guards ``rules`` (and ``rng``).
    """
    model, prompt, tool_result = body.get("model"), request_text(route, body), last_tool_result(body)
    media = media_digests(body)
    for rule in rules:
        if rule.applies(route, model, prompt, tool_result, rng, media):
            if rule.remaining is not None:
                rule.remaining -= 1
            return rule.spec, rule.pattern.search(prompt) if rule.pattern else None
    return {}, None


def build_answer(
    rule: Mapping[str, Any],
    match: re.Match[str] | None,
    route: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    latency: float,
    ids: Iterator[int],
    pace: StreamPace | None = None,
) -> Answer:
    """Apply a rule's actions to one completion request (``headers`` with lower-case names).

    ``ids`` numbers the completions; only a successful completion takes a number. ``pace``: the server's
    streaming pace, which a rule's ``ttft`` and ``tokens_per_s`` override.
    """
    delay = latency + float(rule.get("delay", 0))
    if rule.get("drop"):
        return Answer(delay=delay, drop=True)
    extra = _extra_headers(rule)
    status, payload = _payload(rule, match, route, body, headers, ids)
    answer = Answer(status, payload, extra, delay)
    if body.get("stream") is True and status == 200 and route != "embeddings" and "body" not in rule:
        answer.stream = stream_events(route, json.loads(payload), (pace or StreamPace()).for_rule(rule))
    return answer


def _extra_headers(rule: Mapping[str, Any]) -> dict[str, str]:
    """The rule's ``headers``, with ``Retry-After`` from ``retry_after`` or ``retry_after_date``."""
    extra = {str(k): str(v) for k, v in rule.get("headers", {}).items()}
    if "retry_after" in rule:
        extra["Retry-After"] = str(rule["retry_after"])
    if "retry_after_date" in rule:
        extra["Retry-After"] = email.utils.formatdate(time.time() + float(rule["retry_after_date"]), usegmt=True)
    return extra


def _payload(
    rule: Mapping[str, Any],
    match: re.Match[str] | None,
    route: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    ids: Iterator[int],
) -> tuple[int, bytes]:
    """The status and body bytes: the rule's raw ``body``, an error, vectors or a completion."""
    status = int(rule.get("status", 200))
    if "body" in rule:
        return status, _raw_body(rule["body"])
    if status >= 400:
        return status, encode(error_body(route, status, str(rule.get("error") or _default_error(status, headers))))
    if route == "embeddings":
        return _embeddings_payload(body, status)
    return _completion_payload(rule, match, route, body, status, ids)


def _raw_body(payload: Any) -> bytes:
    return payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()


def _embeddings_payload(body: Mapping[str, Any], status: int) -> tuple[int, bytes]:
    code, payload = embeddings_body(body)
    if isinstance(payload, str):
        return code, encode(error_body("embeddings", code, payload))
    return status, encode(payload)


def _completion_payload(
    rule: Mapping[str, Any],
    match: re.Match[str] | None,
    route: str,
    body: Mapping[str, Any],
    status: int,
    ids: Iterator[int],
) -> tuple[int, bytes]:
    """A completion answering ``reply`` (expanded with the match's groups) and calling ``tool_calls``."""
    reply = str(rule.get("reply", _default_reply(route, body)))
    if match is not None:
        try:
            reply = match.expand(reply)
        except (re.error, IndexError) as exc:
            message = f"rule reply {reply!r} is not a valid template for /{match.re.pattern}/: {exc}"
            return 500, encode(error_body(route, 500, message))
    number = next(ids)
    if "json" in rule:
        reply = json.dumps(rule["json"])
    if route == "application":
        return status, encode(application_body(reply, application_query(body), number))
    completion = _completion_body(route, str(body.get("model")), reply, _prompt_words(body), number)
    forced = _forced_tool(body) if "json" in rule else None
    if forced is not None:
        _add_tool_calls(completion, route, [{"name": forced, "arguments": rule["json"]}], number, with_text=False)
    if "refusal" in rule:
        _decline(completion, route, str(rule["refusal"]))
    if rule.get("tool_calls"):
        _add_tool_calls(completion, route, rule["tool_calls"], number, with_text="reply" in rule)
    return status, encode(completion)


def _default_reply(route: str, body: Mapping[str, Any]) -> str:
    """Without a ``reply``: the stand-in world's answer on its route, an echo of the request's text elsewhere."""
    text = request_text(route, body)
    return world_reply(text) if route == "world" else f"echo: {text}"


def _forced_tool(body: Mapping[str, Any]) -> str | None:
    """The tool a request forces the model to call (how ``output_schema:`` goes as a tool), in either wire format."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return None
    named = choice.get("function") if choice.get("type") == "function" else choice
    name = named.get("name") if isinstance(named, dict) and choice.get("type") in ("tool", "function") else None
    return name if isinstance(name, str) else None


def _decline(completion: dict[str, Any], route: str, words: str) -> None:
    """The model refuses, in each wire format's way."""
    if route == "anthropic":
        completion.update(content=[{"type": "text", "text": words}], stop_reason="refusal")
        return
    message = completion["choices"][0]["message"]
    message.update(content=None, refusal=words)


def _add_tool_calls(
    completion: dict[str, Any], route: str, calls: Sequence[Mapping[str, Any]], number: int, *, with_text: bool
) -> None:
    """Make a completion body call tools, in the route's wire format."""
    if route == "anthropic":
        _add_tool_use_blocks(completion, calls, number, with_text=with_text)
    else:
        _add_openai_tool_calls(completion, calls, number, with_text=with_text)


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    return dict(call.get("arguments") or {})


def _add_tool_use_blocks(
    completion: dict[str, Any], calls: Sequence[Mapping[str, Any]], number: int, *, with_text: bool
) -> None:
    blocks = completion["content"] if with_text else []
    blocks += [
        {"type": "tool_use", "id": f"toolu_mock_{number}_{i}", "name": call["name"], "input": _arguments(call)}
        for i, call in enumerate(calls, 1)
    ]
    completion.update(content=blocks, stop_reason="tool_use")


def _add_openai_tool_calls(
    completion: dict[str, Any], calls: Sequence[Mapping[str, Any]], number: int, *, with_text: bool
) -> None:
    choice = completion["choices"][0]
    choice["finish_reason"] = "tool_calls"
    choice["message"]["content"] = choice["message"]["content"] if with_text else None
    choice["message"]["tool_calls"] = [
        {"id": f"call_mock_{number}_{i}", "type": "function",
         "function": {"name": call["name"], "arguments": json.dumps(_arguments(call))}}
        for i, call in enumerate(calls, 1)
    ]


def last_tool_result(body: Mapping[str, Any]) -> str | None:
    """The text of the request's last message when it is a tool result, else None."""
    messages = _messages(body)
    if not messages:
        return None
    last = messages[-1]
    if last.get("role") == "tool":
        return _text_of(last.get("content"))
    return _tool_result_blocks(last)


def _tool_result_blocks(message: Mapping[str, Any]) -> str | None:
    """The text of an Anthropic user turn's ``tool_result`` blocks, joined by lines; None when it has none."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return None
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return "\n".join(_text_of(b.get("content")) for b in results) if results else None


def _text_of(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of ``{"type": "text", "text": ...}`` blocks."""
    if isinstance(content, list):
        return " ".join(str(b["text"]) for b in content if isinstance(b, dict) and "text" in b)  # not images
    return "" if content is None else str(content)


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def request_text(route: str, body: Mapping[str, Any]) -> str:
    """What ``match`` searches: the last user message, or an embeddings request's texts, one per line."""
    if route == "embeddings":
        return "\n".join(embedding_inputs(body) or [])
    if route == "application":
        return application_query(body)
    return _last_user_text(body)


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


def error_body(route: str, status: int, message: str) -> dict[str, Any]:
    """An error response body in the route's wire format, its ``type`` the one the real API gives for ``status``."""
    error_type = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if route == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _default_error(status: int, headers: Mapping[str, str]) -> str:
    if status in (401, 403):
        credential = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        return f"Incorrect API key provided: {credential or '(none)'}"
    return f"mock error {status}"


def encode(payload: Any) -> bytes:
    """A JSON payload as the bytes of a response body."""
    return json.dumps(payload).encode()


def load_rules(path: str | Path) -> list[dict[str, Any]]:
    """Read a list of rules from a YAML or JSON file (JSON is valid YAML)."""
    rules = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(rules, list) or not all(isinstance(rule, dict) for rule in rules):
        raise ValueError(f"{path}: expected a list of rules (mappings)")
    return rules
