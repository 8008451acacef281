"""Scorer options checked against their defaults: unknown keys get a did-you-mean, values the type."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any


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
    for key in options:
        if key not in defaults and key not in ("name", "type"):
            close = difflib.get_close_matches(key, list(defaults), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown option {key!r} for {scorer}{hint} (options: {', '.join(defaults)})")
    merged = {**defaults, **{k: v for k, v in options.items() if k in defaults}}
    for key, default in defaults.items():
        value = merged[key]
        counted = (isinstance(default, int) and not isinstance(default, bool)) or key in optional_counts
        if isinstance(default, bool) and not isinstance(value, bool):
            raise TypeError(f"{key} must be true or false, got {value!r}")
        if isinstance(default, list) and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise TypeError(f"{key} must be a list of strings, got {value!r}")
        if counted and value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise TypeError(f"{key} must be a whole number >= 0, got {value!r}")
    return merged
