"""``.env`` loading: API keys kept in a file next to the project, as shells, docker and promptfoo read them.

The file is read once per pytest process, before the conftest files are imported, from pytest's
rootdir (or ``--bench-env-file PATH``; ``off`` reads nothing). A variable already set in the
environment wins over the file, so CI secrets and ``FOO=1 pytest`` behave as expected. Values are
never shown anywhere: the report header names the variables that were set, nothing more.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

ENV_FILE_KEY = pytest.StashKey["EnvFile"]()


@dataclass(frozen=True)
class EnvFile:
    """What was read: the file, the variables it set, and those it left alone because they were set already."""

    path: Path
    loaded: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()

    def describe(self) -> str:
        """``read .env: set OPENAI_API_KEY; kept ANTHROPIC_API_KEY (already set)``, names only."""
        parts = [f"set {', '.join(self.loaded)}" if self.loaded else "set nothing"]
        if self.kept:
            parts.append(f"kept {', '.join(self.kept)} (already set in the environment)")
        return f"read {self.path}: {'; '.join(parts)}"


def env_file_path(choice: str | None, rootdir: Path, invocation_dir: Path) -> Path | None:
    """The file to read: ``--bench-env-file`` (relative to where pytest was started), else ``<rootdir>/.env``.

    Returns:
        None for ``off``, or when no file was named and the rootdir has no ``.env``.

    Raises:
        pytest.UsageError: a file named with ``--bench-env-file`` does not exist.
    """
    if choice is not None and choice.strip().lower() == "off":
        return None
    if choice is None:
        default = rootdir / ".env"
        return default if default.is_file() else None
    path = invocation_dir / choice
    if not path.is_file():
        raise pytest.UsageError(f"--bench-env-file: no such file: {path} (give a file, or off)")
    return path


def load_env_file(path: Path) -> EnvFile:
    """Set the variables of ``path`` that the environment does not have yet.

    Raises:
        pytest.UsageError: the file cannot be read (never quoting its content).
    """
    from bench_plugin.plugin.options.env_syntax import ExpansionTooLarge, env_values  # start-up: a run with a .env

    try:
        values = env_values(path.read_text(encoding="utf-8"))  # linear in the file (``env_syntax.py``)
    except (OSError, UnicodeDecodeError, ExpansionTooLarge) as exc:
        why = exc if isinstance(exc, ExpansionTooLarge) else type(exc).__name__  # names and sizes, never values
        raise pytest.UsageError(f"--bench-env-file: cannot read {path}: {why}") from None
    loaded, kept = [], []
    for name, value in values.items():
        if value is None:  # a bare NAME line sets nothing
            continue
        if name in os.environ:
            kept.append(name)
        else:
            os.environ[name] = value
            loaded.append(name)
    return EnvFile(path, tuple(loaded), tuple(kept))
