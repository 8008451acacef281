"""Hostile models, labels, suites and servers: every Markdown file a run writes renders their text as text.

Each ``.md`` under the output folder is parsed by a CommonMark renderer with raw HTML on (the most lenient a
viewer gets): no HTML, no link and no image may come out of it, and the hostile text must still be there,
readable, in what the renderer shows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from bench_plugin.mock.server import MockServer
from bench_plugin.report.conversation_log import log_paths

# what a hostile model answers: every way Markdown has of running script, loading a remote image or linking out
ATTACKS = (
    "<script>alert('s')</script>",
    "<img src=x onerror=alert('i')>",
    "![](http://evil.test/x.png)",
    "[x](javascript:alert('j'))",
    "<http://evil.test/auto>",
)
REPLY = " ".join(ATTACKS) + " ``` `tick` | pipe | \\[ok\\]"
BLOCK_REPLY = "\n".join(["# fake heading", "- fake item", "[ref]: javascript:alert('r')", "", "<div>block</div>",
                         "![][ref]", REPLY])
LABEL = "<img src=x onerror=alert('label')> ![](https://evil.test/label.png) [label](javascript:alert('l')) |"


def _quoted(text: str) -> str:
    """``text`` as a YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def conversation_suite() -> str:
    """A model-to-model conversation whose models, names, commands and personas are all hostile."""
    command_line = (f'!prompt "{ATTACKS[1]} {ATTACKS[2]} {ATTACKS[3]}" '
                    f'!temperature <b>hot</b> !add_ai guest "{ATTACKS[0]} {ATTACKS[3]}"')
    return f"""
suite: hostile_room
models:
  evil:
    provider: scripted
    label: {_quoted(LABEL)}
    script:
      - turn: 1
        reply: {_quoted(BLOCK_REPLY + chr(10) + command_line)}
      - reply: {_quoted(REPLY)}
  guest:
    provider: scripted
    label: {_quoted("<i>guest</i> " + ATTACKS[2])}
    default: false
    script:
      - reply: {_quoted(REPLY)}
tasks:
  - id: room
    system: {_quoted("You are <b>it</b>. " + ATTACKS[2] + " " + ATTACKS[3])}
    conversation:
      mode: shared
      seed: {_quoted(BLOCK_REPLY)}
      participants:
        - {{name: {_quoted("<img src=x onerror=alert('n')>")}}}
        - {{name: {_quoted("[n](javascript:alert('n'))")}, model: evil}}
      max_turns: 2
      commands:
        prompt: {{action: append_system, min_length: 3}}
        temperature: {{action: set_temperature, range: [0, 2]}}
        add_ai: {{action: invite, models: [guest], max_participants: 3}}
    scorers:
      - {{name: C, type: contains, value: "never said"}}
"""


def board_suite(server: MockServer, broken: str) -> str:
    """Single-turn cases with hostile labels, answers, judge replies, error bodies, titles and a leaderboard."""
    return f"""
suite: hostile_board
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: 2, max_retries: 0}}
models:
  a:
    provider: scripted
    label: {_quoted(LABEL)}
    script: [{{reply: {_quoted("Ada " + REPLY)}}}]
  b:
    provider: scripted
    label: {_quoted("<b>B</b> " + ATTACKS[2] + " " + ATTACKS[3])}
    script: [{{reply: {_quoted(REPLY)}}}]
  broken: {{provider: mock, id: {broken}, label: {_quoted("<b>broken</b> " + ATTACKS[3])}}}
judges:
  grader:
    provider: scripted
    script:
      - {{contains: "Ada", reply: {_quoted("Score: 7 " + REPLY)}}}
      - {{reply: {_quoted("Score: 2 " + REPLY)}}}
tasks:
  - {{id: greet, prompt: "Say hello to Ada"}}
scorers:
  - {{name: C, type: contains, value: Ada}}
  - name: J
    type: llm_judge
    judge: grader
    scale: [0, 10]
    parse: {{regex: "Score: (\\\\d+)"}}
    prompt: "Rate this answer: {{{{ answer }}}}"
composite: "0.5*C + 0.5*J"
pass_threshold: 0.5
aggregates:
  tables:
    - name: per_model
      title: {_quoted("<img src=x onerror=alert('t')> " + ATTACKS[3])}
      by: [model_label]
      columns:
        - {{name: cases, fn: count}}
leaderboard:
  of: C
  sessions: cases
  title: {_quoted("<img src=x onerror=alert('title')> " + ATTACKS[2])}
  tagline: {_quoted(ATTACKS[3] + " " + ATTACKS[0])}
"""


def renderer() -> MarkdownIt:
    """CommonMark with raw HTML allowed, as the most lenient viewer renders, plus GFM tables."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from walk(token.children or [])


def markup_found(text: str) -> list[str]:
    """Every raw HTML token, link and image a renderer makes of ``text``; our writers make none."""
    found = []
    for token in walk(renderer().parse(text)):
        if token.type in ("html_inline", "html_block"):
            found.append(f"{token.type}: {token.content.strip()!r}")
        elif token.type == "link_open":
            found.append(f"link to {token.attrGet('href')!r}")
        elif token.type == "image":
            found.append(f"image from {token.attrGet('src')!r}")
    return found


def shown_text(text: str) -> str:
    """What a reader sees: the text of every text, code and fence token."""
    kinds = ("text", "code_inline", "code_block", "fence")
    return " ".join(token.content for token in walk(renderer().parse(text)) if token.type in kinds)


def test_hostile_text_renders_as_text_in_every_markdown_file(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    broken = f"broken-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": broken, "status": 400, "error": REPLY})
    pytester.makefile(".yaml", **{"suites/room": conversation_suite(),
                                  "suites/board": board_suite(mock_server, broken)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    output = pytester.path / "bench-results"
    files = {path.relative_to(output).as_posix(): path.read_text(encoding="utf-8") for path in output.rglob("*.md")}
    assert sorted(files) == ["conversations/hostile_room/room[evil-run1].md", "hostile_board/LEADERBOARD.md",
                             "report.md"]
    label = "<img src=x onerror=alert('label')>"
    expected = {  # escaped, not deleted: the reader sees each hostile text as it was written
        "conversations/hostile_room/room[evil-run1].md": [*ATTACKS, "<img src=x onerror=alert('n')>", "<b>hot</b>"],
        "hostile_board/LEADERBOARD.md": ["<img src=x onerror=alert('title')>", ATTACKS[0], *ATTACKS[2:4], label],
        "report.md": [*ATTACKS, label, "<img src=x onerror=alert('t')>", "<b>broken</b>"],
    }
    for name, text in files.items():
        assert markup_found(text) == [], name
        shown = shown_text(text)
        assert [attack for attack in expected[name] if attack not in shown] == [], name
    board = files["hostile_board/LEADERBOARD.md"]
    assert board.startswith("# &lt;img src=x onerror=alert('title')&gt; !\\[\\](http://evil.test/x.png)\n")


def test_a_suite_named_dot_dot_keeps_its_conversation_logs_in_their_folder(tmp_path: Path) -> None:
    markdown, data = log_paths({"suite": "..", "task": "..", "model": "m", "run": 1}, tmp_path / "conversations")
    # leading dots go (no '..', no hidden file); a name that changed ends in a digest of the original
    assert markdown.parent == data.parent == tmp_path / "conversations" / "_-5ec1f7e7"
    assert markdown.name == "[m-run1]-47d36296.md"


def test_a_backslash_in_a_command_line_model_id_is_no_internal_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/ids": "models:\n  parrot: {provider: echo}\n"
                                                "tasks:\n  - {id: greet, prompt: 'Say hello to Ada'}\n"
                                                "scorers:\n  - {type: contains, value: Ada}\n"})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-models", "echo:a\\N")
    assert "INTERNALERROR" not in "\n".join(result.outlines + result.errlines)
    result.assert_outcomes(passed=1)
    (record,) = [line for line in (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()]
    assert '"model": "echo:a\\\\N"' in record  # the record keeps the name as given; only the id is made safe
    assert (pytester.path / "bench-results" / "report.html").is_file()
