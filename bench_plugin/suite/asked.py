"""Digests of what a case asks beyond its messages (turns, a conversation, tools) and of how it is scored.

A named run reuses a finished case only while the suite asks it the same (``run_history``), and a re-judged
case says when the suite asks something else now (``rejudge.changed_since``). A one-prompt case is told by its
rendered messages and model id; a ``turns:``, ``phases:``, ``conversation:`` or ``tools:`` task has its
questions elsewhere (its messages hold at most a system prompt): a turn reworded, a seed, a partner's model or
a tool changed since would otherwise leave the stored answers standing for another question. How a case is
scored (``scoring_digest``) tells a named run that a reused record holds the scores of earlier scorers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.media import MediaPart
from bench_plugin.suite.spec import CaseSpec

_WHERE = frozenset({"key", "line", "copies", "readable"})
"""Fields that say where something is written (a YAML line, a file on this machine), not what is asked."""
_ADDED = frozenset({"parts", "media"})
"""Fields added since records were first kept (a message's and a turn's images): left out while empty, so that a
named run made before them still finds its records asked the same."""


def asked_digest(case: CaseSpec) -> str | None:
    """A digest of the case's turns, conversation, agent setup, answer schema and function tools.

    None for a case whose messages say it all.
    """
    asked = (("turns", case.turns), ("conversation", case.conversation), ("agent", case.agent),
             ("output_schema", case.output_schema), ("functions", case.functions or None))
    parts = {name: _plain(value) for name, value in asked if value is not None}
    return _digest(parts) if parts else None


def scoring_digest(case: CaseSpec) -> str:
    """A digest of how the case is scored: its scorers, composite, pass threshold and judges' model ids.

    A named run keeps it in each record (``scored_by``): a record reused after a scorer was added, a rubric or a
    formula changed, is said to hold the earlier scoring (``--bench-rejudge`` scores it again).
    """
    parts = {"scorers": _plain(case.scorers), "composite": _plain(case.composite), "threshold": case.pass_threshold,
             "judges": {name: model.id for name, model in sorted(case.judges.items())}}
    return _digest(parts)


def _digest(parts: Mapping[str, Any]) -> str:
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _plain(value: Any) -> Any:
    """``value`` as JSON data: a model by its id (its endpoint may move), without where things are written."""
    if isinstance(value, ModelSpec):
        return value.id
    if isinstance(value, MediaPart):  # a turn's image by what it is, not where this machine keeps it
        return value.reference()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain_fields(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return _plain_scalar(value)


def _plain_fields(value: Any) -> dict[str, Any]:
    """A dataclass's fields as JSON data, without those that say where it is written (nor media when there is none)."""
    return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
            if f.name not in _WHERE and not (f.name in _ADDED and not getattr(value, f.name))}


def _plain_scalar(value: Any) -> Any:
    """A value that holds no others as JSON data: a path by its name, an object by its type."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, PurePath):
        return value.name
    return repr(value) if not hasattr(value, "__dict__") else type(value).__name__
