"""How judges and people read an agent run: the transcript with its tool calls, and the check results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.transcript import AgentRun, ToolCallRecord

RESULT_CHARS = 1_500  # of each tool result in the transcript text


def transcript_text(messages: Sequence[Message], calls: Sequence[ToolCallRecord]) -> str:
    """The messages as ``role: content`` blocks, each tool call under its assistant message.

    Each tool result is marked ok or failed::

        assistant: I'll read the file first.
          -> read_file {"path": "pricing.py"}

        tool read_file (ok): def discount(...
    """
    by_id = {call.id: call for call in calls}
    return "\n\n".join(
        _tool_block(message, by_id.get(message.tool_call_id or "")) if message.role == "tool" else _block(message)
        for message in messages
    )


def _block(message: Message) -> str:
    """``role: content``, and a ``->`` line under it for each tool it calls."""
    lines = [f"{message.role}: {message.content}"]
    lines += [f"  -> {call.name} {call.arguments}" for call in message.tool_calls]
    return "\n".join(lines)


def _tool_block(message: Message, call: ToolCallRecord | None) -> str:
    """``tool name (ok): result``, the result clipped to ``RESULT_CHARS``."""
    status = "" if call is None else (" (ok)" if call.ok else " (failed)")
    return f"tool {message.name or ''}{status}: {_clipped(message.content)}"


def _clipped(text: str) -> str:
    if len(text) <= RESULT_CHARS:
        return text
    return text[:RESULT_CHARS] + f"... [{len(text) - RESULT_CHARS} more characters]"


def checks_summary(run: AgentRun) -> str:
    """The deterministic checks for a judge: passed / total, then each check with its evidence."""
    results = [check for checks in run.checks.values() for check in checks]
    if not results:
        return "Deterministic checks: none."
    passed = sum(check.passed for check in results)
    lines = [f"Deterministic checks: {passed}/{len(results)} passed."]
    lines += [f"- {'passed' if c.passed else 'FAILED'}: {c.name}: {c.detail}" for c in results]
    return "\n".join(lines)


def judge_variables(run: AgentRun | None) -> dict[str, Any]:
    """What an ``llm_judge`` prompt sees of an agent run; nothing for other tasks.

    ``checks`` is the summary above, ``tool_calls`` each call as in the record and ``files`` path -> text of
    the final text files.
    """
    if run is None:
        return {}
    files: Mapping[str, Any] = {entry["path"]: entry["text"] for entry in run.files if "text" in entry}
    return {"checks": checks_summary(run), "tool_calls": [call.to_dict() for call in run.tool_calls],
            "files": dict(files)}
