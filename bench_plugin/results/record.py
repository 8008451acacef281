"""CaseRecord: everything known about one finished case, as plain data.

Records travel on pytest reports (``report.bench_record``), across xdist workers, into
``results.jsonl`` and back out for re-scoring, so they hold only JSON builtins. Keys never reach
them: providers redact before anything is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.frozen import thaw

RECORD_VERSION = 1

PASSED = "passed"
FAILED = "failed"
UNSCORED = "unscored"  # the grader could not decide: left out of averages
ERROR = "error"  # the infrastructure failed: timeout, 5xx, bad body; shown as pytest ERROR
INVALID = "invalid"  # the case itself is broken (suite problem): fails alone
SKIPPED = "skipped"  # nothing to run, e.g. an offline replay with no recorded answer

STATUSES = (PASSED, FAILED, UNSCORED, ERROR, INVALID, SKIPPED)
_ONLY_WHEN_SET = ("rejudged", "judgments", "model_params", "asked", "scored_by", "load", "structured_output")

# what the response cache did for a call (a ``call_log`` entry's ``cache``, absent when it was not asked):
CACHE_HIT = "hit"  # answered from the cache: no call made, ``cost_usd`` 0
CACHE_MISS = "miss"  # looked up, not found: the call was made (and, with --bench-cache on, its answer stored)
CACHE_REFRESH = "refresh"  # --bench-cache write: the call was made without looking, its answer stored
CACHE_USES = (CACHE_HIT, CACHE_MISS, CACHE_REFRESH)
CACHE_COUNTS = {CACHE_HIT: "hits", CACHE_MISS: "misses", CACHE_REFRESH: "refreshed"}  # the reports' names of each


@dataclass(frozen=True, slots=True)  # slots: a run keeps a record per case; a field dict was a third of one
class CaseRecord:
    """The full record of one case.

    Attributes:
        nodeid: the pytest node id, e.g. ``suites/qa.yaml::capital-france[gpt-4o-run1]``.
        status: one of ``STATUSES``; decides the pytest outcome.
        reason: one line a person reads next to the outcome.
        messages: the rendered prompt sent to the model, as role/content dicts.
        transcript: the whole conversation including the model's answers.
        response: the final answer text that scorers saw (the last answer of a conversation).
        turns: each turn: ``index``, ``phase``, ``call``, ``user``, ``raw`` (the reply as sent
            back), ``answer`` (what scorers see), ``thinking``, ``format_valid``, ``skipped``,
            ``skip_reason``, ``latency_s``, ``input_tokens``, ``output_tokens`` and ``scores``
            (per-turn scorer name -> value).
        conversation: a model-to-model conversation's log: ``mode``, ``participants`` (name,
            model, whether the model under test plays it, how it started, what it changed, its
            usage), ``entries`` (messages, notices and events in order), ``rounds``, ``max_turns``
            and ``ended`` (``reason``, ``by``, ``round``, ``detail``); None for other tasks.
        agent: a tool-using agent's run: ``tools``, ``tool_calls`` (each call: ``step``, ``turn``,
            ``name``, ``arguments``, ``ok``, ``output``, ``error``, ``family``, ``mutating``...),
            ``checks`` (per completion scorer), the final workspace ``files`` and the ``budget``
            (steps, seconds, why it stopped); None for other tasks.
        scores: ``ScoreSet.to_dict()``: components (with judge output), composite, threshold.
        usage: the case model's ``input_tokens``, ``output_tokens``, ``cost_usd``, ``calls`` and
            ``attempts`` (the call that failed an errored case included), ``cost_source`` (``suite`` or
            ``genai-prices <version>``) or ``cost_note`` (why there is no cost), and ``judge``: the same
            figures for the judges' calls, kept apart.
        finish_reason: why the model's last answer ended (``stop``, ``length``, ``tool_calls``...).
        response_id: the server's id of the model's last answer.
        call_log: every call the case made, judges' and failed ones included, in order: ``purpose``,
            ``model``, ``provider``, ``turn``, ``attempts``, and its tokens, ``cost_usd``, ``latency_s``,
            ``finish_reason`` and ``response_id``, or its ``error``; ``cache`` (``hit``, ``miss`` or
            ``refresh``, see ``CACHE_USES``) when the response cache was asked about it; a streamed answer's
            ``ttft_s``, ``tokens_per_s`` and ``itl_s`` (``core/chat.Completion``), never on a cache hit.
        error: ``{"kind", "type", "message"}`` when status is error, invalid or skipped; for an error,
            also ``attempts`` and ``call`` (which call failed: ``purpose``, ``model``, ``turn``, ``index``
            in ``call_log``), and ``partial: true`` when the transcript is what was said before it failed.
        case_index: position of the case in its suite's expansion; orders results the same way
            whether or not xdist ran them.
        load: the load step a case of a latency benchmark ran in (``load:``): its ``step`` (``in_flight=8``),
            ``kind``, ``value``, and the epoch seconds it ``started`` and ``ended`` at (a step's throughput).
        rejudged: set when ``--bench-rejudge`` scored the stored transcript again: ``at`` (when) and
            ``notes`` (what could not be judged again as it was, e.g. an agent's workspace checks); None
            when the scores are those of the run.
        judgments: the earlier score sets of a re-judged case, oldest first: ``judged_at``, ``status``,
            ``reason``, ``composite``, ``threshold``, ``scores``, ``judge_usage`` (and ``notes``).
        model_params: the request parameters the model was given (``temperature``, ``max_tokens``,
            ``seed``..., the suite's and ``--bench-model-arg``'s), so a figure says how it was sampled;
            left out when there are none.
        asked: a digest of what a ``turns:``, ``phases:``, ``conversation:`` or ``tools:`` task asked beyond its
            messages (``suite.asked``): resuming reuses the record only while the suite asks the same; left out
            for other tasks.
        scored_by: in a named run, a digest of how the case was scored (scorers, composite, threshold, judges:
            ``suite.asked.scoring_digest``): a reused record scored otherwise than the suite now says is noted.
        cluster: which cases it belongs with for the statistics (one resampling unit): the suite's ``cluster:``
            rendered for the case, by default its task's id without a prompt variant's suffix; None in records
            written before clusters existed (read them as the task).
        structured_output: an ``output_schema:`` task's answer read as JSON: ``schema`` (its name), ``value`` (the
            parsed JSON, which checks and judges read as the response's text), ``valid``, ``problem`` (why it does
            not parse or match: the case failed) and ``refusal`` (the model's words when it declined); left out
            for other tasks.
    """

    nodeid: str
    suite: str
    path: str
    task: str
    model: str
    model_id: str
    model_label: str
    provider: str
    run: int
    status: str
    reason: str = ""
    tags: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    response: str | None = None
    turns: list[dict[str, Any]] = field(default_factory=list)
    conversation: dict[str, Any] | None = None
    agent: dict[str, Any] | None = None
    scores: dict[str, Any] | None = None
    composite: float | None = None
    threshold: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    response_id: str | None = None
    call_log: list[dict[str, Any]] = field(default_factory=list)
    latency_s: float | None = None
    duration_s: float | None = None
    started_at: str | None = None
    error: dict[str, Any] | None = None
    case_index: int = 0
    rejudged: dict[str, Any] | None = None
    judgments: list[dict[str, Any]] = field(default_factory=list)
    model_params: dict[str, Any] = field(default_factory=dict)
    asked: str | None = None
    scored_by: str | None = None
    cluster: str | None = None
    load: dict[str, Any] | None = None
    structured_output: dict[str, Any] | None = None
    version: int = RECORD_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain builtins only, safe for xdist transport and JSON."""
        # thaw: a spec's frozen mapping or list copied into a record (a scorer option in a detail) is
        # a dict or list subclass, which JSON writes alike but xdist's transport refuses
        data = {name: thaw(getattr(self, name)) for name in _FIELD_NAMES}
        # only a re-judged case has these: every other record stays as it was before re-judging existed
        for name in _ONLY_WHEN_SET:
            if not data[name]:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseRecord:
        """Rebuild a record, ignoring keys this version does not know (newer writers)."""
        known = _KNOWN_FIELDS
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def for_reports(cls, data: Mapping[str, Any]) -> CaseRecord:
        """The record as the report files read it, no more: what the controller keeps to the end of the run.

        The conversation itself (``messages``, ``transcript``, ``response``, ``conversation``), an agent's tool
        calls and files, the earlier ``judgments`` and the like are left at their defaults; of ``scores`` only its
        ``components`` and why a case has no composite are kept, of each turn its ``index`` and ``format_valid``
        (turns without a format verdict are left out), of ``usage`` its tokens, cost and why a cost is unknown
        (and the same of the judges' ``judge``), and of each ``call_log`` entry its ``cache`` (entries without
        one are left out): ``results.jsonl`` holds the rest, and no report written from records reads it
        (``report/write.py``; a leaderboard's session digest reads the whole records back from the file).
        ``packed_records`` keeps them packed until the reports are written.
        """
        return cls(**reported_fields(data), **LEFT_OUT)

    @property
    def components(self) -> dict[str, dict[str, Any]]:
        """Component name -> component dict (value, raw, detail, judge_output...), in scorer order."""
        if not self.scores:
            return {}
        return {component["name"]: component for component in self.scores.get("components", [])}


def reported_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a whole record (``to_dict()``, a line of results.jsonl) that ``CaseRecord.for_reports`` keeps."""
    kept = {k: v for k, v in data.items() if k in REPORTED_FIELDS}
    for name, slim in _SLIMMERS.items():
        if kept.get(name):
            kept[name] = slim(kept[name])
    return kept


def _pick(data: Any, keys: Sequence[str]) -> Any:
    """The named keys of a mapping; anything else as it is (``record_problem`` says what is wrong with it)."""
    return {k: data[k] for k in keys if k in data} if isinstance(data, Mapping) else data


def _slim_turns(turns: Any) -> Any:
    """Only the thinking format's compliance per turn is reported (``report/turns.py``)."""
    if not isinstance(turns, list):
        return turns
    return [_pick(turn, _TURN_READ) for turn in turns
            if isinstance(turn, Mapping) and turn.get("format_valid") is not None]


def _slim_usage(usage: Any) -> Any:
    """Tokens and cost, the case model's and its judges' (``report/summary.py``)."""
    if not isinstance(usage, Mapping):
        return usage
    slim = _pick(usage, _USAGE_READ)
    if "judge" in usage:
        slim["judge"] = _pick(usage["judge"], _USAGE_READ)
    return slim


def _slim_call_log(calls: Any) -> Any:
    """What the reports read of the calls: each one's ``cache``, and the timing of the streamed ones.

    ``report/summary.py`` counts what the response cache did; ``report/latency.py`` times the streamed calls.
    """
    if not isinstance(calls, list):
        return calls
    return [_slim_call(call) for call in calls
            if isinstance(call, Mapping) and (call.get("cache") is not None or call.get("ttft_s") is not None)]


_CALL_READ = ("cache", "purpose", "model", "latency_s", "ttft_s", "tokens_per_s", "itl_s")


def _slim_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A streamed call's timing (and ``cache``), or another call's ``cache`` alone."""
    return _pick(call, _CALL_READ) if call.get("ttft_s") is not None else {"cache": call["cache"]}


def _slim_agent(agent: Any) -> Any:
    """Only whether its programs ran without a sandbox is reported."""
    return _pick(agent, ("sandbox",))


def _slim_scores(scores: Any) -> Any:
    """The components, and the reason a case shows (``report/summary.py``)."""
    return _pick(scores, ("components", "unscored_reason", "composite_detail"))


_SLIMMERS: dict[str, Callable[[Any], Any]] = {
    "scores": _slim_scores, "turns": _slim_turns, "usage": _slim_usage, "call_log": _slim_call_log,
    "agent": _slim_agent,
}
"""Per field of a record: what of it the reports read (``reported_fields``)."""


def json_safe(value: Any) -> Any:
    """Turn variables (which may hold tuples or other odd values from YAML) into JSON builtins.

    A ``data:`` URL (a dataset's image or audio) keeps only its head: records keep references to media, never
    their bytes (the message's ``parts`` say what was sent).
    """
    if isinstance(value, str):
        return _without_data(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return str(value)


def _without_data(text: str) -> str:
    head, found, data = text.partition(";base64,")
    if not found or not head.startswith("data:") or len(data) < 64:
        return text
    return f"{head};base64,[{len(data):,} characters of base64 left out]"


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(CaseRecord))
"""The record's fields, in order, looked up once: every report and every line of results.jsonl needs them."""
_KNOWN_FIELDS = frozenset(_FIELD_NAMES)
# what ``for_reports`` leaves out: fields no report file reads, and the texts of each turn
_NOT_REPORTED = frozenset({"messages", "transcript", "response", "conversation", "finish_reason", "response_id",
                           "duration_s", "rejudged", "judgments", "model_params", "asked", "scored_by",
                           "structured_output"})
_TURN_READ = ("index", "format_valid")  # of a turn
_USAGE_READ = ("input_tokens", "output_tokens", "cost_usd", "cost_note")  # and of ``usage`` (and its ``judge``)
REPORTED_FIELDS = _KNOWN_FIELDS - _NOT_REPORTED
"""The fields ``CaseRecord.for_reports`` keeps (of some, only part: ``reported_fields``)."""
# the left-out fields' values: one empty list and dict for every record (made per record, they were a few
# hundred bytes each); records are never changed in place
_NO_ITEMS: list[Any] = []
LEFT_OUT: dict[str, Any] = {name: None for name in _NOT_REPORTED}
LEFT_OUT.update(messages=_NO_ITEMS, transcript=_NO_ITEMS, judgments=_NO_ITEMS, model_params={})


_NUMBER = (int, float)
_FIELD_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "nodeid": ((str,), "text"), "suite": ((str,), "text"), "path": ((str,), "text"), "task": ((str,), "text"),
    "model": ((str,), "text"), "model_label": ((str,), "text"), "run": ((int,), "a whole number"),
    "status": ((str,), "text"), "reason": ((str,), "text"), "tags": ((list,), "a list"),
    "variables": ((dict,), "an object"), "messages": ((list,), "a list"), "transcript": ((list,), "a list"),
    "turns": ((list,), "a list"), "scores": ((dict, type(None)), "an object or null"),
    "composite": ((*_NUMBER, type(None)), "a number or null"),
    "threshold": ((*_NUMBER, type(None)), "a number or null"),
    "usage": ((dict,), "an object"), "call_log": ((list,), "a list"), "latency_s": ((*_NUMBER, type(None)), "a number"),
    "duration_s": ((*_NUMBER, type(None)), "a number"), "started_at": ((str, type(None)), "text"),
    "error": ((dict, type(None)), "an object or null"), "case_index": ((int, type(None)), "a whole number"),
    "judgments": ((list,), "a list"), "asked": ((str, type(None)), "text"),
    "scored_by": ((str, type(None)), "text"), "cluster": ((str, type(None)), "text"),
    "conversation": ((dict, type(None)), "an object or null"),
    "structured_output": ((dict, type(None)), "an object or null"),
    "model_id": ((str, type(None)), "text"), "provider": ((str, type(None)), "text"),
    "load": ((dict, type(None)), "an object or null"),
}
_LISTS_OF_OBJECTS = ("call_log", "turns", "messages", "transcript", "judgments")
"""Fields whose entries are objects: reports read each entry's keys."""
_USAGE_NUMBERS = ("input_tokens", "output_tokens", "cost_usd", "calls")


def record_problem(data: Mapping[str, Any]) -> str | None:
    """What in a stored record (a line of results.jsonl) is not what this version writes, or None.

    Records are read back to resume a run, re-judge it, merge shards and rebuild reports: a value of the wrong
    kind (a file edited by hand, another tool's line) failed there with a Python traceback.
    """
    for check in (_field_kind_problem, _status_problem, _entries_problem, _usage_problem, _components_problem,
                  _pairwise_problem, _conversation_problem):
        problem = check(data)
        if problem:
            return problem
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, _NUMBER) and not isinstance(value, bool)


def _is_number_or_none(value: Any) -> bool:
    return value is None or _is_number(value)


def _field_kind_problem(data: Mapping[str, Any]) -> str | None:
    for name, (kinds, expected) in _FIELD_KINDS.items():
        if name in data and (not isinstance(data[name], kinds) or isinstance(data[name], bool)):
            return f"'{name}' should be {expected}, got {data[name]!r:.40}"
    return None


def _status_problem(data: Mapping[str, Any]) -> str | None:
    if "status" in data and data["status"] not in STATUSES:
        return f"'status' should be one of {', '.join(STATUSES)}, got {data['status']!r:.40}"
    return None


def _usage_problem(data: Mapping[str, Any]) -> str | None:
    usage = data.get("usage") or {}
    for part in (usage, usage.get("judge") or {}):
        if not isinstance(part, Mapping):
            return "'usage.judge' should be an object"
        wrong = next((key for key in _USAGE_NUMBERS if not _is_number_or_none(part.get(key))), None)
        if wrong:
            return f"'usage.{wrong}' should be a number or null, got {part[wrong]!r:.40}"
    return None


def _is_named_object(component: Any) -> bool:
    return isinstance(component, Mapping) and isinstance(component.get("name"), str)


def _components_problem(data: Mapping[str, Any]) -> str | None:
    components = (data.get("scores") or {}).get("components", [])
    if not isinstance(components, list) or not all(map(_is_named_object, components)):
        return "'scores.components' should be a list of objects with a 'name'"
    for component in components:
        wrong = next((key for key in ("value", "raw") if not _is_number_or_none(component.get(key))), None)
        if wrong:
            return (f"'scores.components[{component['name']}].{wrong}' should be a number or null, "
                    f"got {component[wrong]!r:.40}")
    return None


def _entries_problem(data: Mapping[str, Any]) -> str | None:
    for name in _LISTS_OF_OBJECTS:
        entries = data.get(name) or []
        wrong = next((index for index, entry in enumerate(entries) if not isinstance(entry, Mapping)), None)
        if wrong is not None:
            return f"'{name}[{wrong}]' should be an object, got {entries[wrong]!r:.40}"
    if not all(isinstance(tag, str) for tag in data.get("tags") or []):
        return "'tags' should be a list of text"
    return None


def _pairwise_problem(data: Mapping[str, Any]) -> str | None:
    for component in (data.get("scores") or {}).get("components", []):
        pairwise = component.get("pairwise")
        if pairwise is None:
            continue
        orders = (pairwise.get("orders") or []) if isinstance(pairwise, Mapping) else None
        if not isinstance(orders, list) or not all(isinstance(order, Mapping) for order in orders):
            return f"'scores.components[{component['name']}].pairwise.orders' should be a list of objects"
    return None


_PARTICIPANT_KEYS = ("index", "name", "model")  # what a conversation's log reads of each participant
# an event's or a notice's keys; any other entry is a speaker's turn
_ENTRY_KEYS: dict[str, tuple[str, ...]] = {"event": ("round", "content"), "notice": ("round", "content")}
_SPOKEN_KEYS = ("round", "speaker", "content")


def _conversation_problem(data: Mapping[str, Any]) -> str | None:
    """A conversation as its log reads it (``report.conversation_log``): participants and entries, as objects."""
    conversation = data.get("conversation")
    if conversation is None:
        return None
    if not _is_conversation_outline(conversation):
        return "'conversation' should be an object with a mode, participants and entries"
    wrong = next((i for i, p in enumerate(conversation["participants"]) if not _is_participant(p)), None)
    if wrong is not None:
        return f"'conversation.participants[{wrong}]' is not a participant this version writes"
    wrong = next((i for i, entry in enumerate(conversation["entries"]) if not _is_entry(entry)), None)
    if wrong is not None:
        return f"'conversation.entries[{wrong}]' is not an entry this version writes"
    return None


def _is_conversation_outline(conversation: Mapping[str, Any]) -> bool:
    return (isinstance(conversation.get("mode"), str) and isinstance(conversation.get("ended") or {}, Mapping)
            and isinstance(conversation.get("participants"), list) and isinstance(conversation.get("entries"), list))


def _is_participant(participant: Any) -> bool:
    return (_has_keys(participant, _PARTICIPANT_KEYS) and _is_number_or_none(participant.get("temperature"))
            and all(_has_keys(message, ("role",)) for message in participant.get("context") or []))


def _is_entry(entry: Any) -> bool:
    return isinstance(entry, Mapping) and _has_keys(entry, _ENTRY_KEYS.get(str(entry.get("kind")), _SPOKEN_KEYS))


def _has_keys(value: Any, keys: Sequence[str]) -> bool:
    return isinstance(value, Mapping) and all(key in value for key in keys)
