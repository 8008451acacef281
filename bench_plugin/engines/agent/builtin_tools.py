"""The built-in workspace tools: read_file, write_file, list_files, search and command.

Each takes the workspace root and the call's (schema-checked) arguments and returns the text the model
is sent; a call that cannot be done raises ToolFailure with the reason.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import ToolFailure
from bench_plugin.engines.agent.program import CommandResult, check_allowed, clip, run_argv, split_command
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.workspace import confine, shown, walk_files
from bench_plugin.suite.agent.spec import ToolSpec

MAX_LISTED = 500
MAX_MATCHES = 200


def read_file(root: Path, args: Mapping[str, Any]) -> str:
    """The ``read_file`` tool: a file's text (undecodable bytes replaced), clipped to the output limit."""
    path = confine(root, args["path"])
    if path.is_dir():
        raise ToolFailure(f"{args['path']!r} is a folder, not a file; list it with list_files")
    if not path.exists():
        raise ToolFailure(f"no such file: {args['path']!r}")
    if not path.is_file():  # a pipe or a device a program made would block the whole run
        raise ToolFailure(f"{args['path']!r} is not a regular file")
    return clip(path.read_bytes().decode("utf-8", "replace"))


def write_file(root: Path, args: Mapping[str, Any]) -> str:
    """The ``write_file`` tool: write ``content`` as UTF-8, creating missing folders; says how many bytes."""
    path = confine(root, args["path"])
    if path == root or path.is_dir():
        raise ToolFailure(f"{args['path']!r} is a folder, not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = args["content"].encode("utf-8")
    path.write_bytes(data)
    return f"wrote {len(data)} bytes to {shown(root, path)}"


def list_files(root: Path, args: Mapping[str, Any]) -> str:
    """The ``list_files`` tool: the files under a folder (the root by default), at most ``MAX_LISTED``."""
    folder = confine(root, args.get("path") or ".")
    if not folder.is_dir():
        raise ToolFailure(f"no such folder: {args.get('path')!r}")
    files = walk_files(folder)
    lines = [shown(root, path) for path in files[:MAX_LISTED]]
    if len(files) > MAX_LISTED:
        lines.append(f"... and {len(files) - MAX_LISTED} more files")
    return "\n".join(lines) if lines else "(no files)"


def search(root: Path, args: Mapping[str, Any]) -> str:
    """The ``search`` tool: ``path:line: text`` for each line matching a regex, at most ``MAX_MATCHES``."""
    pattern = _compile(args["pattern"])
    where = confine(root, args.get("path") or ".")
    if not where.exists():
        raise ToolFailure(f"no such file or folder: {args.get('path')!r}")
    found = (match for path in _searched(where) for match in _matching_lines(root, path, pattern))
    matches = list(itertools.islice(found, MAX_MATCHES))
    if len(matches) == MAX_MATCHES:
        return "\n".join([*matches, f"... (stopped at {MAX_MATCHES} matches)"])
    return "\n".join(matches) if matches else "(no matches)"


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolFailure(f"the pattern /{pattern}/ is not a valid regular expression: {exc}") from exc


def _searched(where: Path) -> list[Path]:
    """The file searched, or the files under the folder."""
    return [where] if where.is_file() else walk_files(where)


def _matching_lines(root: Path, path: Path, pattern: re.Pattern[str]) -> Iterator[str]:
    """``path:line: text`` of each line of a text file that matches; binary files are not searched."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return
    for number, line in enumerate(lines, 1):
        if pattern.search(line):
            yield f"{shown(root, path)}:{number}: {line}"


async def command(root: Path, args: Mapping[str, Any], tool: ToolSpec, timeout_s: float,
                  sandbox: Sandbox | None = None) -> tuple[str, str | None]:
    """Run an allowed program: (its exit code and output as the model reads them, the failure or None).

    A program that exits with a code other than 0, or that a limit stopped, is a failed call; the failure
    names the code and the limit or the last line it wrote (so a repeated failure has the same signature).
    It runs in ``sandbox`` (None: the default one), with the network only when the tool allows it.
    """
    argv = split_command(args["command"])
    check_allowed(argv, tool.allow)
    result = await run_argv(argv, root, timeout_s, sandbox, network=tool.network)
    if result.timed_out:
        raise ToolFailure(f"{argv[0]!r} timed out after {timeout_s:g} s and was stopped"
                          + (f"\nstdout:\n{result.stdout}" if result.stdout else ""))
    text = f"exit code: {result.exit_code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}".rstrip() + "\n"
    if result.note is not None:
        text += f"note: {result.note}\n"
        return text, f"exit code {result.exit_code}: {result.note}"
    return text, _exit_failure(result)


def _exit_failure(result: CommandResult) -> str | None:
    """None for exit code 0, else the code and the last line the program wrote (to stderr, else stdout)."""
    if result.exit_code == 0:
        return None
    lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
    return f"exit code {result.exit_code}" + (f": {lines[-1][:200]}" if lines else "")
