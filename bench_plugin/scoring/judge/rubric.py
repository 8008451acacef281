"""Rubrics: named categories with their points, shown to the judge and read back from its reply.

A category has a maximum (``{name: Philosophical Depth, max: 25}``: 0..25) or a scale
(``{name: Clarity, scale: [1, 5]}``). The judge's prompt sees the rubric as ``rubric`` (a list)
and ``rubric_text``; its reply is read per category, from lines such as
``### 1. Philosophical Depth (18/25)`` or ``**Clarity:** 4`` (``read: text``), or from a JSON
object with a field per category (``read: json``). A category that cannot be read is None (never
a silent 0) unless the rubric declares a ``default``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from bench_plugin.core.errors import JudgeError
from bench_plugin.core.json_text import PathStep, parse_json_path
from bench_plugin.scoring.judge.reply_json import values_at
from bench_plugin.scoring.options import check_known_keys, is_number, repeated

RUBRIC_KEYS = ("categories", "scale", "read", "json_field", "default")
CATEGORY_KEYS = ("name", "max", "scale", "key", "description")
READS = ("text", "json")
# after the category's name, a few non-word characters ("** (", ": ", " | "), then the score
_GAP = r"[^\w\n]{0,12}?"
_NUMBER = r"\d+(?:\.\d+)?"
_OUT_OF = r"\s*/\s*\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Category:
    """One rubric category: its name, its JSON key and its scale ``[low, high]``.

    ``patterns`` find its score after its name in a text reply: ``18/25`` first, else a bare number.
    """

    name: str
    key: str
    low: float
    high: float
    description: str = ""
    patterns: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The category as judge prompts see it (``max`` is ``high``, for rubrics written in points)."""
        return {"name": self.name, "key": self.key, "low": self.low, "high": self.high, "max": self.high,
                "description": self.description}


@dataclass(frozen=True)
class Rubric:
    """The categories and how to read them; ``default`` fills a category that cannot be read."""

    categories: tuple[Category, ...]
    read: str = "text"
    json_field: str | None = None
    default: float | None = None
    json_steps: tuple[PathStep, ...] = ()

    @property
    def low(self) -> float:
        """The lowest total: every category at its lowest."""
        return sum(category.low for category in self.categories)

    @property
    def high(self) -> float:
        """The highest total: every category at its highest."""
        return sum(category.high for category in self.categories)


def _scale_of(value: Any, where: str) -> tuple[float, float]:
    if not (isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value)):
        raise ValueError(f"{where} must be two numbers [lowest, highest], got {value!r}")
    low, high = float(value[0]), float(value[1])
    if low >= high:
        raise ValueError(f"{where} [{low:g}, {high:g}] must go from low to high")
    return low, high


def slug(name: str) -> str:
    """The JSON key of a category: ``Collaborative Meaning-Making`` -> ``collaborative_meaning_making``."""
    return re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_")


def _category(entry: Any, index: int, scale: tuple[float, float] | None) -> Category:
    where = f"rubric.categories[{index}]"
    entry = _category_entry(entry, where)
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where} needs name: the category's name as the judge writes it")
    low, high = _category_scale(entry, where, name, scale)
    key = entry.get("key", slug(name))
    if not isinstance(key, str) or not key:
        raise ValueError(f"{where}.key must be text, got {key!r}")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise TypeError(f"{where}.description must be text")
    return Category(name=name.strip(), key=key, low=low, high=high, description=description.strip(),
                    patterns=_score_patterns(name.strip(), low))


def _category_entry(entry: Any, where: str) -> Mapping[str, Any]:
    """A category as a mapping (a bare name is ``{name: ...}``), its keys checked."""
    if isinstance(entry, str):
        return {"name": entry}
    if not isinstance(entry, Mapping):
        raise TypeError(f"{where} must be a mapping such as {{name: Depth, max: 25}}, got {entry!r}")
    check_known_keys(entry, CATEGORY_KEYS, where, taker="a category")
    return entry


def _category_scale(
    entry: Mapping[str, Any], where: str, name: str, scale: tuple[float, float] | None
) -> tuple[float, float]:
    """The category's ``max`` (0 to it), its ``scale``, else the rubric's scale."""
    if "max" in entry and "scale" in entry:
        raise ValueError(f"{where} ({name}): give max or scale, not both")
    if "max" in entry:
        return 0.0, _points(entry["max"], where)
    if "scale" in entry:
        return _scale_of(entry["scale"], f"{where}.scale")
    if scale is None:
        raise ValueError(f"{where} ({name}) needs max (its points) or scale, or the rubric a scale")
    return scale


def _points(points: Any, where: str) -> float:
    """A category's ``max``: its points, a number above 0."""
    if not is_number(points) or points <= 0:
        raise ValueError(f"{where}.max must be a number above 0, got {points!r}")
    return float(points)


def rubric_from_options(value: Any) -> Rubric | None:
    """The ``rubric:`` option of a judge scorer, checked; None when there is none.

    Raises:
        ValueError: naming the key that is wrong.
    """
    if value is None:
        return None
    _check_rubric_keys(value)
    categories = _categories(value)
    read = value.get("read", "text")
    if read not in READS:
        raise ValueError(f"rubric.read must be one of {', '.join(READS)}, got {read!r}")
    json_field = value.get("json_field")
    steps = _json_steps(json_field, read)
    return Rubric(categories, read=read, json_field=json_field, default=_default(value.get("default")),
                  json_steps=steps)


def _categories(value: Mapping[str, Any]) -> tuple[Category, ...]:
    """``categories:``, each over the rubric's ``scale`` when it gives none, names and keys unique."""
    entries = value.get("categories")
    if not isinstance(entries, list) or not entries:
        raise ValueError("rubric needs categories: a list such as [{name: Depth, max: 25}, ...]")
    scale = _scale_of(value["scale"], "rubric.scale") if "scale" in value else None
    categories = tuple(_category(entry, index, scale) for index, entry in enumerate(entries))
    _check_unique(categories, "name")
    _check_unique(categories, "key")
    return categories


def _check_rubric_keys(value: Any) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(f"rubric must be a mapping with categories:, got {type(value).__name__}")
    check_known_keys(value, RUBRIC_KEYS, "rubric")


def _check_unique(categories: tuple[Category, ...], attribute: str) -> None:
    """Raises: ValueError when two categories share a name (or key), ignoring case."""
    twice = repeated([getattr(category, attribute).casefold() for category in categories])
    if twice:
        raise ValueError(f"rubric has two categories with the {attribute} {twice[0]!r}")


def _json_steps(json_field: Any, read: str) -> tuple[PathStep, ...]:
    """The path of ``json_field`` (only with ``read: json``); none without one."""
    if json_field is None:
        return ()
    if read != "json" or not isinstance(json_field, str):
        raise ValueError("rubric.json_field (a path such as scores) goes with read: json")
    return parse_json_path(json_field)


def _default(default: Any) -> float | None:
    if default is None:
        return None
    if not is_number(default):
        raise ValueError(f"rubric.default must be a number, got {default!r}")
    return float(default)


def rubric_variables(rubric: Rubric | None) -> dict[str, Any]:
    """What judge prompts see of a rubric; nothing when the scorer has none.

    ``rubric`` (the categories as mappings), ``rubric_text`` and ``rubric_total`` (the most points).
    """
    if rubric is None:
        return {}
    lines = [line for number, category in enumerate(rubric.categories, 1) for line in _lines(number, category)]
    return {"rubric": [category.to_dict() for category in rubric.categories], "rubric_text": "\n".join(lines),
            "rubric_total": rubric.high}


def _lines(number: int, category: Category) -> list[str]:
    """``2. Clarity (1 to 5)`` (or ``(25 points)``), then its description indented."""
    points = f"{category.high:g} points" if category.low == 0 else f"{category.low:g} to {category.high:g}"
    return [f"{number}. {category.name} ({points})", *(f"   {line}" for line in category.description.splitlines())]


def _name_pattern(name: str) -> str:
    return r"\s+".join(re.escape(word) for word in name.split())


def _score_patterns(name: str, low: float) -> tuple[re.Pattern[str], ...]:
    words = _name_pattern(name)
    # a sign only on a signed scale: in "Depth - 18/25" the dash is punctuation
    score = rf"(?P<score>{'[-+]?' if low < 0 else ''}{_NUMBER})"
    # "18/25" after the name is the surest sign of a score; a bare number only when there is none
    sources = (rf"{words}{_GAP}{score}(?={_OUT_OF})", rf"{words}{_GAP}{score}(?!\d|\.\d)")
    return tuple(re.compile(source, re.IGNORECASE) for source in sources)


def _score_from_text(text: str, category: Category) -> float:
    for pattern in category.patterns or _score_patterns(category.name, category.low):
        match = pattern.search(text)
        if match is not None:
            return float(match.group("score"))
    raise JudgeError(f"no score after {category.name!r}")


def _object_with_categories(text: str, rubric: Rubric) -> Mapping[str, Any]:
    keys = _field_names(rubric)
    found = next((found for found in values_at(text, rubric.json_steps) if _has_any(found, keys)), None)
    if found is not None:
        return found
    where = f" at {rubric.json_field!r}" if rubric.json_field else ""
    raise JudgeError(f"no JSON object{where} has a field named after a rubric category")


def _field_names(rubric: Rubric) -> set[str]:
    """The fields a category may be written under in JSON: its key or its name."""
    return {key for category in rubric.categories for key in (category.key, category.name)}


def _has_any(found: Any, keys: set[str]) -> TypeGuard[Mapping[str, Any]]:
    """An object with a field of one of ``keys``."""
    return isinstance(found, Mapping) and bool(keys & set(found))


def _score_from_json(found: Mapping[str, Any], category: Category) -> float:
    for key in (category.key, category.name):
        if key in found:
            value = found[key]
            if not is_number(value):
                raise JudgeError(f"{category.name!r} is {json.dumps(value)}, not a number")
            return float(value)
    raise JudgeError(f"no field {category.key!r}")


def read_categories(text: str, rubric: Rubric, *, clamp: bool = False) -> tuple[dict[str, float | None], list[str]]:
    """Each category's score in a judge's reply.

    Args:
        text: the judge's reply.
        rubric: the categories and how to read them.
        clamp: move a score outside its category's scale to the nearest end (else it is None).

    Returns:
        ``name -> score`` for every category, in rubric order (None where it could not be read and
        the rubric has no ``default``), and a list of what went wrong, for the record.
    """
    problems: list[str] = []
    found: Mapping[str, Any] | None = None
    if rubric.read == "json":
        try:
            found = _object_with_categories(text, rubric)
        except JudgeError as exc:
            problems.append(str(exc))
    scores: dict[str, float | None] = {}
    for category in rubric.categories:
        score, problem = _category_score(text, found, rubric, category, clamp)
        scores[category.name] = score
        if problem:
            problems.append(problem)
    return scores, problems


def _category_score(
    text: str, found: Mapping[str, Any] | None, rubric: Rubric, category: Category, clamp: bool
) -> tuple[float | None, str]:
    """One category's score (the rubric's default when unreadable), and what went wrong."""
    try:
        score = _read_score(text, found, rubric, category)
    except JudgeError as exc:
        if rubric.default is None:
            return None, f"{category.name}: {exc}"
        return rubric.default, f"{category.name}: {exc}; the rubric's default {rubric.default:g} was used"
    return _on_scale(score, category, clamp)


def _read_score(text: str, found: Mapping[str, Any] | None, rubric: Rubric, category: Category) -> float:
    """Raises: JudgeError when the category has no score in the reply."""
    if rubric.read != "json":
        return _score_from_text(text, category)
    if found is None:
        raise JudgeError("no JSON object with the categories")
    return _score_from_json(found, category)


def _on_scale(score: float, category: Category, clamp: bool) -> tuple[float | None, str]:
    """A score outside its category's scale is clamped when asked, else None."""
    if category.low <= score <= category.high:
        return score, ""
    scale = f"[{category.low:g}, {category.high:g}]"
    if clamp:
        return min(max(score, category.low), category.high), f"{category.name}: {score:g} clamped to {scale}"
    return None, f"{category.name}: {score:g} is outside {scale}"


def category_names(rubric: Rubric | None) -> list[str]:
    """The categories' names in rubric order (none without a rubric)."""
    return [category.name for category in rubric.categories] if rubric else []
