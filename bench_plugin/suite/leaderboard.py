"""The suite's ``leaderboard:`` -> a frozen Elo leaderboard spec, checked with errors that point at the YAML."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

from bench_plugin.core.errors import SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.loader import LoadedSuite, format_key_path
from bench_plugin.suite.scorers import component_names
from bench_plugin.suite.sections import read_suite_sections

SESSIONS = ("participants", "cases")


@dataclass(frozen=True)
class EloSettings:
    """K, the rating a new model starts at, what the expected score comes from, decimals kept."""

    k: float = 32.0
    initial: float = 1500.0
    expected_from: str = "session_scores"
    decimals: int = 1


@dataclass(frozen=True)
class LeaderboardSpec:
    """An Elo leaderboard over the scores of component ``of``.

    ``sessions``: ``participants`` (each case is a session, scored for every participant of its
    conversation: a panel's or consensus's ``participants``) or ``cases`` (the cases of one task and
    run are a session, each model scored by its own case). Files go to ``dir`` in the output folder.
    """

    suite: str
    of: str
    dir: str
    sessions: str = "participants"
    elo: EloSettings = field(default_factory=EloSettings)
    title: str = ""
    tagline: str | None = None
    recent: int = 5


def build_leaderboard(loaded: LoadedSuite) -> LeaderboardSpec | None:
    """Build and check the ``leaderboard:`` of a schema-valid suite (None when it has none).

    Like ``aggregates:``, the leaderboard is updated on the controller at the end of a run
    (``report/leaderboard.py``), which reads this part again from the suite file the records name; collection builds
    it too, so a mistake stops the run before any model is called.

    Raises:
        SuiteError: located at ``of`` when it names no scorer of the suite (with a did-you-mean), or at ``dir``
            when the folder it writes to leads out of the output folder.
    """
    entry = loaded.data.get("leaderboard")
    if not entry:
        return None
    suite = str(loaded.data.get("suite") or loaded.path.stem)
    names, _ = component_names(loaded)
    if entry["of"] not in names:
        key_path = ("leaderboard", "of")
        line = loaded.lines.line_of(key_path)
        hint = choices_hint(entry["of"], names, label="components")
        raise SuiteError(f"unknown component '{entry['of']}'", path=loaded.display_path, line=line,
                         key=format_key_path(key_path), hint=hint, excerpt=loaded.excerpt(line, context=0))
    folder = _checked_dir(loaded, entry.get("dir"), suite)
    elo = EloSettings(k=float(entry.get("k", 32)), initial=entry.get("initial", 1500),
                      expected_from=entry.get("expected_from", "session_scores"), decimals=int(entry.get("round", 1)))
    return LeaderboardSpec(
        suite=suite, of=entry["of"], dir=folder, sessions=entry.get("sessions", "participants"),
        elo=elo, title=entry.get("title", f"{suite} Elo Leaderboard"), tagline=entry.get("tagline"),
        recent=int(entry.get("recent", 5)),
    )


def _checked_dir(loaded: LoadedSuite, given: str | None, suite: str) -> str:
    """The leaderboard's folder under the output folder, refused when it would lead out of it.

    The write-side twin of ``suite/paths.py``: a suite reads only in its folder, and writes only in the
    output folder. ``dir`` (default: the suite's name, which the suite also chooses) must be a relative
    path that stays inside once ``..`` is resolved: ``elo``, ``boards/mine``, ``.``; never ``/tmp/x``,
    ``../../x`` or ``C:/x``. The folder is checked again when the files are written (``report/leaderboard.py``),
    with symbolic links resolved: the output folder is known only then.

    Raises:
        SuiteError: at ``leaderboard.dir`` (at ``suite``, or ``leaderboard``, for the default), with a hint.
    """
    text = suite if given is None else str(given)
    normal = posixpath.normpath(text.replace("\\", "/")) if text else "."
    if _stays_inside(text, normal):
        return text
    key_path, shown = _named_at(loaded, text, given is not None)
    line = loaded.lines.line_of(key_path)
    raise SuiteError(f"{shown} leads out of the output folder: a suite writes its leaderboard inside the output "
                     "folder only (--bench-output)", path=loaded.display_path, line=line,
                     key=format_key_path(key_path), excerpt=loaded.excerpt(line, context=0),
                     hint="give a folder relative to the output folder, without '..' that climbs out of it, e.g. "
                          f"dir: {PurePosixPath(normal).name.strip('.') or 'leaderboard'}")


def _stays_inside(text: str, normal: str) -> bool:
    """A relative path (``normal`` is ``text`` normalised) that does not climb out with ``..``."""
    return not PurePosixPath(normal).is_absolute() and not PureWindowsPath(text).drive and normal.split("/")[0] != ".."


def _named_at(loaded: LoadedSuite, text: str, given: bool) -> tuple[tuple[str, ...], str]:
    """Where the folder is named (``leaderboard.dir``, else the suite's name), and how the message names it."""
    if given:
        return ("leaderboard", "dir"), f"dir {text!r}"
    key_path = ("suite",) if "suite" in loaded.data else ("leaderboard",)
    return key_path, f"the suite's name {text!r}, the leaderboard's dir by default,"


def read_suite_leaderboards(paths: Iterable[str], root: Path) -> dict[str, LeaderboardSpec]:
    """The leaderboard of each suite file the records name that declares one."""
    return read_suite_sections(paths, root, build_leaderboard)
