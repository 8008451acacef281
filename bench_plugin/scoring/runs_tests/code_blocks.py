"""The code in an answer: its first or last fenced block (of a language, when asked), or the whole answer.

A fence is three or more backticks or tildes at the start of a line (up to three spaces in), with an
optional language tag; it closes at a line of the same character at least as long. A block still open
when the answer ends (a reply cut off at its token limit) runs to the end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPENING = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[^\s`]*)[^`]*$")
_ALIASES = {"py": "python", "python3": "python", "py3": "python"}


@dataclass(frozen=True)
class CodeBlock:
    """A fenced block: its language tag (lower case, "" when untagged) and its text."""

    language: str
    text: str


def fenced_blocks(answer: str) -> list[CodeBlock]:
    """Every fenced block of ``answer``, in order."""
    blocks: list[CodeBlock] = []
    lines = answer.splitlines()
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        index += 1
        if opening is None:
            continue
        fence, body = opening["fence"], []
        while index < len(lines) and not _closes(lines[index], fence):
            body.append(lines[index])
            index += 1
        index += 1  # past the closing fence
        blocks.append(CodeBlock(_language(opening["tag"]), "\n".join(body) + "\n"))
    return blocks


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]} and len(line) - len(line.lstrip(" ")) <= 3


def _language(tag: str) -> str:
    tag = tag.lower().removeprefix("{").removesuffix("}").lstrip(".")
    return _ALIASES.get(tag, tag)


def extract_code(answer: str, code: str, language: str | None = None) -> str | None:
    """The code of ``answer`` as ``code`` says (``first_block``, ``last_block``, ``answer``); None when there is none.

    With ``language``, the blocks tagged with it count; when none is, the untagged blocks do.
    """
    if code == "answer":
        return answer if answer.strip() else None
    blocks = _of_language([block for block in fenced_blocks(answer) if block.text.strip()], language)
    if not blocks:
        return None
    return (blocks[0] if code == "first_block" else blocks[-1]).text


def _of_language(blocks: list[CodeBlock], language: str | None) -> list[CodeBlock]:
    """The blocks tagged ``language`` (all when it is None), else the untagged ones."""
    if language is None:
        return blocks
    wanted = _language(language)
    return [block for block in blocks if block.language == wanted] or [block for block in blocks if not block.language]
