"""Offline providers answer through the same interface as HTTP ones."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.chat import CompletionRequest, Message
from bench_plugin.core.endpoints import PRESETS, ModelSpec
from bench_plugin.core.errors import CaseError, RecordedFailureError, ReplayMissError
from bench_plugin.providers.offline import EchoProvider, ReplayProvider, ScriptedProvider


def request(provider: str, options: dict[str, Any], text: str = "hi", **kw: Any) -> CompletionRequest:
    model = ModelSpec("m", PRESETS[provider], "m-id", "M", options=options)
    return CompletionRequest(model=model, messages=(Message("system", "s"), Message("user", text)), **kw)


def test_echo_returns_last_user_message_with_prefix() -> None:
    completion = asyncio.run(EchoProvider(PRESETS["echo"]).complete(request("echo", {"prefix": "> "}, "ping")))
    assert completion.text == "> ping"


def test_scripted_first_matching_rule_wins_with_groups_and_turns() -> None:
    script = [
        {"task": "math-*", "regex": r"(\d+)\+(\d+)", "reply": "{{ groups[1]|int + groups[2]|int }}"},
        {"contains": "hello", "reply": ["first", "second"]},
        {"reply": "default for {{ task }}"},
    ]
    provider = ScriptedProvider(PRESETS["scripted"])
    assert asyncio.run(provider.complete(request("scripted", {"script": script}, "2+3", task="math-1"))).text == "5"
    assert asyncio.run(provider.complete(request("scripted", {"script": script}, "hello", turn=2))).text == "second"
    assert asyncio.run(provider.complete(request("scripted", {"script": script}, "?", task="t"))).text == (
        "default for t")


def test_scripted_without_matching_rule_is_a_case_error() -> None:
    provider = ScriptedProvider(PRESETS["scripted"])
    with pytest.raises(CaseError, match="no rule that answers task 'x'"):
        asyncio.run(provider.complete(request("scripted", {"script": [{"task": "y", "reply": "."}]}, task="x")))


def test_replay_prefers_exact_run_then_any_run(tmp_path: Path) -> None:
    file = tmp_path / "rec.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in [
        {"model": "m-id", "task": "t", "response": "any run"},
        {"model": "m-id", "task": "t", "run": 2, "response": "run two"},
        {"model": "m-id", "task": "multi", "response": ["turn one", "turn two"]},
    ]))
    provider = ReplayProvider(PRESETS["replay"])
    options = {"replay": {"file": str(file)}}
    assert asyncio.run(provider.complete(request("replay", options, task="t", run=1))).text == "any run"
    assert asyncio.run(provider.complete(request("replay", options, task="t", run=2))).text == "run two"
    assert asyncio.run(provider.complete(request("replay", options, task="multi", turn=2))).text == "turn two"
    with pytest.raises(ReplayMissError, match="task 'absent'"):
        asyncio.run(provider.complete(request("replay", options, task="absent")))


def test_recorded_error_replays_as_an_infrastructure_failure(tmp_path: Path) -> None:
    file = tmp_path / "rec.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in [
        {"model": "m-id", "task": "ok", "response": "fine", "error": None},
        {"model": "m-id", "task": "broken", "response": "", "error": "run-error: Expecting value"},
        {"model": "m-id", "task": "no-response-field", "error": "timeout"},
    ]))
    provider = ReplayProvider(PRESETS["replay"])
    options = {"replay": {"file": str(file)}}
    assert asyncio.run(provider.complete(request("replay", options, task="ok"))).text == "fine"
    with pytest.raises(RecordedFailureError, match=r"run-error: Expecting value .recorded for model 'm-id'") as info:
        asyncio.run(provider.complete(request("replay", options, task="broken")))
    assert (info.value.kind, info.value.expected) == ("recorded_failure", False)
    with pytest.raises(RecordedFailureError, match="timeout") as info:
        expected = {"replay": {"file": str(file), "recorded_errors": "xfail"}}
        asyncio.run(provider.complete(request("replay", expected, task="no-response-field")))
    assert info.value.expected is True


def test_replay_judge_finds_the_verdict_recorded_for_the_judged_model(tmp_path: Path) -> None:
    file = tmp_path / "rec.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in [
        {"model_id": "org/a", "case": "t1", "verdict": "+1"},
        {"model_id": "org/b", "case": "t1", "verdict": "-0.5"},
    ]))
    options = {"replay": {"file": str(file), "model_key": "{{ model.id }}",
                          "fields": {"model": "model_id", "task": "case", "response": "verdict"}}}
    provider = ReplayProvider(PRESETS["replay"])
    judged_b = {"model": {"name": "b", "id": "org/b", "label": "B"}}
    judge_call = request("replay", options, task="t1", purpose="judge", variables=judged_b)
    assert asyncio.run(provider.complete(judge_call)).text == "-0.5"
    # a candidate's own call: model is the model called (id m-id here, which has no recording)
    with pytest.raises(ReplayMissError, match="model 'm-id', task 't1'"):
        asyncio.run(provider.complete(request("replay", options, task="t1", variables=judged_b)))
