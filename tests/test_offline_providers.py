"""Offline providers answer through the same interface as HTTP ones."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.errors import CaseError, ReplayMissError
from bench_plugin.providers.base import CompletionRequest
from bench_plugin.providers.offline import EchoProvider, ReplayProvider, ScriptedProvider
from bench_plugin.providers.registry import PRESETS
from bench_plugin.suite.spec import Message, ModelSpec


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
    assert asyncio.run(provider.complete(request("scripted", {"script": script}, "?", task="t"))).text == "default for t"


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
