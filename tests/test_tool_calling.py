"""Tool calling on the wire.

OpenAI function calling, Anthropic tool use, the mock server's tool-call rules, and scripted models that
call tools.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from bench_plugin.core.chat import CompletionRequest, Message, ToolCall, ToolDefinition
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import TransientProviderError
from bench_plugin.mock.rules import build_answer, compile_rule, last_tool_result, pick_rule
from bench_plugin.providers import anthropic, openai_compat
from bench_plugin.providers.offline import ScriptedProvider

TOOL = ToolDefinition("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
CALL = ToolCall("call_1", "read_file", '{"path": "a.py"}')
HISTORY = (
    Message("system", "Be brief."),
    Message("user", "Fix a.py"),
    Message("assistant", "Reading it.", tool_calls=(CALL,)),
    Message("tool", "x = 1", name="read_file", tool_call_id="call_1"),
    Message("user", "Go on."),
)


def request(messages: tuple[Message, ...] = HISTORY, model: ModelSpec | None = None) -> CompletionRequest:
    model = model or ModelSpec("m", ProviderSpec("p", "openai_compatible"), "m-1", "m")
    return CompletionRequest(model=model, messages=messages, tools=(TOOL,))


def test_openai_body_offers_functions_and_replays_calls_and_results() -> None:
    body = openai_compat.build_body(request())
    assert body["tools"] == [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                                               "parameters": TOOL.parameters}}]
    assert body["messages"][2:4] == [
        {"role": "assistant", "content": "Reading it.",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
    ]
    only_call = openai_compat.wire_message(Message("assistant", "", tool_calls=(CALL,)))
    assert only_call["content"] is None


def test_openai_tool_calls_are_read_with_their_arguments_as_text() -> None:
    data = {"choices": [{"finish_reason": "tool_calls", "message": {"content": None, "tool_calls": [
        {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "b'}},
        {"id": "call_10", "type": "function", "function": {"name": "search", "arguments": {"pattern": "x"}}},
    ]}}]}
    completion = openai_compat.parse_completion(data, 0.1)
    assert completion.text == "" and completion.finish_reason == "tool_calls"
    assert completion.tool_calls == (ToolCall("call_9", "read_file", '{"path": "b'),
                                     ToolCall("call_10", "search", '{"pattern": "x"}'))
    with pytest.raises(TransientProviderError, match="tool_calls is not a list"):
        openai_compat.parse_completion({"choices": [{"message": {"content": "", "tool_calls": "x"}}]}, 0.1)


def test_anthropic_body_uses_tool_use_and_tool_result_blocks() -> None:
    body = anthropic.build_body(request())
    assert body["tools"] == [{"name": "read_file", "description": "Read a file.", "input_schema": TOOL.parameters}]
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": "Fix a.py"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading it."},
                                          {"type": "tool_use", "id": "call_1", "name": "read_file",
                                           "input": {"path": "a.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "x = 1"},
                                     {"type": "text", "text": "Go on."}]},
    ]


def test_anthropic_keeps_plain_text_turns_as_strings_and_drops_empty_text_blocks() -> None:
    assert anthropic.wire_messages((Message("user", "a"), Message("user", "b"))) == [
        {"role": "user", "content": "a\n\nb"}]
    blocks = anthropic.wire_messages(
        (Message("user", "go"), Message("assistant", "", tool_calls=(ToolCall("t", "x", "not json"),)))
    )
    assert blocks[1]["content"] == [{"type": "tool_use", "id": "t", "name": "x", "input": {"_raw": "not json"}}]


def test_anthropic_tool_use_blocks_are_read() -> None:
    data = {"content": [{"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}],
            "stop_reason": "tool_use"}
    completion = anthropic.parse_completion(data, 0.1)
    assert completion.text == "Let me look." and completion.tool_calls == (
        ToolCall("toolu_1", "read_file", '{"path": "a.py"}'),)


@pytest.mark.parametrize("route", ["openai", "anthropic"])
def test_mock_rules_answer_with_tool_calls_in_each_wire_format(route: str) -> None:
    rule = {"reply": "On it.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]}
    answer = build_answer(compile_rule(rule).spec, None, route, {"model": "m", "messages": []}, {}, latency=0,
                          ids=itertools.count(1))
    body = json.loads(answer.body)
    parse = openai_compat.parse_completion if route == "openai" else anthropic.parse_completion
    completion = parse(body, 0.0)
    assert completion.text == "On it."
    assert [(c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [("read_file", {"path": "a.py"})]
    assert completion.finish_reason == ("tool_calls" if route == "openai" else "tool_use")


def test_mock_tool_result_matcher_reads_both_formats() -> None:
    openai_body = {"messages": [{"role": "tool", "tool_call_id": "c", "content": "exit code: 1"}]}
    anthropic_body = {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c",
                                                                  "content": "exit code: 1"}]}]}
    assert last_tool_result(openai_body) == last_tool_result(anthropic_body) == "exit code: 1"
    assert last_tool_result({"messages": [{"role": "user", "content": "hi"}]}) is None
    rules = [compile_rule({"tool_result": "exit code: [1-9]", "reply": "retry"}), compile_rule({"reply": "first"})]
    assert pick_rule(rules, "openai", openai_body)[0]["reply"] == "retry"
    assert pick_rule(rules, "openai", {"messages": [{"role": "user", "content": "go"}]})[0]["reply"] == "first"
    with pytest.raises(ValueError, match="tool_calls must be a list"):
        compile_rule({"tool_calls": [{"arguments": {}}]})


def scripted(script: list[dict[str, Any]], messages: tuple[Message, ...], turn: int = 1) -> Any:
    model = ModelSpec("bot", ProviderSpec("scripted", "scripted"), "bot", "bot", options={"script": script})
    call = CompletionRequest(model=model, messages=messages, turn=turn, variables={"file": "a.py"})
    return asyncio.run(ScriptedProvider(model.provider).complete(call))


def test_scripted_models_call_tools_with_templated_arguments_and_react_to_results() -> None:
    script = [
        {"tool_result": "^error", "reply": "That failed; trying again."},
        {"turn": 1, "reply": "Reading.",
         "tool_calls": [{"name": "read_file", "arguments": {"path": "{{ file }}", "n": 2}}]},
        {"reply": "Done."},
    ]
    first = scripted(script, (Message("user", "Fix it"),))
    assert first.text == "Reading." and first.finish_reason == "tool_calls"
    assert first.tool_calls == (ToolCall("call_1_1", "read_file", '{"path": "a.py", "n": 2}'),)
    failed = (Message("user", "Fix it"), Message("tool", "error: no such file", tool_call_id="call_1_1"))
    assert scripted(script, failed, turn=2).text == "That failed; trying again."
    assert scripted(script, (Message("user", "Fix it"),), turn=2).text == "Done."
