"""Rows of a dataset file (JSONL, CSV or a JSON list) that generate one task variant each."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_plugin.errors import CaseError


def load_rows(file: Path, fmt: str | None = None) -> list[dict[str, Any]]:
    """Read every row of a dataset file, in file order.

    Raises:
        CaseError: when the file is missing or a row is not an object; the message names the row.
    """
    fmt = fmt or {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".json": "json"}.get(file.suffix.lower())
    if fmt is None:
        raise CaseError(f"cannot tell the format of '{file.name}'", hint="set dataset.format: jsonl, csv or json")
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseError(f"cannot read dataset file {file}: {exc.strerror or exc}") from exc
    if fmt == "csv":
        return [dict(row) for row in csv.DictReader(text.splitlines())]
    if fmt == "json":
        rows = _parse_json(text, file.name)
        if not isinstance(rows, list):
            raise CaseError(f"{file.name}: expected a JSON list of objects, got {type(rows).__name__}")
    else:
        rows = [_parse_json(line, f"{file.name}:{n}") for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise CaseError(f"{file.name}: row {n} is {type(row).__name__}, expected an object")
    return rows


def load_dataset(data_dir: Path, dataset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a task's ``dataset:``, with the fields of its ``join:`` files added.

    Raises:
        CaseError: when a file cannot be read, or a ``join`` field is missing from its record.
    """
    rows = load_rows(data_dir / dataset["file"], dataset.get("format"))
    for join in dataset.get("join", []):
        rows = join_rows(rows, load_rows(data_dir / join["file"], join.get("format")), join)
    return rows


def join_rows(
    rows: list[dict[str, Any]], others: list[dict[str, Any]], join: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """A left join on ``join["key"]`` (a field of both, compared as text): each row gets the
    ``join["fields"]`` (``name: dotted path``) of the first record with its key value, or None for
    each when no record has it (MT-Bench: GPT-4's reference answers exist for 30 of 80 questions).
    """
    on, fields, name = join["key"], join["fields"], Path(join["file"]).name
    index: dict[str, dict[str, Any]] = {}
    for number, other in enumerate(others, 1):
        index.setdefault(str(_lookup_in(other, on, f"{name}, row {number}")), other)
    joined = []
    for number, row in enumerate(rows, 1):
        key = str(_lookup_in(row, on, f"dataset row {number}"))
        match = index.get(key)
        extra = {
            field: None if match is None else _lookup_in(match, path, f"{name}, the record for {on} {key}")
            for field, path in fields.items()
        }
        joined.append({**row, **extra})
    return joined


def _lookup_in(data: Any, dotted: str, where: str) -> Any:
    try:
        return lookup(data, dotted)
    except CaseError as exc:
        raise CaseError(f"{where}: {exc.message}") from exc


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from exc


def row_variables(row: Mapping[str, Any], fields: Mapping[str, str] | None) -> dict[str, Any]:
    """Variables for one row: every column by its own name, ``row`` for the whole record, and
    ``fields`` renames (``question: turns.0`` takes the first turn)."""
    variables = {k: v for k, v in row.items() if k.isidentifier()}
    variables["row"] = dict(row)
    for name, dotted in (fields or {}).items():
        variables[name] = lookup(row, dotted)
    return variables


def lookup(data: Any, dotted: str) -> Any:
    """Follow ``a.b.0.c`` through mappings and lists; raise CaseError naming the missing part."""
    current = data
    for part in dotted.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            raise CaseError(f"field '{dotted}' not found in a dataset row (no '{part}')")
    return current
