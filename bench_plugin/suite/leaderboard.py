"""The suite's ``leaderboard:`` -> a frozen Elo leaderboard spec, checked with errors that point at the YAML."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench_plugin.errors import SuiteError
from bench_plugin.hints import choices_hint
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
        SuiteError: located at ``of`` when it names no scorer of the suite (with a did-you-mean).
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
    elo = EloSettings(k=float(entry.get("k", 32)), initial=entry.get("initial", 1500),
                      expected_from=entry.get("expected_from", "session_scores"), decimals=int(entry.get("round", 1)))
    return LeaderboardSpec(
        suite=suite, of=entry["of"], dir=entry.get("dir", suite), sessions=entry.get("sessions", "participants"),
        elo=elo, title=entry.get("title", f"{suite} Elo Leaderboard"), tagline=entry.get("tagline"),
        recent=int(entry.get("recent", 5)),
    )


def read_suite_leaderboards(paths: Iterable[str], root: Path) -> dict[str, LeaderboardSpec]:
    """The leaderboard of each suite file the records name that declares one."""
    return read_suite_sections(paths, root, build_leaderboard)
