"""Reading a scorer's options at parse time: unknown keys get a did-you-mean, values their type.

Every scorer type's ``parse`` uses these, so a misspelt option reads the same whichever scorer has it:
``unknown option 'ignorecase' for contains; did you mean 'ignore_case'? (options: value, ...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from bench_plugin.core.hints import did_you_mean

IGNORED_KEYS = frozenset({"name", "type"})  # tolerated if a spec builder leaves them in options


def check_option_names(options: Iterable[str], allowed: Sequence[str], scorer: str) -> None:
    """Reject the first key of ``options`` that is not in ``allowed`` (``name`` and ``type`` pass).

    Raises:
        ValueError: ``unknown option 'x' for SCORER; did you mean 'y'? (options: a, b)``.
    """
    for key in options:
        if key not in allowed and key not in IGNORED_KEYS:
            guess = did_you_mean(key, allowed)
            hint = f"; {guess}" if guess else ""
            raise ValueError(f"unknown option {key!r} for {scorer}{hint} (options: {', '.join(allowed)})")


def is_number(value: Any) -> TypeGuard[int | float]:
    """A number as YAML or JSON gives it: an int or a float, not a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_known_keys(mapping: Iterable[str], allowed: Sequence[str], what: str, *, taker: str = "it") -> None:
    """Reject a nested mapping's unknown keys, all of them at once.

    Raises:
        ValueError: ``WHAT has unknown key(s) x, y; TAKER takes a, b``.
    """
    unknown = sorted(set(mapping) - set(allowed))
    if unknown:
        raise ValueError(f"{what} has unknown key(s) {', '.join(unknown)}; {taker} takes {', '.join(allowed)}")


def repeated(names: Sequence[str]) -> list[str]:
    """The names that appear more than once, sorted."""
    return sorted({name for name in names if names.count(name) > 1})


def check_choice(key: str, value: Any, allowed: Sequence[str]) -> str:
    """``value`` when it is one of ``allowed``.

    Raises:
        ValueError: ``KEY must be one of a, b, got 'c'``.
    """
    if value not in allowed:
        raise ValueError(f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def check_flag(key: str, value: Any) -> bool:
    """``value`` when it is a boolean.

    Raises:
        TypeError: ``KEY must be true or false, got 'yes'``.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{key} must be true or false, got {value!r}")
    return value


def merge_typed_options(
    options: Mapping[str, Any], defaults: Mapping[str, Any], scorer: str, *, optional_counts: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``defaults`` overlaid with ``options``, each value checked by its default's type.

    Booleans must be booleans, whole-number defaults (and ``optional_counts``, which may be None) must
    be whole numbers >= 0, list defaults lists of strings; other defaults are the caller's to check.

    Raises:
        ValueError: an unknown option (with a did-you-mean and the valid names).
        TypeError: a value of the wrong type.
    """
    check_option_names(options, list(defaults), scorer)
    merged = {**defaults, **{k: v for k, v in options.items() if k in defaults}}
    for key, default in defaults.items():
        _check_type(key, merged[key], default, counted=_is_count(default) or key in optional_counts)
    return merged


def _is_count(default: Any) -> bool:
    return isinstance(default, int) and not isinstance(default, bool)


def _is_count_or_none(value: Any) -> bool:
    """None, or a whole number >= 0."""
    return value is None or (_is_count(value) and value >= 0)


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _check_type(key: str, value: Any, default: Any, *, counted: bool) -> None:
    """Raises: TypeError when ``value`` is not of its default's type (a count: a whole number >= 0, or None)."""
    if isinstance(default, bool):
        check_flag(key, value)
    if isinstance(default, list) and not _is_strings(value):
        raise TypeError(f"{key} must be a list of strings, got {value!r}")
    if counted and not _is_count_or_none(value):
        raise TypeError(f"{key} must be a whole number >= 0, got {value!r}")
