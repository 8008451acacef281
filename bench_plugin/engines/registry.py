"""Engines by name: how a case becomes a transcript (one prompt, scripted turns, a conversation, an agent).

Expansion names the engine of each case (``CaseSpec.engine``, or a task's ``engine:``); a project
adds its own from ``conftest.py`` (``pytest_bench_engines``) or a package through the
``bench_plugin.engines`` entry point group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from bench_plugin.core.chat import CallModel
from bench_plugin.core.registry import Registry, require_callable
from bench_plugin.core.transcript import Transcript
from bench_plugin.suite.spec import CaseSpec

Engine = Callable[[CaseSpec, CallModel], Awaitable[Transcript]]
"""Run one case: make the calls through ``CallModel`` and return what was said."""


def adapt_engine(value: object) -> Engine:
    """An engine is any callable ``(case, call_model) -> awaitable Transcript``.

    Raises:
        TypeError: ``value`` is not callable.
    """
    return cast(Engine, require_callable(value, "an engine must be a callable (case, call_model) -> Transcript"))


ENGINES: Registry[Engine] = Registry(
    "engine",
    "bench_plugin.engines",
    {
        "single_turn": "bench_plugin.engines.single_turn:run_single_turn",
        "turns": "bench_plugin.engines.turns:run_turns",
        "conversation": "bench_plugin.engines.conversation.run:run_conversation",
        "agent": "bench_plugin.engines.agent.run:run_agent",
    },
    adapt_engine,
)
