"""The names the conversation engine renders a template with are the names collection checks it against."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.engines.conversation import run
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.conversation.build import PREFIX_NAMES
from bench_plugin.suite.conversation.commands import INVITE_NAMES, NOTICE_NAMES
from bench_plugin.suite.expand import ExpandOptions, expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.sources import TemplateSpec

SUITE = """\
models:
  bot: {provider: echo}
  guest: {provider: echo, default: false}
tasks:
  - id: chat
    vars: {tone: calm}
    conversation:
      mode: shared
      max_turns: 1
      seed: hello
      participants: [{name: A}, {name: B}]
      commands:
        temp: {action: set_temperature}
        add_ai: {action: invite, models: [guest]}
"""


def test_conversation_templates_are_rendered_with_exactly_the_names_collection_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(SUITE)
    loaded = load_suite_text(SUITE, path=path, display_path="suites/demo.yaml")
    (case,) = expand_suite(build_suite(loaded, BuildOptions()), ExpandOptions())
    assert case.problem is None and case.conversation is not None, case.problem
    rendered: dict[str, set[str]] = {}
    original = run._Conversation.render

    def render(self: Any, template: TemplateSpec, scope: Mapping[str, Any]) -> str:
        rendered.setdefault(template.key.removeprefix("tasks[0].conversation."), set(scope))
        return original(self, template, scope)

    async def reply(request: CompletionRequest) -> Completion:
        return Completion("!temp 1 and !add_ai guest 'a poet'")

    monkeypatch.setattr(run._Conversation, "render", render)
    asyncio.run(run.run_conversation(case, reply))
    scope = {*case.variables, "model", "task_id"}
    assert rendered == {
        "speaker_prefix": {*scope, *PREFIX_NAMES},
        "commands.temp.notice": {*scope, *NOTICE_NAMES},
        "commands.add_ai.name": {*scope, *INVITE_NAMES},
        "commands.add_ai.system": {*scope, *INVITE_NAMES},
        "commands.add_ai.notice": {*scope, *NOTICE_NAMES},
    }, rendered
