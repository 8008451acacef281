"""A suite's Elo leaderboard, kept across runs: sessions from records, ``leaderboard.json`` and ``LEADERBOARD.md``.

Each run adds its sessions (in case order, so ``-n`` does not change the result) to the
leaderboard found in the output folder, and writes both files again. A session carries an id made of
its case, its start and a digest of what its cases did (``nodeid@started_at#digest``: two runs in the
same second differ in their timings and answers), so ``bench report`` rebuilding the reports of a run,
which reads the same records, does not add them twice. Re-judging (``--bench-rejudge``) keeps what the
cases did and changes their scores: their sessions keep their ids, take the new scores, and the ratings
are worked out again from the first session. Titles, taglines, labels and scenarios come from suites and
models: ``LEADERBOARD.md`` shows them through ``report.escape``, as text.
"""

from __future__ import annotations

import errno
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.core.private_files import open_private, refuse_links
from bench_plugin.report.aggregates import component_raw, is_scored
from bench_plugin.report.elo import apply_sessions, empty_board
from bench_plugin.report.escape import markdown_cell, markdown_text
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import write_atomically
from bench_plugin.suite.leaderboard import LeaderboardSpec

JSON_FILE = "leaderboard.json"
MARKDOWN_FILE = "LEADERBOARD.md"
MEDALS = ("🥇 ", "🥈 ", "🥉 ")


def sessions_from_records(spec: LeaderboardSpec, records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """The sessions a run's scored records give, in record order.

    ``participants``: one per scored case whose component ``of`` scores two or more participants.
    ``cases``: one per task and run, each scored model by its component's raw value (its label as key).
    """
    scored = [record for record in records if is_scored(record)]
    if spec.sessions == "participants":
        return _participant_sessions(spec.of, scored)
    return _task_sessions(spec.of, scored)


def _task_sessions(of: str, records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """A session per task and run that two models or more have a raw value of component ``of`` on."""
    return [_task_session(of, task, run, group)
            for (task, run), group in _task_runs(of, records).items() if len(group) >= 2]


def _participant_sessions(of: str, records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """A session per case whose component ``of`` scores two or more participants."""
    sessions = []
    for record in records:
        found = (record.components.get(of) or {}).get("participants")
        if isinstance(found, Mapping) and len(found) >= 2:
            sessions.append({"id": session_id(record.nodeid, record.started_at, [record]),
                             "timestamp": record.started_at, "scenario": record.task, "scores": dict(found)})
    return sessions


def _task_runs(of: str, records: Sequence[CaseRecord]) -> dict[tuple[str, int], list[CaseRecord]]:
    """The cases with a raw value of component ``of``, by task and run."""
    groups: dict[tuple[str, int], list[CaseRecord]] = {}
    for record in records:
        if component_raw(record, of) is not None:
            groups.setdefault((record.task, record.run), []).append(record)
    return groups


def _task_session(of: str, task: str, run: int, group: Sequence[CaseRecord]) -> dict[str, Any]:
    """The session of one task and run: each model by its component's raw value."""
    started = min(str(record.started_at) for record in group)
    scores = {record.model_label: component_raw(record, of) for record in group}
    return {"id": session_id(f"{group[0].path}::{task}@run{run}", started, group), "timestamp": started,
            "scenario": task, "scores": scores}


_DID = ("nodeid", "started_at", "duration_s", "latency_s", "response_id", "response", "transcript")
"""What a case did, as its record keeps it, whoever judges it: a session's identity."""


def session_id(name: str, started: str | None, records: Sequence[CaseRecord]) -> str:
    """``name@started#digest``: the digest of what the cases did tells apart runs that started in the same second.

    Not of their scores: a case judged again is the same session, with other scores.
    """
    did = [{key: getattr(record, key) for key in _DID} for record in records]
    text = json.dumps(did, sort_keys=True, default=str)
    return f"{name}@{started}#{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _slot(session_id: str) -> str:
    """What a session is of (``path::task@runN``, or a case's node id), without when it started and what it did."""
    return session_id.rpartition("#")[0].rpartition("@")[0]


def _board_folder(folder: Path, name: str) -> Path:
    """The folder ``name`` in ``folder``, checked: no link an earlier run (or a repository) left on the way in it.

    Raises:
        OSError: a folder on the way or a leaderboard file is a symbolic link (``ELOOP``, naming it), or ``name``
            leads out of ``folder``.
    """
    steps = Path(name).parts
    target = folder / name
    refuse_links(*(folder.joinpath(*steps[:count]) for count in range(1, len(steps) + 1)),
                 target / JSON_FILE, target / MARKDOWN_FILE)
    if not target.resolve().is_relative_to(folder.resolve()):  # a suite's dir: ../.. would write anywhere
        raise PermissionError(errno.EACCES, "a leaderboard's dir must be a folder in the output folder", str(target))
    return target


def load_board(path: Path) -> dict[str, Any]:
    """The leaderboard saved at ``path``, or an empty one when there is none yet; a link there is refused.

    Raises:
        OSError: ``path`` is a symbolic link (``ELOOP``), cannot be read, or is not a leaderboard.
    """
    refuse_links(path)  # its target is no board of ours: not read through
    if not path.is_file():
        return empty_board()
    try:
        with open_private(path, "rb") as handle:  # O_NOFOLLOW: a link put there since is refused too
            board = loads_bounded(handle.read().decode("utf-8", "replace"))
    except ValueError as exc:  # not JSON, or not bounded (too deep, a number out of range)
        raise _unreadable_board(path, str(exc)) from exc
    problem = _board_problem(board)
    if problem is not None:
        raise _unreadable_board(path, problem)
    return dict(board)


def _unreadable_board(path: Path, problem: str) -> OSError:
    """An OSError, as a file that cannot be written: the session stops in words, the board left as it is."""
    return OSError(errno.EINVAL, f"not a leaderboard this version can read ({problem}); move it away to start anew",
                   str(path))


def _board_problem(board: Any) -> str | None:
    """What in a saved leaderboard is not what ``apply_sessions`` writes, or None."""
    if not isinstance(board, dict) or not all(isinstance(board.get(k), t) for k, t in _BOARD_PARTS.items()):
        return "expected an object with elo_ratings, sessions and model_history"
    if not all(_is_number(v) for v in board["elo_ratings"].values()):
        return "an Elo rating is not a number"
    if not all(map(_is_session, board["sessions"])):
        return "a session is not an object with scores by model"
    if not all(isinstance(history, list) for history in board["model_history"].values()):
        return "a model's history is not a list"
    return None


def _is_session(session: Any) -> bool:
    scores = session.get("scores") if isinstance(session, dict) else None
    return isinstance(scores, dict) and all(map(_is_number, scores.values()))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_BOARD_PARTS = {"elo_ratings": dict, "sessions": list, "model_history": dict}


def update_leaderboard(
    spec: LeaderboardSpec, records: Sequence[CaseRecord], folder: Path, earlier: Sequence[CaseRecord] = ()
) -> dict[str, Any]:
    """Add the run's new sessions to the saved leaderboard and write both files.

    ``earlier``: the suite's records as the run held them before this session (a named run resumed, ``--lf``).
    The sessions they gave and ``records`` no longer give (a case of theirs re-run, a model added to a task's
    session) are taken off the board: they are replaced, not played twice.

    Returns:
        What ``report.md`` shows: ``json``, ``markdown`` (paths under the output folder), ``added`` (sessions
        new to the board), ``replaced`` (sessions played again in place of earlier ones of the run), ``total``,
        ``k``, ``initial``, ``expected_from`` and ``ratings`` (best first: ``model``, ``elo``, ``change`` over
        this run's sessions or None, ``sessions``).

    Raises:
        OSError: a file cannot be written, or the leaderboard's ``dir`` leads out of ``folder``.
    """
    target = _board_folder(folder, spec.dir)
    board = load_board(target / JSON_FILE)
    change = _BoardChange.of(board, sessions_from_records(spec, records), sessions_from_records(spec, earlier))
    board, again = change.apply(board, spec)
    target.mkdir(parents=True, exist_ok=True)
    write_atomically(target / JSON_FILE, json.dumps(board, indent=2, ensure_ascii=False) + "\n")
    write_atomically(target / MARKDOWN_FILE, render_leaderboard(board, spec))
    return {"json": f"{spec.dir}/{JSON_FILE}", "markdown": f"{spec.dir}/{MARKDOWN_FILE}",
            "added": len(change.new) - again, "replaced": again, "total": len(board["sessions"]), "k": spec.elo.k,
            "initial": spec.elo.initial, "expected_from": spec.elo.expected_from,
            "ratings": _ratings(board, change.played(), spec.elo.decimals)}


@dataclass(frozen=True)
class _BoardChange:
    """What a run changes on a saved board.

    Attributes:
        new: the run's sessions the board does not have.
        rescored: session id -> new scores, for the board's sessions the run judged again.
        replaced: the ids of the board's sessions the run gave earlier and gives no more.
    """

    new: list[dict[str, Any]]
    rescored: dict[Any, Any]
    replaced: set[Any]

    @classmethod
    def of(
        cls, board: Mapping[str, Any], ours: Sequence[dict[str, Any]], before: Sequence[dict[str, Any]]
    ) -> _BoardChange:
        """The change ``ours`` (this run's sessions) makes, where ``before`` are the sessions the run gave earlier."""
        known = {session.get("id"): session for session in board.get("sessions", [])}
        new = [session for session in ours if session["id"] not in known]
        rescored = {s["id"]: s["scores"] for s in ours if _rescored(known.get(s["id"]), s)}
        return cls(new, rescored, (_ids(before) - _ids(ours)) & known.keys())

    def played(self) -> set[Any]:
        """The ids of this session's sessions: played, or judged again."""
        return {session["id"] for session in self.new} | self.rescored.keys()

    def apply(self, board: dict[str, Any], spec: LeaderboardSpec) -> tuple[dict[str, Any], int]:
        """The board with the change, and how many sessions were played in place of an earlier one of the run."""
        if not (self.rescored or self.replaced):
            return apply_sessions(board, self.new, spec.elo), 0
        # Elo is applied in order: every session is applied again from the first;
        # a replaced session's successor (the same task and run, or case) takes its place, as a rebuild orders them
        successors = {_slot(session["id"]): session for session in self.new}
        waiting = len(successors)
        order = [self._in_place_of(old, successors) for old in board["sessions"]]
        again = waiting - len(successors)  # the successors that took a replaced session's place
        kept = [session for session in order if session is not None]
        return apply_sessions(empty_board(), [*kept, *successors.values()], spec.elo), again

    def _in_place_of(self, old: Mapping[str, Any], successors: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """What is played where ``old`` was: itself with its new scores, or its successor (taken off ``successors``)."""
        if old.get("id") not in self.replaced:
            return {**old, "scores": self.rescored.get(old.get("id"), old["scores"])}
        return successors.pop(_slot(str(old["id"])), None)


def _ids(sessions: Sequence[Mapping[str, Any]]) -> set[Any]:
    return {session["id"] for session in sessions}


def _rescored(saved: Mapping[str, Any] | None, session: Mapping[str, Any]) -> bool:
    """Whether a session the board holds comes back with other scores."""
    return saved is not None and saved.get("scores") != session["scores"]


def _ratings(board: Mapping[str, Any], played: set[Any], decimals: int) -> list[dict[str, Any]]:
    """Best first: each model's Elo, its change over the ``played`` sessions (None: none of them), its sessions."""
    ratings = []
    for model, elo in sorted(board["elo_ratings"].items(), key=lambda item: item[1], reverse=True):
        history = board["model_history"].get(model, [])
        change = _change(history, played, decimals)
        ratings.append({"model": model, "elo": elo, "change": change, "sessions": len(history)})
    return ratings


def _change(history: Sequence[Mapping[str, Any]], played: set[Any], decimals: int) -> float | None:
    """A model's Elo change over the ``played`` sessions; None when it played none of them."""
    changes = [entry["elo_change"] for entry in history if entry.get("session") in played]
    return round(sum(changes), decimals) if changes else None


def _trend(change: float) -> str:
    if change > 0:
        return f"🔺 +{change:.0f}"
    if change < 0:
        return f"🔻 {change:.0f}"
    return "➖"  # noqa: RUF001 - the emoji of an unchanged rating in LEADERBOARD.md (BackroomsBench's), not a hyphen


def render_leaderboard(board: Mapping[str, Any], spec: LeaderboardSpec) -> str:
    """``LEADERBOARD.md`` as BackroomsBench writes it: rankings, recent sessions and a footer.

    The rankings give medals for the top three, the trend of the last change and Elo as a whole number; the
    last ``recent`` sessions come newest first with models by score; the footer gives K, the start rating and
    the number of sessions.
    """
    lines = [f"# {markdown_text(spec.title)}", ""]
    if spec.tagline:
        lines += [f'*"{markdown_text(spec.tagline)}"*', ""]
    lines += ["---", "", "## Current Rankings", "", "| Rank | Model | Elo | Trend | Sessions |",
              "|------|-------|-----|-------|----------|"]
    lines += _ranking_lines(board)
    lines += ["", "---", "", "## Recent Sessions", ""]
    lines += _recent_lines(board, spec.recent)
    expected = "" if spec.elo.expected_from == "session_scores" else " Expected scores come from the ratings."
    lines += ["---", "", f"*Elo ratings use K={spec.elo.k:g}. Models start at {spec.elo.initial:g}.{expected}*  ",
              f"*Total sessions: {len(board['sessions'])}*", ""]
    return "\n".join(lines)


def _ranking_lines(board: Mapping[str, Any]) -> list[str]:
    """A row per model, best first: medals for the top three, the trend of its last change, Elo, sessions."""
    lines = []
    ranked = sorted(board["elo_ratings"].items(), key=lambda item: item[1], reverse=True)
    for rank, (model, elo) in enumerate(ranked, 1):
        history = board["model_history"].get(model, [])
        change = history[-1].get("elo_change", 0) if history else 0
        medal = MEDALS[rank - 1] if rank <= len(MEDALS) else ""
        lines.append(f"| {rank} | {medal}{markdown_cell(model)} | {elo:.0f} | {_trend(change)} | {len(history)} |")
    return lines


def _recent_lines(board: Mapping[str, Any], recent: int) -> list[str]:
    """The last ``recent`` sessions, newest first, each with its models by score."""
    lines = []
    for session in list(reversed(board["sessions"]))[:recent]:
        lines += [f"### {markdown_text(session['timestamp'])} - {markdown_text(session['scenario'])}", ""]
        for model, score in sorted(session["scores"].items(), key=lambda item: item[1], reverse=True):
            lines.append(f"- **{markdown_text(model)}**: {markdown_text(score)}")
        lines.append("")
    return lines
