"""What a case page shows of a record: messages part by part, turns, agent steps, judges, spend and errors.

The page's template escapes every value; this module only arranges the record's data and marks where each
image part is, so a message shows its images in place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_plugin.results.record import CaseRecord
from bench_plugin.view.images import ImagePart, image_parts

MAX_SHOWN_CHARS = 200_000
"""The longest value shown whole: a longer one is cut, saying how much was left out."""


@dataclass(frozen=True)
class Part:
    """A piece of a message: text, an image part, or any other part as JSON."""

    text: str | None = None
    image: ImagePart | None = None
    other: str | None = None


@dataclass(frozen=True)
class Message:
    """One message: who said it and its parts, with its tool calls (as JSON) when it made any."""

    role: str
    name: str
    parts: list[Part]
    tool_calls: str | None


@dataclass(frozen=True)
class Step:
    """One tool call of an agent: its step, tool, arguments (as JSON), whether it worked, its output and error."""

    step: str
    name: str
    arguments: str
    failed: bool
    output: str | None
    error: str | None


@dataclass(frozen=True)
class AgentView:
    """An agent's run: its steps, and its checks, budget (as JSON) and final workspace files (path -> text)."""

    steps: list[Step]
    checks: str | None
    budget: str | None
    files: dict[str, str]


@dataclass(frozen=True)
class CaseView:
    """A case page's content."""

    record: CaseRecord
    sent: list[Message]
    transcript: list[Message]
    images: list[ImagePart]
    components: list[dict[str, Any]]
    agent: AgentView | None


def case_view(record: CaseRecord) -> CaseView:
    """The case page's content of ``record``."""
    images = image_parts(record)
    at = {image.where: image for image in images}
    return CaseView(record=record, sent=_messages(record.messages, "messages", at),
                    transcript=_messages(record.transcript, "transcript", at), images=images,
                    components=[_component(c) for c in (record.scores or {}).get("components", [])],
                    agent=agent_view(record.agent))


def agent_view(agent: Any) -> AgentView | None:
    """An agent's record as its section shows it; parts of another shape are shown as JSON, never trusted."""
    if not isinstance(agent, Mapping):
        return None
    calls = agent.get("tool_calls")
    files = agent.get("files")
    return AgentView(
        steps=[_step(call) for call in calls] if isinstance(calls, list) else [],
        checks=pretty(agent["checks"]) if agent.get("checks") else None,
        budget=pretty(agent["budget"]) if agent.get("budget") else None,
        files={str(path): _text(text) for path, text in files.items()} if isinstance(files, Mapping) else {},
    )


def _step(call: Any) -> Step:
    if not isinstance(call, Mapping):
        return Step("", "", pretty(call), False, None, None)
    output, error = call.get("output"), call.get("error")
    return Step(step=str(call.get("step", "")), name=str(call.get("name", "")), arguments=pretty(call.get("arguments")),
                failed=call.get("ok") is False, output=None if output is None else _text(output),
                error=None if not error else _text(error))


def _text(value: Any) -> str:
    return bounded(value) if isinstance(value, str) else pretty(value)


def _messages(messages: Sequence[Mapping[str, Any]], field: str, at: Mapping[str, ImagePart]) -> list[Message]:
    shown = []
    for index, message in enumerate(messages):
        calls = message.get("tool_calls")
        shown.append(Message(role=str(message.get("role", "")), name=str(message.get("name") or ""),
                             parts=_parts(message.get("content"), f"{field}[{index}].content", at),
                             tool_calls=pretty(calls) if calls else None))
    return shown


def _parts(content: Any, where: str, at: Mapping[str, ImagePart]) -> list[Part]:
    if content is None:
        return []
    if not isinstance(content, list):
        return [Part(text=bounded(content if isinstance(content, str) else pretty(content)))]
    return [_part(part, f"{where}[{index}]", at) for index, part in enumerate(content)]


def _part(part: Any, where: str, at: Mapping[str, ImagePart]) -> Part:
    if where in at:
        return Part(image=at[where])
    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
        return Part(text=bounded(part["text"]))
    return Part(other=pretty(part))


def _component(component: Mapping[str, Any]) -> dict[str, Any]:
    """A component as its table row shows it; the judge's reply whole, the rest of its detail as JSON."""
    known = ("name", "value", "raw", "passed", "weight", "judge_output")
    rest = {key: value for key, value in component.items() if key not in known}
    return {**{key: component.get(key) for key in known},
            "judge_output": bounded(str(component.get("judge_output") or "")), "detail": pretty(rest) if rest else ""}


def pretty(value: Any) -> str:
    """JSON data as indented text, bounded (``bounded``)."""
    return bounded(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str))


def bounded(text: str) -> str:
    """``text``, cut at ``MAX_SHOWN_CHARS`` with a note of how much was left out."""
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS]}\n… ({len(text) - MAX_SHOWN_CHARS:,} more characters not shown)"
