"""libyaml's parser reads a suite as PyYAML's Python parser does; what the two read differently goes to the latter.

Every comparison here loads a text twice: as ``load_suite_text`` does (libyaml's C parser when PyYAML has it,
the Python parser on any problem), and with the Python parser alone, as before libyaml was used. Data, line
map, written plain values and error messages must all be the same.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench_plugin.suite import loader
from bench_plugin.suite.loader import load_suite_text

REPO = Path(__file__).resolve().parents[1]
BUNDLED = sorted(p for p in (REPO / "suites").rglob("*.yaml"))

pytestmark = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML was built without libyaml")

PLAIN = """\
models:
  parrot: {provider: echo}
tasks:
  - {id: hello, prompt: Hello}
"""


def _typed(value: Any) -> Any:
    """The value with every scalar's type spelled out: 1, 1.0 and True must not compare equal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return type(value).__name__, repr(value)


def outcome(text: str) -> tuple[Any, ...]:
    """What loading ``text`` gives: the data, lines and plain values, or the error's message."""
    try:
        loaded = load_suite_text(text, path=Path("demo.yaml"), display_path="suites/demo.yaml")
    except Exception as exc:  # any error: its type and words are compared
        return "error", type(exc).__name__, str(exc)
    return "ok", _typed(loaded.data), loaded.lines.lines, loaded.lines.plain


@pytest.fixture
def both(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """Load a text as the loader does, then with the Python parser alone."""

    def load(text: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        default = outcome(text)
        with monkeypatch.context() as patch:
            patch.setattr(loader, "_LibyamlLoader", None)
            python = outcome(text)
        return default, python

    return load


@pytest.fixture
def parsers_used(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The loader classes ``load_suite_text`` tried, in order."""
    used: list[str] = []
    real = loader._load

    def spy(kind: Any, *args: Any) -> Any:
        used.append(kind.__name__)
        return real(kind, *args)

    monkeypatch.setattr(loader, "_load", spy)
    return used


def test_a_plain_suite_is_read_by_libyaml(parsers_used: list[str]) -> None:
    loaded = load_suite_text(PLAIN, path=Path("demo.yaml"), display_path="suites/demo.yaml")
    assert loaded.data["tasks"] == [{"id": "hello", "prompt": "Hello"}]
    assert loaded.lines.line_of(("tasks", 0, "prompt")) == 3
    assert parsers_used == ["_CLoader"]


def test_a_syntax_error_is_told_by_the_python_parser(parsers_used: list[str]) -> None:
    with pytest.raises(Exception, match="a value holds ': '"):
        load_suite_text("tasks:\n  - prompt: Note: this\n", path=Path("demo.yaml"), display_path="suites/demo.yaml")
    assert parsers_used == ["_CLoader", "_BoundedLoader"]


@pytest.mark.parametrize("path", BUNDLED, ids=[str(p.relative_to(REPO)) for p in BUNDLED])
def test_bundled_suites_read_the_same(path: Path, both: Callable[[str], Any]) -> None:
    default, python = both(path.read_text(encoding="utf-8"))
    assert default[0] == "ok"
    assert default == python


SAME = {
    "anchors and merge keys": "base: &b {provider: echo, temperature: 0.5}\nmodels:\n  a: {<<: *b, id: x}\n"
                              "  b:\n    <<: [*b]\n    id: y\nlist: &l [1, 2]\nagain: *l\n",
    "block scalars": "a: |\n  one\n  two\n\nb: >-\n  folded\n  text\n\n  para\nc: |+\n  keep\n\nd: |2\n    indented\n",
    "plain values YAML 1.1 reads": "a: Yes\nb: on\nc: 1:30\nd: 0o12\ne: 012\nf: 1_000\ng: ~\nh: 2024-01-31\n"
                                   "i: 1.10\nj: .inf\nk: -.5e3\nl: null\nm: 0x1F\n",
    "quotes and escapes": "a: \"tab\\there \\u00e9 \\x41 \\/ \\\\\"\nb: 'it''s'\nc: \"line\\nbreak\"\nd: ''\n",
    "multi-line plain and flow": "a: this is\n  one value\nb: {x: 1, y: [a, b: c, 'd']}\nc: [a:b, 'c: d']\n"
                                "d: {url: http://x.y/z}\n",
    "unicode and line separators": "a: caf\u00e9 \U0001f600\nb: \"x\u2028y\"\nc: 'p\u2029q'\nd: \"a\u0085b\"\n"
                                   "e: 1\u2028f: 2\n",
    "byte order mark at the start": "\ufeffmodels:\n  a: {provider: echo}\n",
    "windows line ends": "a: 1\r\nb:\r\n  - x\r\n  - y\r\n",
    "document markers": "---\na: 1\n...\n",
    "comments and empty values": "# top\na:   # none\nb: [  ]\nc: {}\nd: ''  # text\n",
    "keys of every kind": "1: a\n2.5: b\n? complex\n: d\n",
    "deep nesting": "a: " + "[" * 40 + "x" + "]" * 40 + "\n",
}


@pytest.mark.parametrize("text", SAME.values(), ids=SAME.keys())
def test_tricky_texts_read_the_same(text: str, both: Callable[[str], Any], parsers_used: list[str]) -> None:
    default, python = both(text)
    assert parsers_used == ["_CLoader", "_BoundedLoader"]  # libyaml read it, then the Python parser alone
    assert default[0] == "ok"
    assert default == python


# libyaml reads these and PyYAML's Python parser refuses them: the suite author gets PyYAML's message
DIFFERENT = {
    "tab inside a plain value": ("a: b\tc\n", "a tab character"),
    "tab between tokens in { }": ("x: {a: \t1}\n", "a tab character"),
    "question mark in a plain value in { }": ("x: {a: 1, p?rompt: 2}\n", "inside { } a value holding '?'"),
    "question mark in a plain value in [ ]": ("x: [what?]\n", "inside [ ] a value holding '?'"),
    "comment right after a block indicator": ("x: >#-\n  text\n", "expected chomping or indentation"),
    "byte order mark inside": ("models:\n\ufeff  bot: 1\n", None),
}


@pytest.mark.parametrize(("text", "words"), DIFFERENT.values(), ids=DIFFERENT.keys())
def test_what_only_libyaml_reads_is_read_by_the_python_parser(
    text: str, words: str | None, both: Callable[[str], Any]
) -> None:
    yaml.load(text, Loader=yaml.CSafeLoader)  # libyaml alone takes it
    default, python = both(text)
    assert default == python
    if words is not None:
        assert default[0] == "error"
        assert words in default[2]


def test_a_tag_is_read_by_the_python_parser(parsers_used: list[str]) -> None:
    loaded = load_suite_text("a: !!str 12\nb: [!!int '3']\n", path=Path("demo.yaml"), display_path="demo.yaml")
    assert loaded.data == {"a": "12", "b": [3]}
    assert parsers_used == ["_CLoader", "_BoundedLoader"]


BROKEN = {
    "colon in a value": "prompt: Note: this\n",
    "unclosed quote": "a: \"open\nb: 2\n",
    "unclosed bracket": "a: [1, 2\nb: 3\n",
    "bad indentation": "a:\n  b: 1\n c: 2\n",
    "reserved start": "a: @home\n",
    "undefined alias": "a: *nowhere\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "duplicate key": "a: 1\na: 2\n",
    "not a mapping": "- a\n- b\n",
    "empty": "# nothing\n",
    "control character": "a: b\x07\n",
    "recursive alias": "a: &a [*a]\n",
    "alias bomb": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{k}: &{k} [{', '.join(['*' + p] * 10)}]\n" for p, k in zip("abcdef", "bcdefg", strict=True)
    ),
    "too deep": "a: " + "[" * 60 + "]" * 60 + "\n",
    "bad date": "a: 2024-13-01\n",
    "unknown tag": "a: !custom x\n",
}


@pytest.mark.parametrize("text", BROKEN.values(), ids=BROKEN.keys())
def test_errors_keep_the_python_parsers_messages(text: str, both: Callable[[str], Any]) -> None:
    default, python = both(text)
    assert default[0] == "error"
    assert default == python


def _mutated(text: str, rnd: random.Random) -> str:
    pieces = [" ", "\n", ":", ": ", "- ", "-", "[", "]", "{", "}", ",", "'", '"', "#", "&a ", "*a", "!", "|", ">",
              "?", "%", "@", "`", "\\", "\r\n", "\u2028", "\x85", "...", "---", "0x", "1_0", "Yes", "~"]
    for _ in range(rnd.randint(1, 3)):
        at = rnd.randrange(len(text) + 1)
        choice = rnd.random()
        if choice < 0.5:
            text = text[:at] + rnd.choice(pieces) + text[at:]
        elif choice < 0.75:
            text = text[:at] + text[at + rnd.randint(1, 3):]
        else:
            start = rnd.randrange(len(text) + 1)
            text = text[:at] + text[start:start + rnd.randint(1, 20)] + text[at:]
    return text


def test_mutated_suites_read_the_same(both: Callable[[str], Any]) -> None:
    """Small edits of the bundled suites, valid or not, come out the same way on both paths."""
    rnd = random.Random(8)
    texts = [text for text in (p.read_text(encoding="utf-8") for p in BUNDLED) if len(text) < 6000]
    differing = []
    for _ in range(150):
        text = _mutated(rnd.choice(texts), rnd)
        default, python = both(text)
        if default != python:
            differing.append(text)
    assert differing == []
