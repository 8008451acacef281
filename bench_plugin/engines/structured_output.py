"""An ``output_schema:`` task's answer read as JSON and checked against its schema."""

from __future__ import annotations

import json
from typing import Any

from bench_plugin.core.chat import Completion, ResponseSchema
from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.core.json_text import format_json_path
from bench_plugin.core.transcript import StructuredOutput

_SHOWN = 200  # characters of a reply that does not parse, quoted in the reason


def read_structured(completion: Completion, schema: ResponseSchema, answer: str) -> StructuredOutput:
    """The answer as JSON (what the wire format parsed, else ``answer``: the reply after any thinking), checked.

    The reply must be JSON itself, as structured outputs give it: a fenced block or words around it are a
    model failure, like an answer that does not match. A refusal is recorded as such, with the model's words.
    """
    if completion.refusal is not None:
        return StructuredOutput(schema.name, refusal=completion.refusal)
    try:
        value = completion.parsed if completion.parsed is not None else loads_bounded(answer)
    except ValueError as exc:
        return StructuredOutput(schema.name, problem=f"is not JSON ({_why(exc)}): {_shown(answer)}")
    return StructuredOutput(schema.name, value=value, problem=schema_problem(value, schema))


def schema_problem(value: Any, schema: ResponseSchema) -> str | None:
    """Why ``value`` does not match the schema (the most relevant error, and how many more), or None."""
    from jsonschema import Draft202012Validator  # start-up: only once an output_schema: answer is read
    from jsonschema.exceptions import best_match

    validator = Draft202012Validator(dict(schema.schema), format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = list(validator.iter_errors(value))
    if not errors:
        return None
    worst = best_match(errors)
    more = f" ({len(errors) - 1} more)" if len(errors) > 1 else ""
    message = worst.message if len(worst.message) <= _SHOWN else worst.message[:_SHOWN] + "..."
    return f"does not match output_schema at {format_json_path(list(worst.absolute_path))}: {message}{more}"


def _why(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)


def _shown(text: str) -> str:
    shown = text.strip()
    return json.dumps(shown[:_SHOWN] + ("..." if len(shown) > _SHOWN else ""), ensure_ascii=False)
