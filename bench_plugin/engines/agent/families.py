"""What kind of step a tool call is: its family (read, search, edit, execute...) and whether it changes state.

The rules follow ClawBench's trajectory annotation: built-in tools have fixed families, a command is
classified by its text, and any other tool by words in its name, checked in the order of ``NAME_RULES``.
"""

from __future__ import annotations

import re

FAMILIES = ("read", "search", "edit", "execute", "plan", "memory", "delegate", "cron", "browser", "unknown")

BUILTIN_FAMILIES: dict[str, tuple[str, bool]] = {
    "read_file": ("read", False),
    "write_file": ("edit", True),
    "list_files": ("search", False),
    "search": ("search", False),
}

# (family, name pattern, mutating); "command" families come from the command text
NAME_RULES: tuple[tuple[str, str, bool], ...] = (
    ("delegate", r"delegate|spawn_agent|subagent", False),
    ("memory", r"memory", False),
    ("cron", r"cron|schedule|automation", True),
    ("plan", r"todo|plan", False),
    ("browser", r"browser", False),
    ("edit", r"write|edit|patch|apply|create|delete|rename|replace|insert", True),
    ("search", r"search|grep|find|\brg\b", False),
    ("read", r"read|open|view|cat", False),
    ("command", r"bash|exec|terminal|shell|command", False),
    ("execute", r"test|run|python|node", False),
)
_MEMORY_WRITES = re.compile(r"write|store|save|set|update|delete")

# a command that changes files; else one that only reads or looks around; else one that runs code
_MUTATING_COMMAND = re.compile(
    r"(^|[\s;&|])(rm|mv|cp|mkdir|rmdir|touch|chmod|chown|tee|patch|ln|truncate)(\s|$)|>|\bsed\s+-i"
    r"|\bgit\s+(checkout|reset|clean|commit|apply|restore)\b|\b(pip|pip3|npm|yarn|apt|apt-get)\s+install\b"
)
_READ_COMMAND = re.compile(r"^(cat|head|tail|less|more|sed|wc|stat|file|diff|od|xxd)$")
_SEARCH_COMMAND = re.compile(r"^(ls|find|grep|egrep|rg|tree|du|locate|which)$")

DANGEROUS = re.compile(
    r"\brm\s+-[a-zA-Z]*(r[a-zA-Z]*f|f[a-zA-Z]*r)|\bgit\s+reset\s+--hard|\bgit\s+checkout\s+--(\s|$)"
    r"|\bsudo\b|\bmkfs|\breboot\b|\bshutdown\b|\bdd\s+if="
)
"""Commands that destroy work or the machine: ``rm -rf``, ``git reset --hard``, ``sudo``, ``mkfs``..."""


def classify_command(text: str) -> tuple[str, bool]:
    """(family, mutating) of a command line, e.g. ``pytest -q`` -> ``("execute", False)``."""
    if _MUTATING_COMMAND.search(text):
        return "edit", True
    words = text.split()
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if _READ_COMMAND.match(program):
        return "read", False
    if _SEARCH_COMMAND.match(program):
        return "search", False
    return "execute", False


def classify_name(name: str, command: str | None = None) -> tuple[str, bool]:
    """(family, mutating) of a tool known only by its name (and its command text, for shell-like tools)."""
    lowered = name.lower()
    for family, pattern, mutating in NAME_RULES:
        if re.search(pattern, lowered):
            if family == "command":
                return classify_command(command) if command else ("execute", False)
            if family == "memory":
                return family, bool(_MEMORY_WRITES.search(lowered))
            return family, mutating
    return "unknown", False


def is_dangerous(command: str | None) -> bool:
    """Whether a command line matches ``DANGEROUS`` (no command is never dangerous)."""
    return bool(command) and DANGEROUS.search(command or "") is not None
