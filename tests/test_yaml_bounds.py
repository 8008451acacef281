"""Aliases and nesting in an untrusted suite are bounded while the file is read, with the file and line."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import (
    MAX_ALIAS_CHARS,
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    LoadedSuite,
    load_suite_text,
)

# nine lists of nine, each made of the one before: 9 ** 9 (387 million) strings from 414 bytes
BILLION_LAUGHS = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def returns(call: Callable[[], Any]) -> Any:
    """Run ``call`` in a thread and give back what it returned or raised.

    A guard against a hang, not a timing: every load here takes milliseconds.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "loading did not return: a limit is missing"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def load(text: str) -> LoadedSuite:
    return returns(lambda: load_suite_text(text, path=Path("demo.yaml"), display_path="suites/demo.yaml"))


def refused(text: str) -> str:
    with pytest.raises(SuiteError) as info:
        load(text)
    return str(info.value)


def test_billion_laughs_is_refused_at_the_alias_that_crosses_the_limit() -> None:
    assert len(BILLION_LAUGHS.encode()) < 500
    message = refused(BILLION_LAUGHS)
    assert message == (
        f"suites/demo.yaml:6: f[0]: too many alias expansions: the suite expands to more than {MAX_ALIAS_NODES:,} "
        "nodes through aliases\n"
        "  hint: aliases may share a value a few times, not multiply it; put bulk data in a dataset file"
    )


def test_an_alias_bomb_inside_a_mapping_value_names_its_key_path() -> None:
    text = "models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    vars:\n" + "".join(
        f"      {line}\n" for line in BILLION_LAUGHS.splitlines()
    )
    assert refused(text).startswith("suites/demo.yaml:11: tasks[0].vars.f[0]: too many alias expansions")


def test_recursive_alias_is_a_suite_error_not_a_recursion_error() -> None:
    message = refused("a: &a [*a]\n")
    assert message.startswith("suites/demo.yaml:1: a[0]: recursive alias: the alias is inside the value it names")
    assert "hint: an alias may only refer to a value that is complete before the alias" in message


def test_recursive_alias_through_a_mapping_is_a_suite_error() -> None:
    assert "recursive alias" in refused("models:\n  a: &m\n    provider: echo\n    self: *m\n")


def test_aliases_repeating_long_text_are_bounded() -> None:
    text = f"prompt: &p '{'x' * 100_000}'\ncopies: [{', '.join(['*p'] * 101)}]\n"
    message = refused(text)
    assert message.startswith(
        f"suites/demo.yaml:2: copies[100]: too many alias expansions: aliases repeat more than "
        f"{MAX_ALIAS_CHARS:,} characters of text"
    )


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 5000 + "]" * 5000 + "\n",
        "a:\n" + "".join("  " * depth + "- \n" for depth in range(1, 200)),
        "a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n",
    ],
    ids=["flow-lists", "block-lists", "flow-mappings"],
)
def test_deep_nesting_is_a_suite_error_not_a_recursion_error(text: str) -> None:
    assert f"the data nests more than {MAX_DEPTH} levels deep" in refused(text)


def test_nesting_through_aliases_is_bounded() -> None:
    deep = "[" * 30 + "1" + "]" * 30
    text = f"a: &a {deep}\nb: {'[' * 30}*a{']' * 30}\n"
    message = refused(text)
    assert message.startswith("suites/demo.yaml:2: b")
    assert f"nests more than {MAX_DEPTH} levels deep once aliases are expanded" in message


def test_ordinary_aliases_and_merge_keys_load_with_their_lines() -> None:
    text = (
        "defaults: &model\n"  # 0
        "  provider: echo\n"  # 1
        "  temperature: 0\n"  # 2
        "models:\n"  # 3
        "  a: *model\n"  # 4
        "  b:\n"  # 5
        "    <<: *model\n"  # 6
        "    temperature: 1\n"  # 7
        "tasks:\n"  # 8
        "  - {id: t1, prompt: hi}\n"  # 9
    )
    loaded = load(text)
    assert loaded.data["models"] == {
        "a": {"provider": "echo", "temperature": 0},
        "b": {"provider": "echo", "temperature": 1},
    }
    assert loaded.lines.line_of(("models", "a")) == 4
    assert loaded.lines.line_of(("models", "b", "temperature")) == 7
    assert loaded.lines.line_of(("tasks", 0, "prompt")) == 9


def test_many_shared_blocks_stay_well_within_the_limit() -> None:
    text = "scorer: &s {type: contains, value: ok, weight: 1}\ntasks:\n" + "".join(
        f"  - {{id: t{n}, prompt: hi, scorers: [*s, *s]}}\n" for n in range(2000)
    )
    loaded = load(text)
    assert len(loaded.data["tasks"]) == 2000
    assert loaded.data["tasks"][1999]["scorers"][1] == {"type": "contains", "value": "ok", "weight": 1}
    assert loaded.lines.line_of(("tasks", 1999)) == 2001


def test_undefined_alias_names_its_line() -> None:
    assert refused("a: 1\nb: *nope\n").startswith("suites/demo.yaml:2:4: b: the alias 'nope' names no anchor")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1" * 5000, "suites/demo.yaml:2: models.a.seed: an integer of 5,000 digits is too long to read"),
        ("2024-13-01",
         "suites/demo.yaml:2: models.a.seed: cannot read '2024-13-01' as timestamp: month must be in 1..12"),
    ],
    ids=["long-integer", "impossible-date"],
)
def test_values_python_cannot_read_are_suite_errors(value: str, expected: str) -> None:
    message = refused(f"models:\n  a: {{provider: echo, seed: {value}}}\n")
    assert message.startswith(expected)
    assert message.endswith("hint: quote the value to keep it as text")
