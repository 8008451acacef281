"""The log a user reads for each model-to-model conversation: ``conversations/<suite>/<case>.md`` and ``.json``.

Written on the controller from the records as they arrive (``reporter.py``); the folder is emptied by
the first conversation of a run, so it holds the logs of one run, like ``results.jsonl``. Every name,
reply, command and event comes from a suite or a model: each goes through ``report.escape``, so the
log renders it as text (replies verbatim in fences, the rest as escaped Markdown).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_plugin.core.private_files import private_folder
from bench_plugin.core.safe_names import output_file
from bench_plugin.report.escape import markdown_cell, markdown_code, markdown_fence, markdown_text
from bench_plugin.results.store import write_atomically

FOLDER = "conversations"


def log_paths(record: Mapping[str, Any], folder: Path) -> tuple[Path, Path]:
    """Where a case's log goes: ``<folder>/<suite>/<task>[<model>-runN].md`` and ``.json``."""
    name = f"{record['task']}[{record['model']}-run{record['run']}]"
    suite = output_file(folder, str(record["suite"]))  # a suite named '..' stays in the folder
    return output_file(suite, name, ".md"), output_file(suite, name, ".json")


class ConversationLogWriter:
    """Writes one markdown and one JSON file per conversation case under ``<output>/conversations``."""

    def __init__(self, output_dir: Path) -> None:
        self.folder = output_dir / FOLDER
        self.written = 0

    def write(self, record: Mapping[str, Any]) -> None:
        """Write the case's log; records without a conversation are ignored."""
        if not record.get("conversation"):
            return
        if self.written == 0 and self.folder.exists():  # the logs of the last run go, as results.jsonl does
            shutil.rmtree(self.folder)
        markdown, data = log_paths(record, self.folder)
        private_folder(self.folder)
        private_folder(markdown.parent)
        write_atomically(markdown, render_markdown(record))
        keys = ("nodeid", "suite", "path", "task", "model", "run", "status", "reason", "composite", "conversation")
        # keys sorted, as results.jsonl keeps them: a log written from it (bench merge) is the same file
        write_atomically(data, json.dumps({k: record.get(k) for k in keys}, indent=2, ensure_ascii=False,
                                          sort_keys=True) + "\n")
        self.written += 1


def render_markdown(record: Mapping[str, Any]) -> str:
    """A conversation as a document: the case, who took part, then each round's messages and events."""
    conversation = record["conversation"]
    lines = _heading(record)
    lines += ["", "## Participants", "",
              "| # | name | model | plays | temperature | joined | calls | tokens in / out |",
              "| ---: | --- | --- | --- | ---: | --- | ---: | --- |"]
    lines += [_participant_row(p) for p in conversation["participants"]]
    lines += _prompt_additions(conversation["participants"])
    lines += _starts(conversation["participants"])
    lines += ["", "## Conversation", *_rounds(conversation["entries"])]
    return "\n".join(lines) + "\n"


def _heading(record: Mapping[str, Any]) -> list[str]:
    """The case's title and node id, its status and score, the mode, the rounds and how the conversation ended."""
    conversation = record["conversation"]
    score = f" (score {record['composite']:.4f})" if isinstance(record.get("composite"), (int, float)) else ""
    ended = conversation.get("ended") or {}
    # the brackets are ours: only the names inside them need escaping
    case = f"{markdown_text(record['task'])}[{markdown_text(record['model'])}-run{markdown_text(record['run'])}]"
    return [
        f"# {markdown_text(record['suite'])} · {case}",
        "",
        markdown_code(record.get("nodeid", "")),
        "",
        f"- status: {markdown_text(record.get('status'))}{score}",
        f"- mode: {markdown_text(conversation['mode'])}",
        f"- rounds: {markdown_text(conversation.get('rounds'))} of {markdown_text(conversation.get('max_turns'))}",
        f"- ended: {markdown_text(ended.get('detail', 'not recorded'))}",
    ]


def _participant_row(p: Mapping[str, Any]) -> str:
    plays = "model under test" if p.get("candidate") else "partner"
    joined = "start" if not p.get("joined_round") else f"round {p['joined_round']} ({p.get('invited_by')})"
    temperature = "—" if p.get("temperature") is None else f"{p['temperature']:g}"
    tokens = f"{_dash(p.get('input_tokens'))} / {_dash(p.get('output_tokens'))}"
    cells = (p["index"], p["name"], p["model"], plays, temperature, joined, p.get("calls", 0), tokens)
    return "| " + " | ".join(markdown_cell(cell) for cell in cells) + " |"


def _prompt_additions(participants: list[Mapping[str, Any]]) -> list[str]:
    """What participants added to their own system prompts during the conversation."""
    added = [(p["name"], text) for p in participants for text in p.get("prompt_additions", [])]
    if not added:
        return []
    return ["", "Added to their own system prompts:", "",
            *(f"- {markdown_text(name)}: {markdown_text(repr(text))}" for name, text in added)]


def _rounds(entries: list[Mapping[str, Any]]) -> list[str]:
    """The entries, a heading before each round's first one (round 0 is the seed)."""
    lines: list[str] = []
    current = None
    for entry in entries:
        if entry["round"] != current:
            current = entry["round"]
            lines += ["", f"### {'Seed' if current == 0 else f'Round {current}'}"]
        lines += ["", *_entry_lines(entry)]
    return lines


def _starts(participants: list[Mapping[str, Any]]) -> list[str]:
    """Each starting participant's system prompt and seeded history (invited ones: their prompt)."""
    lines = ["", "## How each participant starts"]
    for p in participants:
        system = markdown_fence(p.get("system") or "(none)")
        lines += ["", f"**{markdown_text(p['name'])}**: system prompt", "", *system]
        for message in p.get("context") or []:
            lines += ["", f"*{markdown_text(message['role'])}:*", "", *markdown_fence(message.get("content", ""))]
    return lines


def _entry_lines(entry: Mapping[str, Any]) -> list[str]:
    kind = entry["kind"]
    if kind == "event":
        mark = "event" if entry.get("ok", True) else "event (failed)"
        return [f"> *{mark}:* {markdown_text(entry['content'])}"]
    if kind == "notice":
        return [f"> *notice:* {markdown_text(entry['content'])}"]
    return _said_lines(entry)


def _said_lines(entry: Mapping[str, Any]) -> list[str]:
    """What a speaker said, and what the others saw of a message when it differs (hidden commands, thinking)."""
    message = entry["kind"] == "message"
    raw = entry.get("raw") if message else entry["content"]
    out = [f"**{markdown_text(entry['speaker'])}**", "", *markdown_fence(raw or "")]
    if message and entry["content"] != (raw or "").strip():  # hidden commands, thinking
        out += ["", "*the others saw:*", "", *markdown_fence(entry["content"])]
    return out


def _dash(value: Any) -> str:
    return "—" if value is None else str(value)
