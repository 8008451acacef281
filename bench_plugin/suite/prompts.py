"""``prompts:`` -> PromptSpecs: the prompt variants a task runs, promptfoo's main dimension.

Each entry is inline text, ``{id, prompt | prompt_file | messages, system | system_file}``, or a
``prompt_file`` with ``split: "---"`` that holds several prompts separated by lines of ``---``.
A task that gives no prompt of its own runs once per suite prompt; a task's own ``prompts:``
replaces the suite's. Expansion (``suite/variants.py``) makes one variant per prompt, with the
prompt's id in the case id, the ``prompt`` tag and the ``prompt_id`` variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.messages import build_messages
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.spec import PromptSpec
from bench_plugin.suite.templates import TemplateRenderer

#: The keys of a task that give it a prompt of its own: such a task does not take the suite's prompts.
OWN_PROMPT_KEYS = ("prompt", "prompt_file", "messages", "turns", "phases", "conversation", "prompts")

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def build_prompts(
    loaded: LoadedSuite, renderer: TemplateRenderer, entries: list[Any], base: KeyPath
) -> tuple[PromptSpec, ...]:
    """The prompt variants of the ``prompts:`` list at ``base`` (schema-valid), in YAML order.

    A ``split`` file is read here, to know its prompts; when it cannot be read, it is one variant with the
    problem (named by its ``id``, or its file's name), whose cases fail with it; the other variants run.

    Raises:
        SuiteError: when two prompts have the same id.
    """
    prompts: list[PromptSpec] = []
    first: dict[str, KeyPath] = {}
    for index, entry in enumerate(entries):
        path = (*base, index)
        try:
            found = _entry(loaded, renderer, entry, path, index)
        except CaseError as exc:
            found = [PromptSpec(id=_entry_id(entry, index), problem=exc)]
        for prompt in found:
            if prompt.id in first:
                line = loaded.lines.line_of(first[prompt.id])
                raise SuiteError(
                    f"prompt id {prompt.id!r} is used twice (first at {format_key_path(first[prompt.id])}, "
                    f"line {(line or 0) + 1})",
                    path=loaded.display_path, line=loaded.lines.line_of(path), key=format_key_path(path),
                    hint="give each prompt its own id: it is part of every case id",
                )
            first[prompt.id] = path
            prompts.append(prompt)
    return tuple(prompts)


def _entry_id(entry: Any, index: int) -> str:
    """The id a prompt entry gives its variant (a ``split`` file adds ``-1``, ``-2``... to it)."""
    if isinstance(entry, str):
        return f"prompt{index + 1}"
    if "prompt_file" in entry:
        return str(entry.get("id", safe_prompt_id(PurePosixPath(entry["prompt_file"]).stem) or f"prompt{index + 1}"))
    return str(entry.get("id", f"prompt{index + 1}"))


def _entry(
    loaded: LoadedSuite, renderer: TemplateRenderer, entry: Any, path: KeyPath, index: int
) -> list[PromptSpec]:
    if isinstance(entry, str):
        return [PromptSpec(id=_entry_id(entry, index), prompt=_template(loaded, entry, path))]
    system = _system(loaded, entry, path)
    prompt_id = _entry_id(entry, index)
    if "prompt_file" in entry:
        return _from_file(loaded, renderer, entry, (*path, "prompt_file"), prompt_id, system)
    if "messages" in entry:
        if system is not None:
            raise SuiteError(
                "a prompt with messages gives its system message among them", path=loaded.display_path,
                line=system.line, key=system.key, hint="add {role: system, content: ...} as the first message",
            )
        return [PromptSpec(id=prompt_id, messages=build_messages(loaded, entry["messages"], (*path, "messages")))]
    return [PromptSpec(id=prompt_id, prompt=_template(loaded, entry["prompt"], (*path, "prompt")), system=system)]


def _from_file(
    loaded: LoadedSuite, renderer: TemplateRenderer, entry: Mapping[str, Any], file_path: KeyPath, prompt_id: str,
    system: TemplateSpec | None,
) -> list[PromptSpec]:
    """A ``prompt_file``: one variant, or with ``split`` one per prompt between the separators (``ID-1``...)."""
    if "split" not in entry:
        return [PromptSpec(id=prompt_id, prompt=_template(loaded, entry["prompt_file"], file_path, True),
                           system=system)]
    key, line = format_key_path(file_path), loaded.lines.line_of(file_path)
    parts = split_prompts(renderer.source_of(entry["prompt_file"], key=key, line=line), entry["split"])
    if not parts:
        raise CaseError(f"'{entry['prompt_file']}' holds no prompt between the separators {entry['split']!r}",
                        path=loaded.display_path, line=line, key=key)
    return [
        PromptSpec(id=f"{prompt_id}-{number}", system=system,
                   prompt=TemplateSpec(part, key=f"{key} (prompt {number})", line=line))
        for number, part in enumerate(parts, 1)
    ]


def split_prompts(text: str, separator: str) -> list[str]:
    r"""The prompts of a file: the text between lines that hold only ``separator``, each trimmed; empty ones dropped.

    Example:
        >>> split_prompts("Be brief: {{ q }}\\n---\\nBe thorough: {{ q }}\\n", "---")
        ['Be brief: {{ q }}', 'Be thorough: {{ q }}']
    """
    parts: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == separator.strip():
            parts.append([])
        else:
            parts[-1].append(line)
    return [text for text in ("\n".join(lines).strip() for lines in parts) if text]


def safe_prompt_id(text: str) -> str:
    """``text`` as a prompt id: letters, digits, ``_ . -`` (other runs of characters become ``-``)."""
    return _UNSAFE.sub("-", text).strip("-")


def _template(loaded: LoadedSuite, source: str, path: KeyPath, from_file: bool = False) -> TemplateSpec:
    return TemplateSpec(source, from_file=from_file, key=format_key_path(path), line=loaded.lines.line_of(path))


def _system(loaded: LoadedSuite, entry: Mapping[str, Any], path: KeyPath) -> TemplateSpec | None:
    if "system_file" in entry:
        return _template(loaded, entry["system_file"], (*path, "system_file"), True)
    if "system" in entry:
        return _template(loaded, entry["system"], (*path, "system"))
    return None
