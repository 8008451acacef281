"""What an engine gives back, and engines by name (single turn, scripted multi-turn, n-way, agent)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bench_plugin.chat import CallModel
from bench_plugin.suite.spec import CaseSpec
from bench_plugin.transcript import Transcript

if TYPE_CHECKING:
    pass


Engine = Callable[[CaseSpec, CallModel], Awaitable[Transcript]]


def get_engine(name: str) -> Engine:
    """The engine that runs cases of this kind (``CaseSpec.engine``, chosen at expansion)."""
    from bench_plugin.engines.agent.run import run_agent
    from bench_plugin.engines.conversation.run import run_conversation
    from bench_plugin.engines.single_turn import run_single_turn
    from bench_plugin.engines.turns import run_turns

    engines: dict[str, Engine] = {
        "single_turn": run_single_turn, "turns": run_turns, "conversation": run_conversation, "agent": run_agent,
    }
    if name not in engines:
        raise KeyError(f"unknown engine '{name}'; choose from: {', '.join(engines)}")
    return engines[name]
