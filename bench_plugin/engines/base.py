"""What an engine gives back, and engines by name (single turn, scripted multi-turn, n-way, agent)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench_plugin.engines.turns import TurnResult
from bench_plugin.providers.base import Completion
from bench_plugin.scoring.base import CallModel
from bench_plugin.suite.spec import CaseSpec, Message

if TYPE_CHECKING:
    from bench_plugin.agent.log import AgentRun


@dataclass(frozen=True)
class Transcript:
    """The conversation a case produced.

    ``messages``: the prompt plus the model's replies as sent back (raw, with any thinking);
    ``response``: the last answer, which scorers see; ``turns``: each user turn and its reply;
    ``completions``: every call made (in a model-to-model conversation, the calls of the model
    under test). ``conversation``: a model-to-model conversation's log as plain data (participants,
    messages, events, how it ended); ``text``: how judges read the conversation (speaker names and
    events), when it is not ``role: content`` blocks of ``messages``. ``agent``: a tool-using agent's
    run (tool calls, checks of the final workspace, final files, budget).
    """

    messages: tuple[Message, ...]
    response: str
    completions: tuple[Completion, ...]
    turns: tuple[TurnResult, ...] = ()
    conversation: Mapping[str, Any] | None = None
    text: str | None = None
    agent: AgentRun | None = None


Engine = Callable[[CaseSpec, CallModel], Awaitable[Transcript]]


def get_engine(name: str) -> Engine:
    """The engine that runs cases of this kind (``CaseSpec.engine``, chosen at expansion)."""
    from bench_plugin.engines.agent import run_agent
    from bench_plugin.engines.conversation_nway import run_nway
    from bench_plugin.engines.multi_turn import run_multi_turn
    from bench_plugin.engines.single_turn import run_single_turn

    engines: dict[str, Engine] = {
        "single_turn": run_single_turn, "multi_turn": run_multi_turn, "nway": run_nway, "agent": run_agent,
    }
    if name not in engines:
        raise KeyError(f"unknown engine '{name}'; choose from: {', '.join(engines)}")
    return engines[name]
