"""Lines of a continued results file that are not case records, set aside in ``results.rejected.jsonl``.

A named run's results.jsonl may have been edited, copied from a colleague or damaged: a line that is not what
we write stopped a resumed run (or ``--bench-rejudge``) before. The controller now moves each such line, as it
was, to ``results.rejected.jsonl`` beside it (0600, appended to) and rewrites results.jsonl without it, so the
session goes on and the case whose line it was runs again. Nothing is lost: the line can be read and mended.
"""

from __future__ import annotations

from pathlib import Path

from bench_plugin.core.private_files import open_private, refuse_links
from bench_plugin.results.store import check_record_line, write_all, write_atomically

REJECTED_SUFFIX = ".rejected.jsonl"
_CHUNK = 1 << 20


def rejected_path(results: Path) -> Path:
    """Where the lines set aside from ``results`` go: ``results.rejected.jsonl`` beside ``results.jsonl``."""
    return results.with_name(results.stem + REJECTED_SUFFIX)


def set_aside_bad_lines(results: Path) -> list[str]:
    """Move the whole lines of ``results`` that are not case records to ``rejected_path``; their ``path:line: why``.

    A torn last line (no newline: a killed run) is left where it is: the store cuts it off.

    Raises:
        OSError: a file cannot be read or written, or is a symbolic link (``filename`` names it); results.jsonl is
            then as it was.
    """
    refuse_links(results)  # a planted link is refused by name, not read through
    if not results.is_file():
        return []
    data = results.read_bytes()
    cut = data.rfind(b"\n") + 1
    kept: list[bytes] = []
    rejected: list[bytes] = []
    problems: list[str] = []
    for number, raw in enumerate(data[:cut].splitlines(keepends=True), start=1):
        problem = _line_problem(raw, results, number)
        (kept if problem is None else rejected).append(raw)
        if problem is not None:
            problems.append(problem)
    if rejected:
        with open_private(rejected_path(results), "ab") as aside:  # first: a failure loses no line
            write_all(aside, b"".join(rejected))
        pieces = [raw.decode("utf-8", "replace") for raw in [*kept, data[cut:]]]
        write_atomically(results, pieces, private=True)
    return problems


def _line_problem(raw: bytes, path: Path, number: int) -> str | None:
    """Why a whole line is not a case record (``path:line: why``), or None: a record, or a blank line."""
    line = raw.decode("utf-8", "replace")
    if not line.strip():
        return None
    try:
        check_record_line(line, path, number)
    except ValueError as exc:
        return str(exc)
    return None


def earlier_set_aside(results: Path, fresh: int = 0) -> list[str]:
    """``path:line: why`` of each line ``rejected_path`` holds from before this session (its ``fresh`` last ones).

    The lines set aside stay out of results.jsonl for good, so every later report (a resumed session,
    ``bench report``) counts them too, not only the session that moved them. A link there is not ours: it holds none.
    """
    aside = rejected_path(results)
    try:
        with open_private(aside, "rb") as handle:
            count = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(_CHUNK), b""))
    except OSError:  # none, unreadable, or a planted link
        return []
    return [f"{aside}:{number}: set aside by an earlier session (not a case record)"
            for number in range(1, count - fresh + 1)]


def set_aside_lines(problems: list[str] | tuple[str, ...], results: Path, before: int = 0) -> list[str]:
    """What the terminal says of the lines set aside: each ``path:line: why``, then where they went and what follows.

    ``before``: how many lines earlier sessions set aside, still left out (said in one line).
    """
    earlier = [f"{before} line{'s' * (before != 1)} set aside by earlier sessions stay{'s' * (before == 1)} in "
               f"{rejected_path(results)}: left out of the figures, counted in report.md and summary.json"] \
        if before else []
    if not problems:
        return earlier
    many = len(problems) != 1
    return earlier + [f"warning: {problem}; that line is left out" for problem in problems] + [
        f"{len(problems)} record{'s' * many} left out: {'not case records' if many else 'not a case record'} this "
        f"version can read, moved as {'they were' if many else 'it was'} to {rejected_path(results)}; "
        f"{'their cases run' if many else 'its case runs'} again"]
