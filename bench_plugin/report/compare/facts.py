"""What a comparison reads of one case record: who it is, what it asked, and how it did.

A comparison holds two whole result sets at once (the baseline's and the current run's); keeping of each case
only these few fields, instead of its transcript, bounds what it holds to a few hundred bytes per case.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.report.breakdowns import base_task
from bench_plugin.results.record import ERROR, FAILED, INVALID, PASSED, SKIPPED, CaseRecord
from bench_plugin.suite.variants import PROMPT_VARIABLE

CaseKey = tuple[str, str, str, str, int]
"""(suite path, task, prompt variant, model, run): the same case on both sides."""

_NO_SCORE = frozenset({ERROR, INVALID, SKIPPED})  # the case never reached its scorers
_PASS_VALUE = {PASSED: 1.0, FAILED: 0.0}  # a pass rate's unit: every other status has no pass or fail


@dataclass(frozen=True, slots=True)
class CaseFacts:
    """One case as a comparison sees it.

    Attributes:
        key: what pairs it with the other side's case (``CaseKey``).
        nodeid: the pytest node id, to list it.
        suite: the suite's name, to show it.
        cluster: the unit its figures are resampled by: its task with the prompt variant left out, so the runs
            and prompt variants of one task count together (``breakdowns.base_task``).
        model_id: the model's id at the endpoint (a new version under the same model name is still compared).
        status: the record's status (``record.STATUSES``).
        score: the composite score, None when the case has none (unscored, an error).
        passed: 1.0 passed, 0.0 failed, None otherwise: a pass rate counts only cases that passed or failed.
        reason: why it ended as it did, for the lists.
        prompt: a digest of the messages it sent.
        asked: the record's ``asked`` (a multi-turn, conversation or agent task's setup), None for others.
        scored_by: the record's ``scored_by`` (a named run's digest of its scoring), None when not kept.
        output: a digest of the final answer, None without one.
        cost_usd: what its calls cost, the judges' included; None when unknown.
        latency_s: the model's latency, None when unknown.
        tokens: input plus output tokens of the case model, None when unknown.
    """

    key: CaseKey
    nodeid: str
    suite: str
    cluster: str
    model_id: str
    status: str
    score: float | None
    passed: float | None
    reason: str
    prompt: str
    asked: str | None
    scored_by: str | None
    output: str | None
    cost_usd: float | None
    latency_s: float | None
    tokens: int | None

    @property
    def task(self) -> str:
        """The task id, as the record names it (with its prompt variant)."""
        return self.key[1]

    @property
    def run(self) -> int:
        """The run number."""
        return self.key[4]


def facts_of(record: CaseRecord) -> CaseFacts:
    """The facts of a whole record (a line of results.jsonl, with its messages and answer)."""
    variant = record.variables.get(PROMPT_VARIABLE)
    score = None if record.status in _NO_SCORE else record.composite
    return CaseFacts(
        key=(record.path, record.task, str(variant) if variant is not None else "", record.model, record.run),
        nodeid=record.nodeid, suite=record.suite or record.path, cluster=base_task(record), model_id=record.model_id,
        status=record.status, score=score, passed=_PASS_VALUE.get(record.status), reason=record.reason,
        prompt=digest(record.messages), asked=record.asked, scored_by=record.scored_by,
        output=None if record.response is None else digest(record.response),
        cost_usd=_cost(record.usage), latency_s=record.latency_s, tokens=_tokens(record.usage),
    )


def digest(value: Any) -> str:
    """A short digest of JSON data: equal data, equal digests, on every machine."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=12).hexdigest()


def _cost(usage: Mapping[str, Any]) -> float | None:
    judge = usage.get("judge")
    model_cost, judge_cost = usage.get("cost_usd"), judge.get("cost_usd") if isinstance(judge, Mapping) else 0.0
    return None if model_cost is None or judge_cost is None else float(model_cost) + float(judge_cost)


def _tokens(usage: Mapping[str, Any]) -> int | None:
    given, taken = usage.get("input_tokens"), usage.get("output_tokens")
    return None if given is None or taken is None else int(given) + int(taken)
