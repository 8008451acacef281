"""The options of a ``runs_tests`` scorer, checked once at parse: which code, which tests, which command, how long.

Whether the named test files exist is the case's to tell (their names may be templates): ``scorer.py``
checks them at collection, in ``check_case``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from bench_plugin.core.frozen import freeze_fields
from bench_plugin.scoring.options import check_choice, check_flag, check_option_names, is_number
from bench_plugin.suite.spec import ScorerSpec

CODE_CHOICES = ("first_block", "last_block", "answer")
DEFAULT_FILE = "solution.py"
JUNIT_FILE = ".bench-junit.xml"
"""Where the default command has pytest write its JUnit XML report, in the workspace."""
# -W: the warnings plugins print at start-up are not the answer's
DEFAULT_COMMAND = ("python3", "-W", "ignore::DeprecationWarning", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:bench_plugin", f"--junitxml={JUNIT_FILE}")
"""The default command, followed by the test files' names in the workspace (so any name is collected)."""
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
OPTIONS = ("tests", "test_files", "command", "file", "code", "language", "timeout", "partial_credit")


@dataclass(frozen=True)
class RunsTestsOptions:
    """A ``runs_tests`` scorer's options, typed.

    ``tests`` are paths (templates) of files or folders in the suite's folder, copied into the workspace
    under their own names; ``test_files`` inline files (name -> template text); ``command`` the argv run in
    the workspace; ``file`` where the code is written; ``code`` which part of the answer is the code;
    ``language`` the fenced blocks that count (None: any); ``timeout_s`` how long the command may run;
    ``partial_credit`` whether the value is the share of tests passed (else 1 or 0).
    """


    tests: tuple[str, ...] = ()
    test_files: Mapping[str, str] = field(default_factory=dict)
    command: tuple[str, ...] | None = None
    file: str = DEFAULT_FILE
    code: str = "first_block"
    language: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    partial_credit: bool = True

    def __post_init__(self) -> None:
        freeze_fields(self, "test_files")

    @classmethod
    def parse(cls, spec: ScorerSpec) -> RunsTestsOptions:
        """Read and check the options of ``spec``.

        Raises:
            ValueError: (or TypeError) naming the option and what it should be.
        """
        options = spec.options
        check_option_names(options, OPTIONS, spec.type)
        tests, test_files = _tests(options.get("tests", [])), _test_files(options.get("test_files", {}))
        if not tests and not test_files:
            raise ValueError("runs_tests needs tests: (files in the suite's folder) or test_files: (inline tests)")
        file = _workspace_path("file", options.get("file", DEFAULT_FILE))
        if file in test_files:
            raise ValueError(f"file: {file!r} is also one of test_files:; the answer's code needs a file of its own")
        language = options.get("language")
        if language is not None and not (isinstance(language, str) and language.strip()):
            raise ValueError(f"language must be a fence's language tag such as 'python', got {language!r}")
        return cls(
            tests=tests, test_files=test_files, command=_command(options["command"]) if "command" in options else None,
            file=file, code=check_choice("code", options.get("code", "first_block"), CODE_CHOICES),
            language=language.strip().lower() if language is not None else None,
            timeout_s=_timeout(options.get("timeout", DEFAULT_TIMEOUT_S)),
            partial_credit=check_flag("partial_credit", options.get("partial_credit", True)),
        )


def _tests(value: Any) -> tuple[str, ...]:
    """``tests``: one path or a list of them, each non-empty text."""
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not all(isinstance(path, str) and path.strip() for path in paths):
        raise ValueError(f"tests must be a path in the suite's folder or a list of them, got {value!r}")
    return tuple(paths)


def _test_files(value: Any) -> dict[str, str]:
    """``test_files``: workspace paths to text."""
    if not isinstance(value, Mapping) or not all(isinstance(text, str) for text in value.values()):
        raise ValueError(f"test_files must map file names to their text, got {value!r}")
    return {_workspace_path(f"test_files[{name!r}]", name): text for name, text in value.items()}


def _workspace_path(key: str, value: Any) -> str:
    """A file name inside the workspace: relative, without ``..``."""
    path = PurePosixPath(str(value).replace("\\", "/")) if isinstance(value, str) else None
    if path is None or not value.strip() or path.is_absolute() or ".." in path.parts or path.as_posix() == ".":
        raise ValueError(f"{key} must be a file name inside the workspace (relative, no '..'), got {value!r}")
    return path.as_posix()


def _command(value: Any) -> tuple[str, ...]:
    """``command``: a list of arguments, or a string split like a shell would (never run by one)."""
    if isinstance(value, list) and value and all(isinstance(part, (str, int, float)) for part in value):
        return tuple(str(part) for part in value)
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"command {value!r} cannot be split: {exc}") from exc
        if argv:
            return tuple(argv)
    raise ValueError(f"command must be a list of arguments or a command line, got {value!r}")


def _timeout(value: Any) -> float:
    if not is_number(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise ValueError(f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}, got {value!r}")
    return float(value)
