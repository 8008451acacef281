"""Tool-using agents: the model calls tools in a fresh workspace until it answers without calling one.

Each user turn (the task's prompt, or its ``turns``/``phases`` with their gates) starts a loop: the model
is sent the conversation so far with the tools offered; each tool call it makes is carried out and its
result sent back, until a reply calls no tool or the budget (model calls, seconds) runs out. When the
budget runs out the loop stops, later turns are not sent, and whatever was done is scored. The checks
of ``completion`` scorers run on the final workspace before it is removed. Programs (``command`` tools and
command checks) run in the case's sandbox, chosen before the first model call: a case that needs one
that does not work here fails at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from bench_plugin.core.chat import CallModel, Completion, CompletionRequest, Message
from bench_plugin.core.errors import CaseError, ProviderError
from bench_plugin.core.transcript import (
    AgentRun,
    CheckResult,
    ToolCallRecord,
    Transcript,
    TurnResult,
    answered_turn,
    skipped_turn,
)
from bench_plugin.engines.agent.final_checks import has_command_checks, verify_completion
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.engines.agent.toolbox import Toolbox
from bench_plugin.engines.agent.view import transcript_text
from bench_plugin.engines.agent.workspace import create_workspace, remove_workspace, snapshot
from bench_plugin.engines.partial import keep_partial
from bench_plugin.engines.turns import open_turn, phase_system
from bench_plugin.suite.spec import CaseSpec, PhaseSpec, TurnSpec


async def run_agent(case: CaseSpec, call_model: CallModel) -> Transcript:
    """Run an agent case in its own workspace, then check the final state.

    Raises:
        CaseError: a template of a turn, a scripted tool or a check fails to render.
        ProviderError: a model call fails; the runner classifies it. Tool failures never raise.
        SandboxError: the case runs programs and no sandbox it may use works here (before any model call).
    """
    assert case.model is not None and case.agent is not None, "expansion sets both for agent cases"
    sandbox = await open_sandbox(case.agent.sandbox) if _runs_programs(case) else None
    sandbox_name = sandbox.name if sandbox else None
    root = create_workspace(case.agent.workspace)
    try:
        session = _Session(case, call_model, Toolbox(case.agent.tools, root, case, sandbox))
        try:
            await session.play()
        except (ProviderError, CaseError) as exc:  # the record keeps the steps taken and the workspace as left
            keep_partial(exc, _partial(session, snapshot(root), exc, sandbox_name))
            raise
        checks = await verify_completion(case, root, session.response, sandbox)
        files = snapshot(root)
    finally:
        remove_workspace(root)
    return session.transcript(files, session.stopped, sandbox_name, checks)


def _runs_programs(case: CaseSpec) -> bool:
    """Whether a ``command`` tool or a command check runs a program: then the case needs a sandbox."""
    assert case.agent is not None
    return any(tool.type == "command" for tool in case.agent.tools) or has_command_checks(case)


class _Session:
    """One case's loop: the transcript, every call, and why it stopped early (if it did)."""

    def __init__(self, case: CaseSpec, call_model: CallModel, toolbox: Toolbox) -> None:
        assert case.model is not None and case.agent is not None
        self.case = case
        self.model = case.model
        self.budget = case.agent.budget
        self.call_model = call_model
        self.toolbox = toolbox
        self.definitions = case.agent.definitions
        self.messages: list[Message] = []
        self.turns: list[TurnResult] = []
        self.completions: list[Completion] = []
        self.calls: list[ToolCallRecord] = []
        self.stopped: str | None = None
        self.started = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def response(self) -> str:
        answered = [turn for turn in self.turns if turn.answered]
        return (answered[-1].answer or "") if answered else ""

    def answered(self) -> list[TurnResult]:
        return [turn for turn in self.turns if turn.answered]

    async def play(self) -> None:
        case = self.case
        if case.turns is None:  # prompt: or messages: one user turn, already rendered
            history = list(case.messages)
            self.messages.extend(history)
            await self.answer(history, 1, 1)
            return
        index = 0
        for phase_number, phase in enumerate(case.turns.phases, 1):
            index = await self.play_phase(phase, phase_number, index)

    async def play_phase(self, phase: PhaseSpec, phase_number: int, index: int) -> int:
        """The phase's turns, numbered after turn ``index``; the number of its last turn."""
        history = list(phase_system(self.case, phase, self.answered(), phase_number, index + 1))
        self.messages.extend(history)
        for turn in phase.turns:
            index += 1
            await self.play_turn(turn, history, index, phase_number)
        return index

    async def play_turn(self, turn: TurnSpec, history: list[Message], index: int, phase_number: int) -> None:
        """Send the turn's user message and loop on its answer, unless the budget is spent or its gate is shut."""
        self.stopped = self.stopped or self.budget_exhausted()
        if self.stopped is not None:
            self.turns.append(skipped_turn(index, f"not sent: {self.stopped}", phase=phase_number))
            return
        user = open_turn(self.case, turn, self.answered(), index, phase_number)
        if isinstance(user, TurnResult):
            self.turns.append(user)
            return
        history.append(user)
        self.messages.append(user)
        await self.answer(history, index, phase_number)

    async def answer(self, history: list[Message], index: int, phase: int) -> None:
        """Loop until the model replies without calling a tool (or the budget stops it)."""
        context = tuple(history)
        last: Completion | None = None
        while True:
            self.stopped = self.stopped or self.budget_exhausted()
            if self.stopped is not None:
                break
            completion = await self.call(history)
            if completion is None:
                break
            last = completion
            reply = Message("assistant", completion.text, tool_calls=completion.tool_calls)
            history.append(reply)
            self.messages.append(dataclasses.replace(reply, name=self.model.label))
            if not completion.tool_calls:
                break
            await self.run_tools(completion, history, index)
        self.turns.append(self.turn_result(index, phase, context, last))

    def turn_result(self, index: int, phase: int, context: tuple[Message, ...], last: Completion | None) -> TurnResult:
        """The turn, answered by the model's last reply, or skipped when the budget stopped it before any."""
        if last is None:
            return skipped_turn(index, f"not answered: {self.stopped}", phase=phase)
        return answered_turn(index, len(self.completions), context, last, self.model.thinking, phase=phase)

    async def run_tools(self, completion: Completion, history: list[Message], index: int) -> None:
        """Carry out the reply's tool calls in order; their results go back to the model."""
        for call in completion.tool_calls:
            record = await self.toolbox.call(
                call, step=len(self.completions), turn=index, time_left_s=self.budget.max_seconds - self.elapsed
            )
            self.calls.append(record)
            result = Message("tool", record.output, name=call.name, tool_call_id=call.id)
            history.append(result)
            self.messages.append(result)

    async def call(self, history: list[Message]) -> Completion | None:
        """One model call, cut off when the case's time budget runs out (then None)."""
        request = CompletionRequest(
            model=self.model, messages=tuple(history), task=self.case.task, run=self.case.run,
            turn=len(self.completions) + 1, variables=self.case.variables, tools=self.definitions,
        )
        try:
            completion = await asyncio.wait_for(
                self.call_model(request), timeout=self.budget.max_seconds - self.elapsed
            )
        except asyncio.TimeoutError:  # only the budget's timeout: providers raise ProviderError for theirs
            self.stopped = f"max_seconds: the {self.budget.max_seconds:g} s budget ran out during a model call"
            return None
        self.completions.append(completion)
        return completion

    def budget_exhausted(self) -> str | None:
        if len(self.completions) >= self.budget.max_steps:
            return f"max_steps: stopped after {self.budget.max_steps} model calls"
        if self.elapsed >= self.budget.max_seconds:
            return f"max_seconds: stopped after {self.budget.max_seconds:g} s"
        return None


    def transcript(
        self, files: tuple[Mapping[str, Any], ...], stopped: str | None, sandbox: str | None,
        checks: dict[str, tuple[CheckResult, ...]] | None = None,
    ) -> Transcript:
        """The case's transcript: messages, answer, calls, and the agent's run (its ``checks``, when they ran)."""
        agent = self.case.agent
        assert agent is not None
        run = AgentRun(
            tools=tuple(tool.name for tool in agent.tools), tool_calls=tuple(self.calls), checks=checks or {},
            files=files, steps=len(self.completions), max_steps=agent.budget.max_steps,
            max_seconds=agent.budget.max_seconds, elapsed_s=self.elapsed, stopped=stopped, sandbox=sandbox,
        )
        return Transcript(
            messages=tuple(self.messages), response=self.response, completions=tuple(self.completions),
            turns=tuple(self.turns), text=transcript_text(self.messages, self.calls), agent=run,
        )


def _partial(session: _Session, files: tuple[Mapping[str, Any], ...], exc: ProviderError | CaseError,
             sandbox: str | None) -> Transcript:
    """What an agent had done when a model call or a template failed: its messages, tool calls and workspace.

    No checks ran.
    """
    if isinstance(exc, ProviderError):
        return session.transcript(files, f"error: a model call failed: {exc.kind}", sandbox)
    return session.transcript(files, "error: a template of the suite failed", sandbox)
