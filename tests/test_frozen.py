"""Frozen values behave like the dicts and lists they replace, except that they cannot change."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest

from bench_plugin.core.frozen import FrozenDict, FrozenList, freeze, thaw, type_name
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.templates import TemplateRenderer

PLAIN = {"a": [1, {"b": [2, 3]}], "c": "x", "t": (1, [2])}


def test_freezing_reaches_every_level_and_keeps_equality() -> None:
    frozen = freeze(PLAIN)
    assert frozen == PLAIN
    assert isinstance(frozen, FrozenDict) and isinstance(frozen["a"], FrozenList)
    assert isinstance(frozen["a"][1], FrozenDict) and isinstance(frozen["t"][1], FrozenList)
    assert hash(frozen) == hash(freeze(copy.deepcopy(PLAIN)))
    assert freeze(frozen) is frozen


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v.__setitem__("z", 1),
        lambda v: v.update(z=1),
        lambda v: v.pop("c"),
        lambda v: v.setdefault("z", 1),
        lambda v: v["a"].append(4),
        lambda v: v["a"].__setitem__(0, 4),
        lambda v: v["a"].sort(),
        lambda v: v["a"].__iadd__([4]),
    ],
)
def test_a_frozen_value_refuses_every_change(change: object) -> None:
    frozen = freeze(PLAIN)
    with pytest.raises(TypeError, match="is frozen"):
        change(frozen)  # type: ignore[operator]
    assert frozen == PLAIN


def test_json_and_templates_see_what_they_saw_before() -> None:
    frozen = freeze(PLAIN)
    assert json.dumps(frozen) == json.dumps(PLAIN)
    renderer = TemplateRenderer(None)
    source = "{{ v }} {{ v.a }} {{ v.a[1].b|tojson }} {{ v.a|length }}"
    assert renderer.render(source, {"v": frozen}) == renderer.render(source, {"v": PLAIN})


def test_copies_and_pickles_stay_frozen_and_thaw_gives_builtins() -> None:
    frozen = freeze(PLAIN)
    for again in (copy.copy(frozen), copy.deepcopy(frozen), pickle.loads(pickle.dumps(frozen))):
        assert again == frozen and isinstance(again, FrozenDict)
    plain = thaw(frozen)
    assert plain == PLAIN and type(plain) is dict and type(plain["a"]) is list and type(plain["a"][1]) is dict


def test_messages_name_frozen_types_as_the_author_wrote_them() -> None:
    assert (type_name(freeze({})), type_name(freeze([])), type_name("x")) == ("dict", "list", "str")


def test_every_spec_of_an_expanded_suite_can_be_hashed(tmp_path: Path) -> None:
    text = (
        "models:\n  a: {provider: echo, params: {stop: ['x']}}\n"
        "variables: {rows: [{q: 1}]}\n"
        "scorers:\n  - {type: contains, value: ['a', 'b']}\n"
        "tasks:\n  - {id: 't{{ n }}', matrix: {n: [1, 2]}, prompt: '{{ rows }}', tags: {n: '{{ n }}'}}\n"
        "  - id: c\n    turns: [one, {content: two, when: {contains: x}}]\n"
    )
    loaded = load_suite_text(text, path=tmp_path / "demo.yaml", display_path="suites/demo.yaml")
    suite = build_suite(loaded)
    cases = expand_suite(suite)
    assert len({hash(case) for case in cases}) == len(cases) == 3
    assert hash(suite) == hash(suite)
    assert cases[0].messages[-1].content == "[{'q': 1}]"
