"""The exception tree: every error the plugin raises on purpose.

    BenchError
     +-- SuiteError                 the YAML is wrong: file, line, key path, expected, found
     |    +-- CaseError             one case cannot run (unknown model, template error); it fails alone
     +-- ProviderError              a model call did not give a usable answer
     |    +-- TransientProviderError    worth retrying: timeout, connection, 429, 5xx, bad body
     |    +-- AuthError                 401/403 or a missing key: retrying cannot help
     |    +-- ReplayMissError           an offline replay has no recorded answer: the case is skipped
     |    +-- RecordedFailureError      an offline replay serves a recorded failure: ERROR (or XFAIL)
     +-- JudgeError                 a judge answered but its verdict cannot be read: unscored
     +-- SandboxError               agent commands need a sandbox and none that may be used works here: skipped
     +-- UnknownName (also ValueError)  a registry has nothing by that name (scorer type, engine, provider type)

    Signals that never leave their stage:
    ToolFailure           a tool call failed; the model is told and the agent run goes on
    LimitExceeded         (a jinja2 SecurityError) a template hit a bound; turned into a CaseError
    CaseFailed, InfrastructureError   how an item tells pytest FAILED or ERROR with a message only

Lower layers (httpx, json, jinja2) are translated at the boundary and chained with `raise ... from`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from jinja2.exceptions import SecurityError
from typing_extensions import Self

from bench_plugin.core.text_safety import log_line, shown

SuiteErrorT = TypeVar("SuiteErrorT", bound="SuiteError")
T = TypeVar("T")


class BenchError(Exception):
    """Base of every error the plugin raises on purpose."""


class SuiteError(BenchError):
    """A problem in a suite file, shown to the suite author without a traceback.

    Args:
        message: what was expected and what was found.
        path: the suite file, as the user would type it.
        line: 0-based line of the offending key, or None when unknown.
        key: the key path, e.g. ``tasks[3].scorers[1].weight``.
        hint: an optional suggestion printed on its own line.
        excerpt: optional source lines quoted under the message.
        column: 0-based column, when the exact spot is known (a YAML syntax error); printed after the line.

    A check that finds several problems raises them at once (``all_of``): the first is the error itself, the
    others ride in ``others`` and are printed after it, each in the same form, so one run names every mistake.
    """

    others: tuple[SuiteError, ...] = ()

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
        excerpt: str | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.key = key
        self.hint = hint
        self.excerpt = excerpt
        self.column = column

    def located(
        self, path: str | None = None, line: int | None = None, key: str | None = None
    ) -> Self:
        """Return a copy that fills in location fields this error does not have yet."""
        copy = type(self)(
            self.message,
            path=self.path or path,
            line=self.line if self.line is not None else line,
            key=self.key or key,
            hint=self.hint,
            excerpt=self.excerpt,
            column=self.column if self.line is not None else None,
        )
        copy.others = tuple(other.located(path) for other in self.others)
        return copy

    def problems(self) -> tuple[SuiteError, ...]:
        """Every problem this error stands for: itself (without the others), then each of the others."""
        alone = type(self)(self.message, path=self.path, line=self.line, key=self.key, hint=self.hint,
                           excerpt=self.excerpt, column=self.column)
        return (alone, *self.others)

    def __str__(self) -> str:
        return "\n".join(problem.text() for problem in self.problems()) if self.others else self.text()

    def text(self) -> str:
        """This problem alone: ``file:line: key: message``, the quoted lines and the hint."""
        where = log_line(self.path or "<suite>")
        if self.line is not None:
            where = f"{where}:{self.line + 1}"
            if self.column is not None:
                where = f"{where}:{self.column + 1}"
        head = f"{where}: {log_line(self.key)}: {self.message}" if self.key else f"{where}: {self.message}"
        parts = [head]
        if self.excerpt:
            parts.append(self.excerpt)
        if self.hint:
            parts.append(f"  hint: {self.hint}")
        return shown("\n".join(parts))  # a key or a line of the file may hold escape sequences


def all_of(problems: Sequence[SuiteErrorT]) -> SuiteErrorT | None:
    """One error standing for every problem in ``problems`` (the first, the others in it), or None when none.

    Example: ``error = all_of(found)`` then ``if error is not None: raise error``: every mistake said at once.
    """
    if not problems:
        return None
    first = problems[0].located()  # a copy: the same problem may stand in several cases' errors
    first.others = (*first.others, *(problem for each in problems[1:] for problem in each.problems()))
    return first


class Problems:
    """The problems of checks run one after another, raised together at the end (``all_of``).

    Example: ``problems.run(check_a)``, ``problems.run(check_b)``, then ``problems.raise_found()``.
    """

    def __init__(self) -> None:
        self.found: list[SuiteError] = []

    def run(self, check: Callable[[], T]) -> T | None:
        """``check()``, or None when it raised a SuiteError (kept to raise with the others)."""
        try:
            return check()
        except SuiteError as exc:
            self.found.append(exc)
            return None

    def raise_found(self) -> None:
        """Raise every problem found so far, as one error (the first, the others in it); nothing when none.

        Raises:
            SuiteError: the first problem found, carrying the others.
        """
        every = [problem for found in self.found for problem in found.problems()]
        if not every:
            return
        first = every[0].path
        every.sort(key=lambda problem: (problem.path != first, problem.line if problem.line is not None else -1))
        error = all_of(every)  # in file order: as a reader goes through the file
        if error is not None:
            raise error


class CaseError(SuiteError):
    """A problem confined to one case; that case fails and the rest of the run goes on."""


class ProviderError(BenchError):
    """A model call that did not give a usable answer.

    Args:
        message: what went wrong, already free of API keys.
        status: the HTTP status when there was one.
        retry_after: seconds the server asked us to wait, when it said so.
        kind: a short class of failure for records (see ``kind``).
        expected: the suite expects this failure (a replayed recorded one): the case is still an
            infrastructure failure in records and reports, but pytest shows it as XFAIL.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        kind: str | None = None,
        expected: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self._kind = kind
        self.expected = expected

    @property
    def kind(self) -> str:
        """A short stable name for records and reports; defaults from the status or the class.

        For example ``timeout``, ``connection``, ``http_429``, ``http_5xx``, ``malformed``, ``auth``,
        ``http_4xx``, ``replay_miss``.
        """
        if self._kind:
            return self._kind
        if self.status is not None:
            return f"http_{self.status}"
        names = {"AuthError": "auth", "ReplayMissError": "replay_miss", "RecordedFailureError": "recorded_failure"}
        return names.get(type(self).__name__, "provider")


def is_rate_limit(exc: BaseException) -> bool:
    """A 429 (or an error payload that names one): the server asks us to slow down, nothing is broken.

    The one test of it: retries wait instead of backing off, and the circuit breaker does not count it.
    """
    return isinstance(exc, ProviderError) and (exc.status == 429 or exc.kind == "http_429")


class TransientProviderError(ProviderError):
    """A failure that may go away if the same call is made again."""


class AuthError(ProviderError):
    """The endpoint refused our credentials, or the key variable is not set."""


class ReplayMissError(ProviderError):
    """An offline replay has no recorded answer for this call; the case is skipped, not failed."""


class RecordedFailureError(ProviderError):
    """A replayed recording says this call failed when it was made: an infrastructure failure, never a score.

    For example a generation that errored when the benchmark was first run.
    """


class JudgeError(BenchError):
    """A judge replied, but no verdict could be read from the reply: the case is unscored."""


class SandboxError(BenchError):
    """An agent case must run programs, and no sandbox it may use works on this machine.

    The case is skipped with the reason and the fix (re-running cannot help): the model is not called.

    Args:
        message: the backends tried and why each does not work.
        hint: how to make one work, or how to opt out of isolation.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ToolFailure(Exception):
    """A tool call that could not be done; its message is what the model is told, and the run goes on.

    For example bad arguments, a path outside the workspace, a program not on the allow-list, a timeout.
    """


class CaseFailed(Exception):
    """The case ran and did not pass, or could not run: the message is all the user needs."""


class UnknownName(BenchError, ValueError):
    """A name no source of a registry knows; the message lists the choices and a did-you-mean."""


class LimitExceeded(SecurityError):
    """A template asked for more than a limit allows (the sandbox turns it into a CaseError)."""
