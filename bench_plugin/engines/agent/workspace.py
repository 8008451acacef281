"""The workspace of an agent case: a fresh temporary folder, paths confined to it, its final files."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import CaseError, ToolFailure
from bench_plugin.suite.agent.spec import WorkspaceSpec

SNAPSHOT_MAX_FILES = 200
SNAPSHOT_MAX_TEXT = 20_000  # characters of a file's text kept in the record and shown to judges
_SKIPPED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".git"})


def create_workspace(spec: WorkspaceSpec) -> Path:
    """A new folder holding the declared copies, then the inline files (which win over copies).

    Each case gets its own, so no case sees what another wrote.

    Raises:
        CaseError: a file to copy resolves (through a symbolic link) outside ``spec.readable``; the suite
            was checked when it was read, so only a change of its files since then gets here.
    """
    root = Path(tempfile.mkdtemp(prefix="bench-agent-")).resolve()
    try:
        _copy_sources(spec, root)
    except BaseException:
        remove_workspace(root)
        raise
    for relative, content in spec.files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


def _copy_sources(spec: WorkspaceSpec, root: Path) -> None:
    readable = spec.readable or tuple(source for source, _ in spec.copies)

    def copy_file(source: str, destination: str) -> object:  # what copytree calls for each file
        return shutil.copy2(_readable(Path(source), readable), destination)

    for source, target in spec.copies:
        if source.is_dir():
            shutil.copytree(source, root / target if target else root, dirs_exist_ok=True, copy_function=copy_file)
        else:
            destination = root / target if target else root / source.name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_readable(source, readable), destination)


def _readable(source: Path, readable: tuple[Path, ...]) -> Path:
    """``source`` resolved, when it lies inside ``readable`` (copies follow symbolic links)."""
    resolved = Path(os.path.realpath(source))
    if not any(resolved.is_relative_to(folder) for folder in readable):
        raise CaseError(f"workspace copy: {source} leads to {resolved}, outside the folders the suite may read")
    return resolved


def remove_workspace(root: Path) -> None:
    """Delete the workspace; best effort, since a leftover temporary folder must not fail the case."""
    shutil.rmtree(root, ignore_errors=True)


def confine(root: Path, relative: str) -> Path:
    """The path ``relative`` names inside the workspace, with symlinks resolved.

    Raises:
        ToolFailure: when it is absolute and outside, climbs out with ``..``, or leads out through a link.
    """
    candidate = (root / relative).resolve()
    if candidate != root and root not in candidate.parents:
        raise ToolFailure(f"path {relative!r} is outside the workspace; use paths relative to its root")
    return candidate


def shown(root: Path, path: Path) -> str:
    """A path as the model and the record see it: relative to the workspace root, with ``/``."""
    return path.relative_to(root).as_posix() if path != root else "."


def walk_files(folder: Path) -> list[Path]:
    """Regular files under ``folder``, sorted, leaving out caches (``__pycache__``...).

    Symbolic links are neither listed nor followed: a program in the sandbox may make one that points
    anywhere, and the tools that read what is listed run outside the sandbox.
    """
    found = []
    for parent, folders, files in os.walk(folder):  # does not walk into linked folders
        folders[:] = [name for name in folders if name not in _SKIPPED_DIRS]
        found += [path for path in (Path(parent, name) for name in files) if _is_plain_file(path)]
    return sorted(found)


def _is_plain_file(path: Path) -> bool:
    """A regular file, not a symbolic link to one."""
    return not path.is_symlink() and path.is_file()


def snapshot(root: Path) -> tuple[dict[str, Any], ...]:
    """The final files: ``path`` and ``size`` for each, and ``text`` for text files up to the limit."""
    out: list[dict[str, Any]] = []
    for path in walk_files(root)[:SNAPSHOT_MAX_FILES]:
        entry: dict[str, Any] = {"path": shown(root, path), "size": path.stat().st_size}
        if entry["size"] <= SNAPSHOT_MAX_TEXT:
            # a binary or unreadable file is recorded by path and size only
            with contextlib.suppress(UnicodeDecodeError, OSError):
                entry["text"] = path.read_text(encoding="utf-8")
        out.append(entry)
    return tuple(out)
