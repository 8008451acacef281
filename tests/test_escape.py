"""The escaping helpers: whatever the text, a CommonMark renderer shows exactly that text and no markup."""

from __future__ import annotations

import random
import unicodedata

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from bench_plugin.report.escape import (
    log_line,
    markdown_cell,
    markdown_code,
    markdown_fence,
    markdown_text,
    one_line,
)

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "![](http://evil/x.png)",
    "[x](javascript:alert(1))",
    "[x]: javascript:alert(1)",
    "<http://evil/x>",
    "<!-- comment --> &lt;b&gt; &amp;",
    "``code`` and `more` ```",
    "a | b || c \\| d \\",
    "# heading",
    "- item",
    "+ item",
    "1. first",
    "12) twelfth",
    "---",
    "***",
    "> quote",
    "**bold** _it_ __b__ snake_case_name ~~gone~~ ~x~",
    "line one\nline two\r\nline three\u2028four",
    "\\[not a link\\](x) \\<b>",
    "![alt][ref]\n\n[ref]: http://evil/x.png",
    "=====",
]
# every character with a meaning in CommonMark or GFM, some letters, and the starts of URLs
ALPHABET = [*"<>&\\`*_[]()!#+-=|~:/\"' .a1\n", "javascript:", "http://", "&amp;", "<img "]


def renderer() -> MarkdownIt:
    """CommonMark with raw HTML allowed (as lenient as a viewer gets), plus GFM tables and strikethrough."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def inline_children(source: str) -> list[Token]:
    """The inline tokens of every block of ``source``, flattened."""
    return [child for token in renderer().parse(source) if token.type == "inline" for child in token.children or []]


def samples(count: int = 1500, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return HOSTILE + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 16))) for _ in range(count)]


@pytest.mark.parametrize("prefix", ["", "- ", "# ", "> ", "1. "])
def test_markdown_text_renders_as_exactly_its_text(prefix: str) -> None:
    for text in samples():
        source = f"{prefix}x {markdown_text(text)}"  # after a word, as the writers place it
        children = inline_children(source)
        assert {child.type for child in children} <= {"text"}, (text, source)
        assert "".join(child.content for child in children) == f"x {one_line(text)}".rstrip(), (text, source)


def test_markdown_text_at_the_start_of_a_line_opens_no_block() -> None:
    for text in samples():
        escaped = markdown_text(text)
        if text.strip() and not text.startswith((" ", "\n")):
            blocks = [token.type for token in renderer().parse(escaped) if token.nesting == 1]
            assert blocks == ["paragraph_open"], (text, escaped, blocks)


def test_markdown_cell_keeps_a_table_row_whole() -> None:
    for text in samples():
        source = f"| a | b |\n| --- | --- |\n| {markdown_cell(text)} | end |"
        tokens = renderer().parse(source)
        cells = [token for token in tokens if token.type == "inline"]
        assert len(cells) == 4, (text, source)  # two headers, the cell, and "end": no pipe split the row
        assert {child.type for child in cells[2].children or []} <= {"text"}, (text, source)
        assert "".join(child.content for child in cells[2].children or []) == one_line(text).strip(), (text, source)
        assert cells[3].content == "end"


def test_markdown_code_is_one_code_span_with_the_text_inside() -> None:
    for text in samples():
        if not one_line(text):
            continue
        children = inline_children(f"x {markdown_code(text)} y")
        spans = [child for child in children if child.type != "text"]
        assert [child.type for child in spans] == ["code_inline"], (text, markdown_code(text))
        assert spans[0].content == one_line(text), (text, markdown_code(text))


def test_markdown_fence_shows_every_line_verbatim() -> None:
    for text in [*samples(), "", "````\n```", "end\n"]:
        tokens = renderer().parse("\n".join(["before", "", *markdown_fence(text), "", "after"]))
        assert [token.type for token in tokens if token.type == "fence"] == ["fence"], text
        (fence,) = [token for token in tokens if token.type == "fence"]
        assert fence.content == text.replace("\r\n", "\n").replace("\r", "\n") + "\n", text
        assert tokens[-2].content == "after"


def test_the_attacks_keep_their_text_readable() -> None:
    assert markdown_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert markdown_text("![](http://evil/x.png)") == "!\\[\\](http://evil/x.png)"
    assert markdown_text("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert markdown_text("snake_case and _emphasis_") == "snake_case and \\_emphasis\\_"
    assert markdown_text("# not a heading") == "\\# not a heading"
    assert markdown_text("-0.5 is not a list, - is") == "-0.5 is not a list, - is"
    assert markdown_text("- a list") == "\\- a list"
    assert markdown_text("3. item") == "3\\. item"
    assert markdown_text("Claude Opus 4.5 (scripted)") == "Claude Opus 4.5 (scripted)"  # ordinary text unchanged
    assert markdown_cell("a\\|b") == "a\\\\\\|b"  # the text's own backslash cannot escape our pipe
    assert markdown_code("`x`") == "`` `x` ``"
    assert markdown_fence("a ``` b") == ["````text", "a ``` b", "````"]


def test_log_line_shows_control_characters_instead_of_obeying_them() -> None:
    assert log_line("ok\nFAKE 200 OK\r\x1b[2J\x00\x7f\x9b") == "ok\\nFAKE 200 OK\\r\\x1b[2J\\x00\\x7f\\x9b"
    assert log_line("abc\u202egnp.exe \u2028x") == "abc\\u202egnp.exe \\u2028x"
    assert log_line("tab\there, émoji 👩‍💻, 中文") == "tab\\there, émoji 👩‍💻, 中文"  # ZWJ and letters stay
    everything = "".join(chr(code) for code in range(0x3000))
    assert not any(unicodedata.category(char) in ("Cc", "Zl", "Zp") for char in log_line(everything))


def test_a_terminal_escape_is_shown_not_obeyed_in_markdown() -> None:
    """``cat report.md`` in a terminal: a model's ANSI escape must not clear the screen or recolour it."""
    attack = "ok\x1b[2J\x1b[31mRED\x07"
    for written in (markdown_text(attack), markdown_cell(attack), markdown_code(attack), *markdown_fence(attack)):
        assert "\x1b" not in written and "\x07" not in written
    assert "x1b\\[2J" in markdown_text(attack) and markdown_fence("a\tb\r\nc")[1] == "a\tb\r\nc"
