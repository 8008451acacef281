"""Scorers a dataset row carries for itself, like promptfoo's ``__expected`` columns.

A row adds scorers to its case from two places:

- columns named ``__expected``, ``__expected1``, ``__expected2``... (promptfoo's CSV convention),
  each holding one scorer in promptfoo's shorthand (``contains: Paris``, ``icontains: paris``,
  ``regex: ^4$``, ``is-json``; text with no known prefix must equal the answer) or as JSON;
- the field the task's ``dataset.scorers`` names: a list of scorer mappings (the same keys as in
  ``scorers:``) or shorthand texts, one mapping, or one text (JSON text of either is read too);
  a row without the field has none.

Each scorer is checked against the suite schema's scorer definition, named like an unnamed task
scorer (``contains``, then ``contains_2`` when taken), and added after the task's scorers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import type_name
from bench_plugin.core.hints import closest
from bench_plugin.suite.datasets import DatasetSpec, lookup
from bench_plugin.suite.schema import describe, suite_schema
from bench_plugin.suite.scorers import scorer_spec
from bench_plugin.suite.spec import ScorerSpec

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.exceptions import ValidationError

EXPECTED_COLUMN = re.compile(r"^__expected\d*$")

#: promptfoo's assertion prefix -> (our scorer type, the option that takes the text, fixed options)
SHORTHANDS: Mapping[str, tuple[str, str | None, Mapping[str, Any]]] = {
    "equals": ("equals", "value", {}),
    "contains": ("contains", "value", {}),
    "icontains": ("contains", "value", {"ignore_case": True}),
    "not-contains": ("not_contains", "value", {}),
    "not-icontains": ("not_contains", "value", {"ignore_case": True}),
    "contains-any": ("contains", "value", {"mode": "any"}),
    "contains-all": ("contains", "value", {"mode": "all"}),
    "icontains-any": ("contains", "value", {"mode": "any", "ignore_case": True}),
    "icontains-all": ("contains", "value", {"mode": "all", "ignore_case": True}),
    "regex": ("regex", "pattern", {}),
    "starts-with": ("regex", "pattern", {}),
    "is-json": ("json_valid", None, {"extract": False}),
}
_LISTS = ("contains-any", "contains-all", "icontains-any", "icontains-all")  # comma-separated values
# promptfoo assertion types with no shorthand here: a cell naming one is a mistake, not an equality
_PEER_TYPES = (
    "llm-rubric", "model-graded-closedqa", "model-graded-factuality", "factuality", "similar", "javascript",
    "python", "levenshtein", "rouge-n", "bleu", "webhook", "moderation", "answer-relevance", "contains-json",
    "is-valid-openai-tools-call", "is-valid-openai-function-call", "cost", "latency", "perplexity", "classifier",
    "select-best", "not-equals", "not-regex", "not-starts-with", "g-eval", "context-faithfulness", "grade",
)
_PREFIX = re.compile(r"^(?P<prefix>[a-z][a-z-]*(?:\([^)]*\))?)(?::\s?(?P<value>.*))?$", re.DOTALL)
_HINT = ("write a scorer as a mapping in the field dataset.scorers names "
         '(e.g. [{"type": "contains", "value": "Paris"}]), or use a shorthand: ' + ", ".join(SHORTHANDS))


def row_scorers(
    dataset: DatasetSpec, record: Mapping[str, Any], row_index: int, taken: Sequence[str], path: str
) -> tuple[ScorerSpec, ...]:
    """The scorers ``record`` (one row of ``dataset``, number ``row_index``) carries, named apart from ``taken``.

    Raises:
        CaseError: at ``dataset:``, naming the row and column, for a scorer that cannot be read.
    """
    found = [*_expected_columns(record), *_listed(dataset, record, row_index, path)]
    names = set(taken)
    specs = []
    for where, raw in found:
        key = f"{dataset.key} (row {row_index}, {where})"
        entry = _entry(raw, dataset, row_index, where, path)
        _check(entry, key, dataset, path)
        name = _name(entry, names, dataset, key, path)
        names.add(name)
        specs.append(scorer_spec(entry, name, key, dataset.line, path=path, error=CaseError))
    return tuple(specs)


def _expected_columns(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(column, value)`` of the row's ``__expected`` columns that hold something."""
    return [(column, value) for column, value in record.items()
            if EXPECTED_COLUMN.match(str(column)) and value not in (None, "")]


def _listed(dataset: DatasetSpec, record: Mapping[str, Any], row_index: int, path: str) -> list[tuple[str, Any]]:
    """``(where, scorer)`` of the scorers in the field ``dataset.scorers`` names: a list, one, or JSON text of them."""
    if dataset.scorers is None:
        return []
    try:
        value = lookup(record, dataset.scorers)
    except CaseError:
        value = None  # a row with no scorers of its own (promptfoo: a test without assert)
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        value = _json(value, dataset, row_index, dataset.scorers, path)
    return [(f"{dataset.scorers}[{n}]", item) for n, item in enumerate(_as_list(value))]


def _as_list(value: Any) -> list[Any]:
    """A list as it is, nothing (None or "") as none, anything else as a list of one."""
    if isinstance(value, list):
        return value
    return [] if value in (None, "") else [value]


def _name(entry: Mapping[str, Any], names: set[str], dataset: DatasetSpec, key: str, path: str) -> str:
    """The scorer's own name, refused when taken; else its type, numbered apart from ``names`` (``contains_2``)."""
    name = entry.get("name")
    if name is not None:
        if name in names:
            raise _error(f"scorer name {name!r} is already taken by another scorer of the case", dataset, key, path)
        return str(name)
    name, n = entry["type"], 2
    while name in names:
        name, n = f"{entry['type']}_{n}", n + 1
    return str(name)


def parse_shorthand(text: str) -> dict[str, Any]:
    """One promptfoo shorthand as a scorer mapping.

    Example:
        >>> parse_shorthand("icontains: paris")
        {'type': 'contains', 'value': 'paris', 'ignore_case': True}
        >>> parse_shorthand("42")
        {'type': 'equals', 'value': '42'}

    Raises:
        ValueError: for a prefix that names a promptfoo assertion with no shorthand here, or is close to one that has.
    """
    match = _PREFIX.match(text.strip())
    if match is None:
        return {"type": "equals", "value": text}
    prefix, value = match.group("prefix"), match.group("value")
    if prefix not in SHORTHANDS:
        _refuse_near_miss(prefix, value)
        return {"type": "equals", "value": text}
    scorer_type, option, fixed = SHORTHANDS[prefix]
    if option is None:
        return {"type": scorer_type, **fixed}
    if value is None:
        raise ValueError(f"'{prefix}' needs a value: '{prefix}: TEXT'")
    return {"type": scorer_type, option: _option_value(prefix, value), **fixed}


def _refuse_near_miss(prefix: str, value: str | None) -> None:
    """Refuse text that names a promptfoo assertion with no shorthand here, or is close to a shorthand.

    Raises:
        ValueError: saying which.
    """
    bare = prefix.split("(")[0]
    if bare in _PEER_TYPES or bare.removeprefix("not-") in _PEER_TYPES:
        raise ValueError(f"'{bare}' has no shorthand here")
    guess = closest(bare, SHORTHANDS, cutoff=0.8) if value is not None else None
    if guess is not None:
        raise ValueError(f"unknown shorthand '{bare}' (did you mean '{guess}'?)")


def _option_value(prefix: str, value: str) -> Any:
    """The shorthand's text as its scorer's option: a list for ``contains-any``..., a regex for ``starts-with``."""
    if prefix in _LISTS:
        return [part.strip() for part in value.split(",") if part.strip()]
    if prefix == "starts-with":
        return "^" + re.escape(value)
    return value


def _entry(raw: Any, dataset: DatasetSpec, row_index: int, where: str, path: str) -> dict[str, Any]:
    key = f"{dataset.key} (row {row_index}, {where})"
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        raw = str(raw)
    if isinstance(raw, str) and raw.strip()[:1] != "{":
        try:
            return parse_shorthand(raw)
        except ValueError as exc:
            raise _error(str(exc), dataset, key, path) from exc
    if isinstance(raw, str):
        raw = _json(raw, dataset, row_index, where, path)
    return _mapping_entry(raw, dataset, key, path)


def _mapping_entry(raw: Any, dataset: DatasetSpec, key: str, path: str) -> dict[str, Any]:
    """A scorer written as a mapping (or JSON text of one), which may not ``use:`` a definition."""
    if not isinstance(raw, Mapping):
        raise _error(f"expected a scorer (a mapping or a shorthand text), got {type_name(raw)}", dataset, key, path)
    if "use" in raw:
        raise _error("use: works in the suite's scorers: lists, not in a dataset row", dataset, key, path)
    return dict(raw)


def _check(entry: Mapping[str, Any], key: str, dataset: DatasetSpec, path: str) -> None:
    errors = list(_validator().iter_errors(entry))
    if not errors:
        return
    where, message, hint = describe(_explaining(errors))
    at = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in where)
    raise _error(f"{at.lstrip('.') + ': ' if at else ''}{message}", dataset, key, path, hint)


def _explaining(errors: list[ValidationError]) -> ValidationError:
    """An unknown key (a typo) explains a missing one, as in the suite's own schema errors; else the best match."""
    from jsonschema.exceptions import best_match  # loaded by _validator already

    unknown = [error for error in errors if error.validator == "additionalProperties"]
    return unknown[0] if unknown else best_match(errors)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # start-up: as the suite's own validator (schema.py)

    return jsonschema.Draft202012Validator({"$ref": "#/$defs/scorer", "$defs": suite_schema()["$defs"]})


def _json(text: str, dataset: DatasetSpec, row_index: int, where: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        key = f"{dataset.key} (row {row_index}, {where})"
        raise _error(f"invalid JSON: {exc.msg} (column {exc.colno})", dataset, key, path) from exc


def _error(message: str, dataset: DatasetSpec, key: str, path: str, hint: str | None = _HINT) -> CaseError:
    return CaseError(message, path=path, line=dataset.line, key=key, hint=hint)
