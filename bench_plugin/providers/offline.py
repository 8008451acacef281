"""Offline providers: echo, scripted replies and replay of recorded answers.

They are real providers behind the same interface as the HTTP ones (not test doubles), so a suite
runs end to end on a machine with no network and no key, and CI exercises every path.
"""

from __future__ import annotations

import fnmatch
import json
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench_plugin.core.chat import Completion, CompletionRequest, EmbeddingRequest, Embeddings, ToolCall
from bench_plugin.core.errors import CaseError, RecordedFailureError, ReplayMissError
from bench_plugin.providers.interface import BaseProvider
from bench_plugin.providers.text_vectors import DIMENSIONS, hashed_vector
from bench_plugin.suite.recordings import Recording, read_recordings, recording_fields
from bench_plugin.suite.templates import render_standalone


def last_user_text(request: CompletionRequest) -> str:
    """The content of the last user message, which offline providers answer."""
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def _media_note(request: CompletionRequest) -> str:
    """`` [image image/png cat.png, 412 bytes, sha256 3f2a9c01]`` for each image or audio of the last user message."""
    users = [message for message in request.messages if message.role == "user"]
    return "".join(f" [{part.describe()}]" for part in (users[-1].parts if users else ()))


def _media_digests(request: CompletionRequest) -> list[str]:
    """The SHA-256 of every image and audio clip the request carries (URLs have none)."""
    return [part.sha256 for message in request.messages for part in message.parts if part.sha256]


def _completion(text: str, started: float) -> Completion:
    return Completion(text=text, latency_s=time.perf_counter() - started, finish_reason="stop")


class OfflineProvider(BaseProvider):
    """What the offline providers share: embeddings computed here, the same for every offline type.

    An offline model named as a ``similar`` scorer's ``embedding_model`` embeds with hashed character
    trigrams (``text_vectors.py``, the vectors the mock server sends too): deterministic, no call,
    no tokens counted. They measure shared spelling, not meaning.
    """

    async def embed(self, request: EmbeddingRequest) -> Embeddings:
        """One hashed-trigram vector per text (the ``dimensions`` param sets their length)."""
        started = time.perf_counter()
        size = _dimensions(request)
        vectors = tuple(hashed_vector(text, size) for text in request.texts)
        return Embeddings(vectors, latency_s=time.perf_counter() - started)


def _dimensions(request: EmbeddingRequest) -> int:
    """The vectors' length: the model's ``dimensions`` param, a whole number of at least 1."""
    size = request.model.params.get("dimensions", DIMENSIONS)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise CaseError(f"model '{request.model.name}': dimensions must be a whole number of at least 1, "
                        f"got {size!r}")
    return size


class EchoProvider(OfflineProvider):
    """Answers with the last user message, after an optional ``prefix``: a smoke test of the plumbing.

    Its images and audio are named after the text (``[image image/png cat.png, 412 bytes, sha256 3f2a9c01]``).
    """

    async def complete(self, request: CompletionRequest) -> Completion:
        """Answer with the prefix, the last user message and what media it carries."""
        started = time.perf_counter()
        prefix = str(request.model.options.get("prefix", ""))
        return _completion(prefix + last_user_text(request) + _media_note(request), started)


REPLY_NAMES = frozenset({"groups", "last_user", "task", "run", "turn"})
"""What a scripted ``reply`` (and a tool call's arguments) sees besides the request's variables."""
KEY_NAMES = frozenset({"task_id", "model"})
"""What a replay model's ``model_key`` and ``task_key`` see besides the request's variables (``find_recordings``)."""


class ScriptedProvider(OfflineProvider):
    """Replies declared in YAML; the first rule whose matchers all hold answers.

    Matchers: ``task`` (id or glob), ``contains`` and ``regex`` (on the last user message), ``turn``,
    ``tool_result`` (a regex on the last message, when it is a tool result), ``purpose`` (``candidate``
    or ``judge``: a model under test that grades its own answers tells the two calls apart), ``image_sha256``
    (the request carries an image or audio clip whose SHA-256 starts with it).
    ``reply`` is a template that sees ``groups`` (the regex match), ``last_user``, ``task``, ``run``,
    ``turn`` and the case's variables; a list of replies gives one per turn. ``tool_calls`` (a list of
    ``{name, arguments}``, string arguments rendered like ``reply``) makes the reply call tools. ``json`` (data,
    its strings rendered like ``reply``) answers that data as JSON text, for ``output_schema:`` tasks;
    ``refusal`` (a template) makes the model decline, as OpenAI's ``refusal`` does.
    """

    async def complete(self, request: CompletionRequest) -> Completion:
        """Answer with the first matching rule's reply (and tool calls).

        Raises:
            CaseError: when no rule matches: a script must answer every call it is given.
        """
        started = time.perf_counter()
        text = last_user_text(request)
        for rule in request.model.options.get("script", []):
            groups = _match(rule, request, text)
            if groups is not None:
                return _scripted_reply(rule, request, groups, text, started)
        raise CaseError(
            f"scripted model '{request.model.name}' has no rule that answers task '{request.task}' "
            f"(turn {request.turn}, {request.purpose})",
            hint="add a rule without matchers, e.g. {reply: \"...\"}, as the last entry of script:",
        )


def _scripted_reply(
    rule: Mapping[str, Any], request: CompletionRequest, groups: list[str], text: str, started: float
) -> Completion:
    """The rule's ``reply`` (this turn's, from a list), rendered, and its ``tool_calls``."""
    # the names of REPLY_NAMES, which collection lets a reply read (providers/offline_checks.py)
    scope = {**request.variables, "groups": groups, "last_user": text, "task": request.task,
             "run": request.run, "turn": request.turn}
    if "refusal" in rule:
        words = render_standalone(str(rule["refusal"]), scope)
        return Completion(words, latency_s=time.perf_counter() - started, finish_reason="stop", refusal=words)
    completion = _completion(_reply_text(rule, request.turn, scope), started)
    if not rule.get("tool_calls"):
        return completion
    calls = tuple(
        ToolCall(f"call_{request.turn}_{i}", str(call["name"]),
                 json.dumps(_render_data(call.get("arguments", {}), scope)))
        for i, call in enumerate(rule["tool_calls"], 1)
    )
    return Completion(completion.text, latency_s=completion.latency_s, finish_reason="tool_calls", tool_calls=calls)


def _reply_text(rule: Mapping[str, Any], turn: int, scope: Mapping[str, Any]) -> str:
    """The rule's ``json`` as JSON text, else its ``reply`` (this turn's, from a list), rendered."""
    if "json" in rule:
        return json.dumps(_render_data(rule["json"], scope), ensure_ascii=False)
    reply = rule.get("reply", "")
    if isinstance(reply, list):
        reply = reply[min(turn, len(reply)) - 1]
    return render_standalone(reply, scope)


def _render_data(value: Any, scope: Mapping[str, Any]) -> Any:
    """Tool-call arguments with every string in them rendered as a template."""
    if isinstance(value, str):
        return render_standalone(value, scope)
    if isinstance(value, Mapping):
        return {str(key): _render_data(item, scope) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_data(item, scope) for item in value]
    return value


def _last_tool_result(request: CompletionRequest) -> str | None:
    last = request.messages[-1] if request.messages else None
    return last.content if last is not None and last.role == "tool" else None


def _task_holds(expected: Any, request: CompletionRequest, text: str) -> bool:
    return fnmatch.fnmatchcase(request.task, str(expected))


def _tool_result_holds(expected: Any, request: CompletionRequest, text: str) -> bool:
    result = _last_tool_result(request)
    return result is not None and _search(str(expected), result) is not None


def _turn_holds(expected: Any, request: CompletionRequest, text: str) -> bool:
    return bool(expected == request.turn)


def _purpose_holds(expected: Any, request: CompletionRequest, text: str) -> bool:
    return bool(expected == request.purpose)


def _contains_holds(expected: Any, request: CompletionRequest, text: str) -> bool:
    return str(expected) in text


def _image_holds(expected: Any, request: CompletionRequest, text: str) -> bool:
    return any(found.startswith(str(expected)) for found in _media_digests(request))


# a scripted rule's matchers other than ``regex``, in the order they are tried
_MATCHERS: dict[str, Callable[[Any, CompletionRequest, str], bool]] = {
    "task": _task_holds,
    "tool_result": _tool_result_holds,
    "turn": _turn_holds,
    "purpose": _purpose_holds,
    "contains": _contains_holds,
    "image_sha256": _image_holds,
}


def _match(rule: Mapping[str, Any], request: CompletionRequest, text: str) -> list[str] | None:
    """The ``groups`` a rule's reply sees when all its matchers hold (the last user text without a ``regex``)."""
    if not all(holds(rule[key], request, text) for key, holds in _MATCHERS.items() if key in rule):
        return None
    if "regex" not in rule:
        return [text]
    found = _search(str(rule["regex"]), text)
    return None if found is None else [found.group(0), *[g or "" for g in found.groups()]]


def _search(pattern: str, text: str) -> re.Match[str] | None:
    """A rule's pattern, searched; one that does not compile is the suite's mistake (collection finds it first)."""
    try:
        return re.search(pattern, text)
    except re.error as exc:
        raise CaseError(f"scripted rule regex {pattern!r} does not compile: {exc.msg}") from None


RECORDED_ERRORS = ("error", "xfail")


class ReplayProvider(OfflineProvider):
    """Serves answers recorded earlier, keyed by model, task, run and turn.

    Options (``replay:`` on the model or provider): ``file`` (JSONL), ``model_key`` (the model's name in
    the file, default its id), ``task_key`` (the task key, default the task id); both are templates
    over the case's variables, ``task_id`` and ``model`` (the candidate, also for a judge: a replay
    judge finds the verdict recorded for the answer it grades). ``fields`` says which record fields
    hold model / task / run / turn / response / error; a response may be a list, one entry per turn.
    A call with no recording raises ReplayMissError: the case is skipped with that reason, never
    scored. A recording whose error field is set replays that failure as RecordedFailureError (an
    infrastructure ERROR); ``recorded_errors: xfail`` marks such failures as expected (XFAIL).
    """

    async def complete(self, request: CompletionRequest) -> Completion:
        """Answer with the recording for this model, task, run and turn.

        Raises:
            ReplayMissError: when nothing was recorded for the call (the case is skipped).
            RecordedFailureError: when the recording is a failure, replayed as one.
        """
        started = time.perf_counter()
        options = request.model.options["replay"]
        model_key, task_key, entries = find_recordings(request)
        found = _find(entries, request.run, request.turn)
        where = f"model '{model_key}', task '{task_key}', run {request.run}, turn {request.turn}"
        if found is None:
            raise ReplayMissError(
                f"no recorded answer for {where} in {Path(options['file']).name}", kind="replay_miss"
            )
        text, error = found
        if error is not None:
            raise RecordedFailureError(
                f"{error} (recorded for {where} in {Path(options['file']).name})",
                expected=options.get("recorded_errors", "error") == "xfail",
            )
        return _completion(text, started)


def find_recordings(request: CompletionRequest) -> tuple[str, str, list[Recording]]:
    """The model and task keys a replay call looks up, and the recordings under them (maybe none).

    Raises:
        CaseError: when the replay file cannot be read or a key template fails.
    """
    options = request.model.options["replay"]
    scope = {**request.variables, "task_id": request.task}
    if request.purpose != "judge":  # a judge's request already names the candidate it grades
        model = request.model
        scope["model"] = model.template_vars()
    model_key = render_standalone(str(options.get("model_key", request.model.id)), scope)
    task_key = render_standalone(options["task_key"], scope) if "task_key" in options else request.task
    index = read_recordings(options["file"], recording_fields(options))
    return model_key, task_key, index.get((model_key, task_key), [])


def _find(entries: list[Recording], run: int, turn: int) -> tuple[str, str | None] | None:
    """(answer, recorded error) of the recording that serves this call, or None.

    Prefer a recording of this exact run; a recording without a run number serves every run. A
    recorded failure without a turn number fails every turn.
    """
    for wanted_run in (run, None):
        for rec_run, rec_turn, response, error in entries:
            if (rec_run if rec_run is None else int(rec_run)) != wanted_run:
                continue
            found = _served(rec_turn, response, error, turn)
            if found is not None:
                return found
    return None


def _served(rec_turn: Any, response: Any, error: Any, turn: int) -> tuple[str, str | None] | None:
    """What one recording of the right run gives turn ``turn``: its failure, its answer, or nothing."""
    if error is not None and _for_turn(rec_turn, turn, unnumbered=True):
        return "", str(error)
    if isinstance(response, list):  # one answer per turn
        return (_recorded_text(response[turn - 1]), None) if rec_turn is None and turn <= len(response) else None
    return (_recorded_text(response), None) if _for_turn(rec_turn, turn, unnumbered=turn == 1) else None


def _recorded_text(response: Any) -> str:
    """A recorded answer as text: an object (a structured answer, ``output_schema:``) as its JSON."""
    return json.dumps(response, ensure_ascii=False) if isinstance(response, Mapping) else str(response)


def _for_turn(rec_turn: Any, turn: int, *, unnumbered: bool) -> bool:
    """Whether a recording's turn number names ``turn``; ``unnumbered`` says what a recording without one does."""
    return unnumbered if rec_turn is None else int(rec_turn) == turn
