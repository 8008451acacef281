"""output_schema: on the wire: OpenAI's response_format, Anthropic's forced answer tool, refusals, the cache key."""

from __future__ import annotations

import asyncio
import json

from bench_plugin.calls.cache import cache_key, decode_completion, encode_completion
from bench_plugin.core.chat import Completion, CompletionRequest, Message, ResponseSchema
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.engines.structured_output import read_structured
from bench_plugin.providers import anthropic, openai_compat
from bench_plugin.providers.interface import answered_by_tool
from bench_plugin.providers.offline import ReplayProvider, ScriptedProvider

SCHEMA = ResponseSchema("contact", {"type": "object", "properties": {"name": {"type": "string"}},
                                    "required": ["name"]}, strict=True)


def request(kind: str = "openai_compatible", schema: ResponseSchema | None = SCHEMA, form: str = ""
            ) -> CompletionRequest:
    model = ModelSpec("m", ProviderSpec("p", kind), "m-1", "m", options={"structured_output": form} if form else {})
    return CompletionRequest(model=model, messages=(Message("user", "Ada Lovelace, a@b.example"),),
                             response_schema=schema)


def test_openai_gets_response_format_json_schema() -> None:
    body = openai_compat.build_body(request())
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "contact", "schema": dict(SCHEMA.schema), "strict": True}}
    assert "response_format" not in openai_compat.build_body(request(schema=None))


def test_openai_refusal_is_read_as_a_refusal() -> None:
    data = {"choices": [{"finish_reason": "stop", "message": {"content": None, "refusal": "I can't."}}]}
    completion = openai_compat.parse_completion(data, 0.1)
    assert (completion.text, completion.refusal) == ("I can't.", "I can't.")
    plain = openai_compat.parse_completion({"choices": [{"message": {"content": "{}", "refusal": None}}]}, 0.1)
    assert plain.refusal is None


def test_anthropic_forces_an_answer_tool_and_reads_its_input_as_the_answer() -> None:
    body = anthropic.build_body(request("anthropic"))
    assert body["tools"] == [{"name": "contact", "description": body["tools"][0]["description"],
                              "input_schema": dict(SCHEMA.schema)}]
    assert body["tool_choice"] == {"type": "tool", "name": "contact"}
    data = {"content": [{"type": "tool_use", "id": "t1", "name": "contact", "input": {"name": "Ada"}}],
            "stop_reason": "tool_use"}
    completion = anthropic.parse_completion(data, 0.1, answer_tool="contact")
    assert completion.parsed == {"name": "Ada"} and json.loads(completion.text) == {"name": "Ada"}
    assert completion.tool_calls == ()


def test_anthropic_refusal_stop_reason_is_a_refusal() -> None:
    data = {"content": [{"type": "text", "text": "I won't."}], "stop_reason": "refusal"}
    assert anthropic.parse_completion(data, 0.1, answer_tool="contact").refusal == "I won't."
    quiet = anthropic.parse_completion({"content": [], "stop_reason": "refusal"}, 0.1)
    assert quiet.refusal == "(declined without words)"


def test_the_answer_is_read_and_checked_or_the_reason_kept() -> None:
    assert read_structured(Completion('{"name": "Ada"}'), SCHEMA, '{"name": "Ada"}').failure is None
    fenced = read_structured(Completion("```json\n{}\n```"), SCHEMA, "```json\n{}\n```")
    assert fenced.failure is not None and fenced.failure.startswith("the answer is not JSON")
    wrong = read_structured(Completion('{"name": 3}'), SCHEMA, '{"name": 3}')
    assert wrong.failure == "the answer does not match output_schema at $.name: 3 is not of type 'string'"
    assert wrong.to_dict()["value"] == {"name": 3}
    parsed = read_structured(Completion("ignored", parsed={"name": "Ada"}), SCHEMA, "ignored")
    assert parsed.value == {"name": "Ada"} and parsed.failure is None


def test_the_schema_is_part_of_the_cache_key_and_a_refusal_is_cached() -> None:
    assert cache_key(request()) != cache_key(request(schema=None))
    assert cache_key(request(schema=None)) == cache_key(request(schema=None))
    stored = decode_completion(encode_completion(Completion("no", refusal="no", parsed={"a": [1]})))
    assert (stored.refusal, stored.parsed) == ("no", {"a": [1]})


def test_scripted_json_and_refusal_rules() -> None:
    script = [{"task": "a", "json": {"name": "{{ who }}", "tags": ["x"]}}, {"refusal": "Not {{ who }}."}]
    provider = ScriptedProvider(ProviderSpec("scripted", "scripted"))
    model = ModelSpec("m", ProviderSpec("scripted", "scripted"), "m", "m", options={"script": script})
    answer = asyncio.run(provider.complete(CompletionRequest(model, (Message("user", "q"),), task="a",
                                                             variables={"who": "Ada"})))
    assert json.loads(answer.text) == {"name": "Ada", "tags": ["x"]}
    refused = asyncio.run(provider.complete(CompletionRequest(model, (Message("user", "q"),), task="b",
                                                              variables={"who": "Ada"})))
    assert refused.refusal == "Not Ada."


def test_a_replayed_object_is_answered_as_json(tmp_path: object) -> None:
    from pathlib import Path

    file = Path(str(tmp_path)) / "rec.jsonl"
    file.write_text(json.dumps({"model": "m", "task": "t", "response": {"name": "Ada"}}) + "\n")
    spec = ProviderSpec("replay", "replay")
    model = ModelSpec("m", spec, "m", "m", options={"replay": {"file": str(file)}})
    answer = asyncio.run(ReplayProvider(spec).complete(CompletionRequest(model, (Message("user", "q"),), task="t")))
    assert json.loads(answer.text) == {"name": "Ada"}


def test_structured_output_native_sends_anthropics_output_config() -> None:
    body = anthropic.build_body(request("anthropic", form="native"))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": dict(SCHEMA.schema)}}
    assert "tools" not in body and "tool_choice" not in body


def test_structured_output_tool_forces_a_function_on_openai_compatible_servers() -> None:
    body = openai_compat.build_body(request(form="tool"))
    assert "response_format" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "contact"}}
    assert body["tools"][0]["function"]["parameters"] == dict(SCHEMA.schema)


def test_a_forced_function_whose_arguments_do_not_parse_is_a_model_failure_not_a_crash() -> None:
    data = {"choices": [{"finish_reason": "tool_calls", "message": {"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "contact", "arguments": '{"name": "Ad'}}]}}]}
    completion = answered_by_tool(openai_compat.parse_completion(data, 0.1), "contact")
    assert completion.parsed is None and completion.tool_calls == ()
    found = read_structured(completion, SCHEMA, completion.text)
    assert found.failure is not None and found.failure.startswith("the answer is not JSON")


def test_a_forced_function_call_ending_with_stop_is_an_answer_not_a_broken_body() -> None:
    data = {"choices": [{"finish_reason": "stop", "message": {"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "contact", "arguments": '{"name": "Ada"}'}}]}}]}
    completion = answered_by_tool(openai_compat.parse_completion(data, 0.1), "contact")
    assert completion.parsed == {"name": "Ada"} and completion.text == '{"name": "Ada"}'
