"""One prompt, one answer: the model sees the rendered messages and replies once."""

from __future__ import annotations

from bench_plugin.core.chat import CallModel, CompletionRequest, Message
from bench_plugin.core.transcript import Transcript, answered_turn
from bench_plugin.engines.structured_output import read_structured
from bench_plugin.suite.spec import CaseSpec


async def run_single_turn(case: CaseSpec, call_model: CallModel) -> Transcript:
    """Send the case's messages to its model and return the conversation with the answer appended.

    The transcript keeps the reply as sent back; the response (what scorers see) is the answer
    after the model's thinking tags, when it declares ``thinking:``. A task's function tools are offered
    (the calls the reply makes are kept on it: they are the answer), and its ``output_schema:`` asked for (the
    answer read as JSON, ``structured_output``).
    """
    assert case.model is not None, "cases without a model never reach an engine"
    request = CompletionRequest(
        model=case.model,
        messages=case.messages,
        task=case.task,
        run=case.run,
        turn=1,
        variables=case.variables,
        tools=case.functions,
        response_schema=case.output_schema,
    )
    completion = await call_model(request)
    turn = answered_turn(1, 1, case.messages, completion, case.model.thinking)
    reply = Message(role="assistant", content=completion.text, name=case.model.label, tool_calls=completion.tool_calls)
    schema = case.output_schema
    structured = read_structured(completion, schema, turn.answer or "") if schema is not None else None
    return Transcript(
        messages=(*case.messages, reply), response=turn.answer or "", completions=(completion,), turns=(turn,),
        structured_output=structured,
    )
