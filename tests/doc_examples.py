"""Example suites marked in a Markdown page, and how one is run: shared by the tests of every doc page.

An example is marked by an HTML comment on the line before its fence::

    <!-- example: capitals passed=4 failed=2 -->
    ```yaml
    ...
    ```

The marker's ``key=value`` pairs are the outcomes passed to ``assert_outcomes`` (``passed``,
``failed``, ``skipped``, ``errors``...), plus three optional ones: ``expect="text"`` (a line of the
output must contain it), ``report="text"`` (the run's ``report.md`` must contain it) and
``args="--bench-runs 2"`` (extra command-line arguments, split like a shell would). Files the
example needs are marked ``<!-- file: NAME/relative/path -->``, the path being relative to ``suites/``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

_MARKER = re.compile(r"^<!--\s*(?P<kind>example|file):\s*(?P<body>.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(?P<ticks>`{3,})[\w+-]*\s*$")
_CLOSING = re.compile(r"^ {0,3}(?P<ticks>`{3,})\s*$")
_OUTCOME_KEYS = ("passed", "failed", "skipped", "errors", "xfailed", "xpassed", "deselected")


@dataclass
class Example:
    name: str
    suite: str = ""
    outcomes: dict[str, int] = field(default_factory=dict)
    expect: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    line: int = 0


def _fenced_block(lines: list[str], start: int, where: str) -> str:
    """The text of the fenced block that opens on ``lines[start]``."""
    opening = _FENCE.match(lines[start]) if start < len(lines) else None
    if opening is None:
        raise ValueError(f"{where}: the marker must be followed directly by a ``` fence")
    ticks = opening.group("ticks")
    for end in range(start + 1, len(lines)):
        closing = _CLOSING.match(lines[end])
        if closing is not None and len(closing.group("ticks")) >= len(ticks):
            return "".join(line + "\n" for line in lines[start + 1 : end])
    raise ValueError(f"{where}: the fence opened on line {start + 1} is never closed")


def _parse_marker(body: str, where: str) -> Example:
    name, *pairs = shlex.split(body)
    example = Example(name=name)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"{where}: expected key=value in the marker, got {pair!r}")
        if key in _OUTCOME_KEYS:
            example.outcomes[key] = int(value)
        elif key == "expect":
            example.expect.append(value)
        elif key == "report":
            example.report.append(value)
        elif key == "args":
            example.args.extend(shlex.split(value))
        else:
            raise ValueError(f"{where}: unknown marker key {key!r}")
    return example


def load_examples(path: Path) -> list[Example]:
    """Every example of the page at ``path``, with the files that belong to it, in document order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: dict[str, Example] = {}
    files: list[tuple[str, str, str]] = []
    for number, line in enumerate(lines):
        match = _MARKER.match(line.strip())
        if match is None:
            continue
        where = f"{path.name}:{number + 1}"
        text = _fenced_block(lines, number + 1, where)
        if match.group("kind") == "example":
            example = _parse_marker(match.group("body"), where)
            if example.name in examples:
                raise ValueError(f"{where}: a second example named {example.name!r}")
            example.suite, example.line = text, number + 1
            examples[example.name] = example
        else:
            owner, _, relative = match.group("body").partition("/")
            if not relative:
                raise ValueError(f"{where}: expected <!-- file: EXAMPLE/relative/path -->")
            files.append((owner, relative, text))
    for owner, relative, text in files:
        if owner not in examples:
            raise ValueError(f"<!-- file: {owner}/{relative} -->: no example named {owner!r}")
        examples[owner].files[relative] = text
    if not examples:
        raise ValueError(f"{path}: no <!-- example: NAME --> markers found")
    return list(examples.values())


def run_example(pytester: pytest.Pytester, example: Example, page: str, *, cache: bool = False) -> pytest.RunResult:
    """Write ``example`` (and its files) under ``suites/``, run pytest on it, and check the marker's outcomes.

    Args:
        pytester: the test's pytester; its ini must already be written.
        example: the example to run.
        page: the page's path, for the failure message (``docs/suite-guide.md``).
        cache: keep pytest's cache provider (for ``--lf``); off by default, so a run leaves nothing behind.

    Returns:
        The run's result, for further checks.
    """
    suites = pytester.path / "suites"
    for relative, text in example.files.items():
        target = suites / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    suites.mkdir(exist_ok=True)
    (suites / f"{example.name}.yaml").write_text(example.suite, encoding="utf-8")
    result = pytester.runpytest("suites", *([] if cache else ["-p", "no:cacheprovider"]), *example.args)
    output = result.stdout.str()
    context = f"example {example.name!r} ({page}:{example.line}):\n{output}"
    try:
        result.assert_outcomes(**example.outcomes)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{context}") from None
    for text in example.expect:
        try:
            result.stdout.fnmatch_lines([f"*{_literal(text)}*"])
        except pytest.fail.Exception:
            raise AssertionError(f"no line of the output contains {text!r}\n{context}") from None
    if example.report:
        report = (output_dir(pytester, example) / "report.md").read_text(encoding="utf-8")
        for text in example.report:
            assert text in report, f"report.md does not contain {text!r}\n{report}\n{context}"
    return result


def output_dir(pytester: pytest.Pytester, example: Example) -> Path:
    """Where the example's run wrote its files.

    That is ``--bench-output DIR`` (default ``bench-results``), and in it ``runs/NAME`` for a named run
    (``--bench-run NAME``).
    """
    given = dict(zip(example.args, example.args[1:], strict=False))
    folder = pytester.path / given.get("--bench-output", "bench-results")
    return folder / "runs" / given["--bench-run"] if "--bench-run" in given else folder


def _literal(text: str) -> str:
    """Escape fnmatch's special characters, so ``expect`` text matches only itself."""
    return re.sub(r"([][*?])", r"[\1]", text)
