"""A stand-in world interface for UniversalBackrooms' ``cli_with_world_interface``: a small exOS, deterministic.

The original puts a world-interface server in the CLI's seat: the explorer's last message goes to it as one
user message (OpenAI chat completions) and its answer is the terminal's. This stand-in answers the same
way from a fixed file system, with ``exo`` commands for notes; it keeps no state between calls (a note is
acknowledged with an id made from its text), so every run and every worker gets the same answers.
The mock server serves it at ``/world/v1/chat/completions``.
"""

from __future__ import annotations

import hashlib
import shlex

HOME = "/home/explorer"
FILES: dict[str, str] = {
    f"{HOME}/README.txt": "Welcome to exOS v0.5, explorer.\nThe world answers every command you type.\n"
                          "Leave what you learn as notes: exo create_note \"title\" \"text\".",
    f"{HOME}/journal/day-1.txt": "Day 1. The corridors hum. Someone left the lights on in room 7.",
    f"{HOME}/journal/day-2.txt": "Day 2. Room 7 is gone. The map still shows it.",
    f"{HOME}/map.txt": "+------+------+\n| hall | 7?   |\n+------+------+",
}
HELP = (
    "exOS v0.5 commands:\n"
    "  help                           this list\n"
    "  ls [DIR]                       list a directory\n"
    "  cat FILE                       show a file\n"
    "  pwd                            the current directory\n"
    "  exo create_note \"TITLE\" \"TEXT\"  leave a note for whoever comes next\n"
    "  exo list_notes                 the notes left so far"
)
_PROMPT_MARKS = ("$ ", "> ")
_MAX_COMMAND_CHARS = 2000


def world_reply(message: str) -> str:
    """What the world prints for the explorer's message: its first command line, run against the stand-in."""
    line = _command_line(message)
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    if not words:
        return "exOS: type a command (help lists them)"
    handler = _COMMANDS.get(words[0])
    if handler is None:
        return f"exOS: command not found: {words[0][:80]}"
    return handler(words[1:])


def _command_line(message: str) -> str:
    """The first non-empty line that is not a code fence, without a shell prompt in front."""
    for raw in message[:_MAX_COMMAND_CHARS].splitlines():
        line = raw.strip().strip("`").strip()
        for mark in _PROMPT_MARKS:
            line = line.split(mark, 1)[1] if mark in line and line.index(mark) < 40 else line
        if line:
            return line
    return ""


def _path(argument: str) -> str:
    """An absolute path for ``argument``, relative ones from the home directory (``..`` is not followed)."""
    path = argument if argument.startswith("/") else f"{HOME}/{argument.removeprefix('./').removeprefix('~/')}"
    return path.rstrip("/") or "/"


def _ls(arguments: list[str]) -> str:
    folder = _path(arguments[0]) if arguments else HOME
    names = sorted({rest.split("/", 1)[0] + ("/" if "/" in rest else "")
                    for path in FILES if path.startswith(folder + "/") for rest in [path[len(folder) + 1:]]})
    return "\n".join(names) if names else f"ls: cannot access '{folder}': No such file or directory"


def _cat(arguments: list[str]) -> str:
    if not arguments:
        return "cat: missing file operand"
    path = _path(arguments[0])
    return FILES.get(path, f"cat: {path}: No such file or directory")


def _exo(arguments: list[str]) -> str:
    if not arguments or arguments[0] not in ("create_note", "list_notes"):
        return "exo: usage: exo create_note \"TITLE\" \"TEXT\" | exo list_notes"
    if arguments[0] == "list_notes":
        return "No notes yet: this world keeps none between sessions."
    title = arguments[1] if len(arguments) > 1 else "untitled"
    digest = hashlib.sha256(" ".join(arguments[1:]).encode("utf-8")).hexdigest()[:8]
    return f"Note created: note-{digest} \"{title[:80]}\""


_COMMANDS = {
    "help": lambda arguments: HELP,
    "ls": _ls,
    "cat": _cat,
    "pwd": lambda arguments: HOME,
    "exo": _exo,
}
