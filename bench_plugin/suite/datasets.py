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
