"""Validate suite data against the JSON Schema and say what is wrong in the suite author's words."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from bench_plugin.core.errors import SuiteError, all_of
from bench_plugin.core.hints import did_you_mean
from bench_plugin.suite.loader import LoadedSuite, PathPart, format_key_path

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.exceptions import ValidationError

_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "null": "null",
}


@lru_cache(maxsize=1)
def suite_schema() -> dict[str, Any]:
    """The suite JSON Schema shipped inside the package (``schemas/`` holds a checked copy)."""
    text = resources.files("bench_plugin.suite").joinpath("suite.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # start-up: every pytest run loads the plugin, and only suites are validated (31 ms)

    return jsonschema.Draft202012Validator(suite_schema())


def check_against_schema(loaded: LoadedSuite) -> None:
    """Raise every schema error at once, each a SuiteError with file, line, key path and a hint (``all_of``).

    Also refuses a value YAML 1.1 reads in a surprising way (``Yes`` as true, ``1:30`` as 90) where the
    schema would take the text as well, since the suite then means something its author did not write.
    """
    errors = list(_validator().iter_errors(loaded.data))
    problems = _schema_problems(loaded, errors) if errors else _surprising_scalars(loaded)
    error = all_of(problems)
    if error is not None:
        raise error


def _schema_problems(loaded: LoadedSuite, errors: list[ValidationError]) -> list[SuiteError]:
    """One problem per place the schema found wrong (each unknown key its own), in file order, each said once."""
    def line_of(error: ValidationError) -> int:
        return loaded.lines.line_of(tuple(error.absolute_path)) or 0

    by_place: dict[tuple[PathPart, ...], list[ValidationError]] = {}
    for error in errors:
        by_place.setdefault(tuple(error.absolute_path), []).append(error)
    described = dict.fromkeys(
        description
        for group in by_place.values()
        for each in _each_unknown_key(_most_relevant(group, line_of))
        for description in [_as_written(each, loaded.lines.plain)]
    )
    found = [_error_at(loaded, path, message, hint) for path, message, hint in described]
    return sorted(found, key=lambda problem: problem.line if problem.line is not None else -1)


def _each_unknown_key(error: ValidationError) -> list[ValidationError]:
    """An error naming several unknown keys of one mapping as one error per key (each has its own line)."""
    instance: Any = error.instance
    schema: Any = error.schema
    if error.validator != "additionalProperties" or not isinstance(instance, dict) or not isinstance(schema, dict):
        return [error]
    extra = sorted(set(instance) - set(schema.get("properties", {})), key=list(instance).index)
    if len(extra) < 2:
        return [error]
    return [_with_instance(error, {name: instance[name]}) for name in extra]


def _with_instance(error: ValidationError, instance: dict[str, Any]) -> ValidationError:
    """A copy of an additionalProperties error about ``instance`` alone (its one unknown key)."""
    from jsonschema.exceptions import ValidationError as Error  # loaded by _validator already

    return Error(error.message, validator=error.validator, path=error.absolute_path, instance=instance,
                 schema=error.schema, validator_value=error.validator_value)


def _error_at(loaded: LoadedSuite, path: tuple[PathPart, ...], message: str, hint: str | None) -> SuiteError:
    """The SuiteError for the value at ``path``: its line, key path and the line itself."""
    line = loaded.lines.line_of(path)
    return SuiteError(
        message,
        path=loaded.display_path,
        line=line,
        key=format_key_path(path) or None,
        hint=hint,
        excerpt=loaded.excerpt(line, context=0),
    )


def _as_written(error: ValidationError, plain: Mapping[tuple[PathPart, ...], str]) -> _Description:
    """``describe``, but where a string was expected, naming what the author wrote, not what YAML made of it.

    ``got True`` for ``Yes`` reads as a bug of ours; ``got Yes, which YAML reads as the boolean true`` does not.
    """
    path, message, hint = describe(error)
    shown = _show(error.instance)
    written = plain.get(path)
    if written is None or "a string" not in message or not message.endswith(f"got {shown}"):
        return path, message, hint
    if error.instance is None:
        return path, message, hint or 'a key with no value is null in YAML; write "" for empty text'
    message = f"{message[: -len(shown)]}{written}, which YAML reads as {_reading(error.instance, written)}"
    return path, message, hint or _quote_hint(path, written)


def _most_relevant(errors: list[ValidationError], line_of: Callable[[ValidationError], int]) -> ValidationError:
    """The first error in file order, refined into the branch of a oneOf that fits the value."""
    # file order first; at one spot an unknown key explains a missing one (a typo), so it goes first
    errors.sort(key=lambda e: (line_of(e), e.validator != "additionalProperties"))
    error = errors[0]
    while (fitting := _fitting_branch(error)) is not None:
        error = fitting
    return error


def _fitting_branch(error: ValidationError) -> ValidationError | None:
    """For a oneOf or anyOf, the error inside the branch that fits the value; None when no branch does."""
    if not _is_choice_of_shapes(error):
        return None
    fitting = [e for e in error.context if e.validator != "type"]
    return _explaining(fitting) if fitting else None


def _is_choice_of_shapes(error: ValidationError) -> bool:
    """A oneOf or anyOf that chooses between shapes (not 'exactly one of these keys'), with the branches' errors."""
    return error.validator in ("oneOf", "anyOf") and bool(error.context) and not _exactly_one_of(error)


def _explaining(fitting: list[ValidationError]) -> ValidationError:
    """Of the errors in the branches that fit the value's type, the one that explains the others."""
    from jsonschema.exceptions import best_match  # loaded by _validator already

    # as above: in the branch that fits, an unknown key (a typo) explains the rest; best_match
    # would jump past it into a nested oneOf, so one fitting error is taken as it is
    unknown = [e for e in fitting if e.validator == "additionalProperties"]
    if unknown:
        return unknown[0]
    return fitting[0] if len(fitting) == 1 else best_match(fitting)


_Description = tuple[tuple[PathPart, ...], str, str | None]  # (key path, 'expected ..., got ...', hint)


def describe(error: ValidationError) -> _Description:
    """Turn a jsonschema error into (key path, 'expected ..., got ...', hint)."""
    path: tuple[PathPart, ...] = tuple(error.absolute_path)
    describer = _DESCRIBERS.get(str(error.validator))
    if describer is None:
        return path, error.message, None
    return describer(error, path)


def _unknown_key(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    instance: Any = error.instance
    schema: Any = error.schema
    allowed = sorted(schema.get("properties", {}))
    extra = sorted(set(instance) - set(allowed)) if isinstance(instance, dict) else []
    key = extra[0] if extra else "?"
    hint = did_you_mean(key, allowed) or (f"valid keys here: {', '.join(allowed)}" if allowed else None)
    return (*path, key), f"unknown key '{key}'", hint


def _missing_key(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    instance: Any = error.instance
    value: Any = error.validator_value
    missing = [k for k in value if isinstance(instance, dict) and k not in instance]
    return path, f"missing required key '{missing[0] if missing else value[0]}'", None


def _wrong_type(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    value: Any = error.validator_value
    wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in ([value] if isinstance(value, str) else value))
    return path, f"expected {wanted}, got {_show(error.instance)}", None


def _not_a_choice(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    value: Any = error.validator_value
    choices = ", ".join(str(v) for v in value)
    hint = did_you_mean(str(error.instance), [str(v) for v in value]) or None
    return path, f"expected one of {choices}, got {_show(error.instance)}", hint


def _not_the_constant(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    return path, f"expected {error.validator_value!r}, got {_show(error.instance)}", None


_SIGNS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def _out_of_bounds(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    sign = _SIGNS[str(error.validator)]
    return path, f"expected a number {sign} {error.validator_value}, got {_show(error.instance)}", None


_UNITS = {"minItems": "item", "minProperties": "entry", "minLength": "character"}


def _too_few(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    value: Any = error.validator_value
    what = _UNITS[str(error.validator)]
    return path, f"expected at least {value} {what}{'s' if value != 1 else ''}, got {_show(error.instance)}", None


def _too_many(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    instance: Any = error.instance
    return path, f"expected at most {error.validator_value} items, got {len(instance)}", None


def _no_match(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    schema: Any = error.schema
    if path and path[-1] == "base_url":  # not quoted: it may hold a password
        return path, "expected an http:// or https:// URL without user:password@", _pattern_hint(path)
    if isinstance(schema, dict) and isinstance(schema.get("x-expected"), str):
        return path, f"expected {schema['x-expected']}, got {_show(error.instance)}", None  # in words, not a regex
    return path, f"{_show(error.instance)} does not match the pattern {error.validator_value}", _pattern_hint(path)


def _no_branch(error: ValidationError, path: tuple[PathPart, ...]) -> _Description:
    value: Any = error.validator_value
    if _exactly_one_of(error):
        return path, _not_exactly_one(error), None
    shapes = sorted({_TYPE_WORDS.get(str(b.get("type")), "another shape") for b in value})
    return path, f"expected {' or '.join(shapes)}, got {_show(error.instance)}", None


def _not_exactly_one(error: ValidationError) -> str:
    instance: Any = error.instance
    branches: Any = error.validator_value
    keys = [branch["required"][0] for branch in branches]
    present = [k for k in keys if isinstance(instance, dict) and k in instance]
    found = f"found {', '.join(present)}" if present else "found none"
    return f"expected exactly one of {', '.join(keys)}; {found}"


_DESCRIBERS: dict[str, Callable[[ValidationError, tuple[PathPart, ...]], _Description]] = {
    "additionalProperties": _unknown_key,
    "required": _missing_key,
    "type": _wrong_type,
    "enum": _not_a_choice,
    "const": _not_the_constant,
    **dict.fromkeys(_SIGNS, _out_of_bounds),
    **dict.fromkeys(_UNITS, _too_few),
    "maxItems": _too_many,
    "pattern": _no_match,
    "oneOf": _no_branch,
    "anyOf": _no_branch,
}


# YAML 1.1 (PyYAML) reads these as booleans; YAML 1.2 and most people read them as words
_WORD_BOOLEANS = {"yes", "no", "on", "off"}
# 1:30 (base 60), 0123 (octal) and 1_000 are numbers to PyYAML, and rarely what was meant in text
_SURPRISING_NUMBER = re.compile(r"[-+]?(?:\d[\d_]*:[\d:._]*|0[0-9_]+|\d*_[\d_.]*)")


def _surprising_scalars(loaded: LoadedSuite) -> list[SuiteError]:
    """``Yes``/``on`` read as booleans, ``1:30`` as 90..., where the schema takes the text too; numbers not finite.

    Each is a SuiteError at the value's line, saying what YAML read and to quote it.
    """
    found = []
    for path, written in loaded.lines.plain.items():
        value = _value_at(loaded.data, path)
        if isinstance(value, float) and not math.isfinite(value):  # every number in a suite counts or bounds
            # something: `timeout: .nan` failed every call, `rpm: .inf` meant none
            found.append(_error_at(loaded, path, f"expected a finite number, got {written}",
                                   "write a number; text in quotes"))
        # the schema may take only the boolean or number here (``extract: yes``): then it is what was meant
        elif _surprising(value, written) and _takes_text(loaded.data, path, written):
            found.append(_misread(loaded, path, value, written))
    return found


def _surprising(value: Any, written: str) -> bool:
    """Whether YAML 1.1 made a boolean or number of text few people would write as one."""
    if isinstance(value, bool):
        return written.lower() in _WORD_BOOLEANS
    return isinstance(value, (int, float)) and _SURPRISING_NUMBER.fullmatch(written) is not None


def _takes_text(data: Any, path: tuple[PathPart, ...], written: str) -> bool:
    return not any(True for _ in _validator().iter_errors(_replaced(data, path, written)))


def _misread(loaded: LoadedSuite, path: tuple[PathPart, ...], value: Any, written: str) -> SuiteError:
    message = f"{written!r} was read as {_reading(value, written)}, not as text"
    hint = _quote_hint(path, written)
    if isinstance(value, bool):
        message += " (YAML 1.1 reads yes/no/on/off as booleans)"
        hint += f"; for a boolean write {str(value).lower()}"
    return _error_at(loaded, path, message, hint)


def _value_at(data: Any, path: Sequence[PathPart]) -> Any:
    for part in path:
        data = data[part]
    return data


def _replaced(data: Any, path: Sequence[PathPart], value: Any) -> Any:
    """``data`` with the value at ``path`` replaced; only the containers on the path are copied."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy: Any = list(data) if isinstance(data, list) else dict(data)
    copy[head] = _replaced(data[head], rest, value)
    return copy


def _reading(value: Any, written: str) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return "a number" if str(value) == written else f"the number {value!r}"


def _quote_hint(path: Sequence[PathPart], written: str) -> str:
    key = f"{path[-1]}: " if path and isinstance(path[-1], str) else ""
    return f"quote it to keep it as text: {key}{json.dumps(written, ensure_ascii=False)}"


def _exactly_one_of(error: ValidationError) -> bool:
    branches: Any = error.validator_value
    return isinstance(branches, list) and all(set(b) == {"required"} and len(b["required"]) == 1 for b in branches)


def _pattern_hint(path: tuple[PathPart, ...]) -> str | None:
    if path and path[-1] == "base_url":
        return "reports print the URL: the key goes in api_key_env, other credentials in headers"
    if path and path[0] in ("models", "judges"):
        return "model names may use letters, digits and _ . : / @ + -"
    if path and path[-1] == "name":
        return "component names are identifiers (letters, digits, _) so formulas can use them"
    return None


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if value is None:
        return "nothing (null)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
