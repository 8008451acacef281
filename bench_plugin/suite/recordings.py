"""A replay model's recordings file (``replay: {file: ...}``), read once: which answer each model gave each task.

Read at collection to find a missing file, a line that is not JSON or a record without its fields before any
call (with the suite's line), and by the replay provider to answer from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import CaseError
from bench_plugin.core.json_bounds import BoundsError, loads_bounded
from bench_plugin.suite.datasets import lookup

Recording = tuple[Any, Any, Any, Any]
"""(run, turn, response, error) of one recorded call."""

DEFAULT_FIELDS = {"model": "model", "task": "task", "run": "run", "turn": "turn", "response": "response",
                  "error": "error"}


def recording_fields(options: Mapping[str, Any]) -> dict[str, str]:
    """Which record field holds each part, from a model's ``replay:`` options (``fields:`` renames them)."""
    return {**DEFAULT_FIELDS, **options.get("fields", {})}


def read_recordings(file: str, fields: Mapping[str, str]) -> dict[tuple[str, str], list[Recording]]:
    """(model, task) -> its recordings, read once per file and fields.

    Raises:
        CaseError: the file cannot be read, a line is not JSON, or a record lacks a field (naming the line).
    """
    return _read(file, json.dumps(dict(fields), sort_keys=True))


@lru_cache(maxsize=64)  # MT-Bench alone replays 31 answer files and a verdict file
def _read(file: str, fields_json: str) -> dict[tuple[str, str], list[Recording]]:
    fields = json.loads(fields_json)
    index: dict[tuple[str, str], list[Recording]] = {}
    for number, line in enumerate(_lines(file), 1):
        if line.strip():
            key, recording = _recording(line, fields, f"recordings file {Path(file).name}, line {number}")
            index.setdefault(key, []).append(recording)
    return index


def _lines(file: str) -> list[str]:
    try:
        return Path(file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read the recordings file {Path(file).name}: "
                        f"{getattr(exc, 'strerror', None) or exc}") from None


def _recording(line: str, fields: Mapping[str, str], where: str) -> tuple[tuple[str, str], Recording]:
    """One line's (model, task) and its recording: run, turn, response and error."""
    try:
        record = loads_bounded(line)
        key = (str(_field(record, fields["model"])), str(_field(record, fields["task"])))
        error = _optional(record, fields["error"]) or None  # "" and null both mean no failure
        # a failed call has no answer worth reading, so its response field may be absent
        response = _optional(record, fields["response"]) if error else _field(record, fields["response"])
    except json.JSONDecodeError as exc:
        raise CaseError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
    except CaseError as exc:
        raise CaseError(f"{where}: {exc.message}") from None
    except BoundsError as exc:
        raise CaseError(f"{where}: {exc}") from None
    return key, (_optional(record, fields["run"]), _optional(record, fields["turn"]), response, error)


def _field(record: Any, dotted: str) -> Any:
    try:
        return lookup(record, dotted)
    except CaseError:
        raise CaseError(f"the record has no field '{dotted}' (fields: names another)") from None


def _optional(record: Mapping[str, Any], dotted: str) -> Any:
    try:
        return lookup(record, dotted)
    except CaseError:
        return None
