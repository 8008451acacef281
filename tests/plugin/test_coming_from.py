"""docs/coming-from.md, for promptfoo and inspect_ai users: every example runs as marked, every mapping is used.

The examples are marked as in the suite guide (``tests/doc_examples.py`` reads the markers). The page's
mapping tables end with an ``example`` column: a row that claims an equivalent names the examples that
use it, and the first code span of its ``here`` column (the key or type it maps to) must appear in one
of them; a row without an example must say plainly that there is **no equivalent** (or no built-in).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_examples import Example, load_examples, output_dir, run_example

from bench_plugin.scoring.code import read_result
from bench_plugin.suite.templates import TemplateRenderer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "coming-from.md"
PAGE_NAME = "docs/coming-from.md"

EXAMPLES = load_examples(PAGE)
_BY_NAME = {example.name: example for example in EXAMPLES}

_CODE = re.compile(r"`([^`]+)`")
# what every run writes (each example's test checks the files), and the command that runs it
RUN_PRODUCTS = ("pytest", "results.jsonl", "report.md", "summary.json", "report.html", "dashboard.html")
# options whose row is checked by a test of its own below (``--lf`` needs a second run)
OWN_TESTS = ("--lf", "-m")
_NO_EQUIVALENT = re.compile(r"\*\*no (equivalent|built-in)\*\*", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    line: int
    peer: str
    here: str
    examples: tuple[str, ...]


def _cells(line: str) -> list[str]:
    r"""The cells of a Markdown table line; an escaped ``\|`` (as in ``\| int``) does not split."""
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def mapping_rows(path: Path = PAGE) -> list[Row]:
    """The rows of every table whose last heading is ``example``."""
    rows: list[Row] = []
    in_mapping = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|"):
            in_mapping = False
            continue
        cells = _cells(line)
        if cells[-1] == "example":
            in_mapping = True
            continue
        if not in_mapping or set(line) <= set("|-: "):
            continue
        if len(cells) != 3:
            raise ValueError(f"{path.name}:{number}: a mapping row has 3 cells, not {len(cells)}: {line}")
        rows.append(Row(number, cells[0], cells[1], tuple(_CODE.findall(cells[2]))))
    return rows


ROWS = mapping_rows()


@pytest.fixture
def restored_environment() -> Iterator[None]:
    """An example reads an env file (``--bench-env-file``): whatever it sets must not outlive the test."""
    before = dict(os.environ)
    yield
    for name in set(os.environ) - set(before):
        del os.environ[name]
    os.environ.update(before)


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
@pytest.mark.usefixtures("restored_environment")
def test_coming_from_example_runs_offline_and_ends_as_declared(pytester: pytest.Pytester, example: Example) -> None:
    run_example(pytester, example, PAGE_NAME)
    written = output_dir(pytester, example)
    missing = [name for name in RUN_PRODUCTS if name != "pytest" and not (written / name).is_file()]
    assert missing == [], f"example {example.name!r} wrote no {', '.join(missing)} in {written}"


def test_filter_failing_is_pytest_last_failed(pytester: pytest.Pytester) -> None:
    """The ``--filter-failing`` row: a second run with ``--lf`` runs only the echo model's four failures.

    (pytest leaves the cases that passed out while it collects the file, so they are not counted as deselected.)
    """
    example = _BY_NAME["pf-getting-started"]
    cached = Example(example.name, example.suite, {"passed": 4, "failed": 4})
    run_example(pytester, cached, PAGE_NAME, cache=True)
    again = Example(example.name, example.suite, {"passed": 0, "failed": 4}, args=["--lf"])
    run_example(pytester, again, PAGE_NAME, cache=True)


def test_one_prompt_runs_alone_by_its_marker(pytester: pytest.Pytester) -> None:
    """The ``-p``/``--prompts`` row: ``-m prompt_prompt2`` keeps the second prompt's cases only."""
    example = _BY_NAME["pf-getting-started"]
    one_prompt = Example(example.name, example.suite, {"passed": 2, "failed": 2, "deselected": 4},
                         args=["-m", "prompt_prompt2"])
    run_example(pytester, one_prompt, PAGE_NAME)


def test_every_mapping_row_names_an_example_that_uses_it_or_says_there_is_none() -> None:
    assert len(ROWS) > 100, "the mapping tables were not found"
    problems = []
    for row in ROWS:
        where = f"{PAGE_NAME}:{row.line} ({row.peer})"
        unknown = [name for name in row.examples if name not in _BY_NAME]
        if unknown:
            problems.append(f"{where}: no example named {', '.join(unknown)}")
            continue
        if _NO_EQUIVALENT.search(first_clause(row.here)):
            continue  # says plainly that there is none; the examples it names, if any, show the nearest way
        if not row.examples:
            problems.append(f"{where}: names no example and does not say **no equivalent** first")
            continue
        claimed = claimed_names(row.here)
        if not claimed:
            problems.append(f"{where}: the 'here' column names no key or type in `code` before its first clause")
            continue
        text = "\n".join(_text(_BY_NAME[name]) for name in row.examples)
        missing = [name for name in claimed if name not in text and name not in RUN_PRODUCTS + OWN_TESTS]
        if missing:
            problems.append(f"{where}: {', '.join(missing)} appear(s) in none of {', '.join(row.examples)}")
    assert not problems, "\n".join(problems)


def test_every_example_is_named_by_some_mapping_row() -> None:
    named = {name for row in ROWS for name in row.examples}
    assert sorted(set(_BY_NAME) - named) == []


def test_the_page_is_linked_from_the_readme_and_the_guide() -> None:
    root = PAGE.parents[1]
    assert "docs/coming-from.md" in (root / "README.md").read_text(encoding="utf-8")
    assert "(coming-from.md)" in (root / "docs" / "suite-guide.md").read_text(encoding="utf-8")


def claimed_names(here: str) -> list[str]:
    """The keys, types and options a row maps to: the code spans of its first clause, each cut to its name.

    The first clause ends at the first ``;``, `` (`` or `` — ``: what follows explains, or adds the nearest
    way round. ``prompts: [{prompt_file: x}]`` gives ``prompts``, ``--bench-limit N`` gives ``--bench-limit``,
    ``{% for x in y %}`` gives ``for``.
    """
    names = []
    for code in _CODE.findall(first_clause(here)):
        name = re.sub(r"[\s:=(\[{,|].*", "", re.sub(r"^[\s{%\[]+", "", code))
        if name:
            names.append(name)
    return names


def first_clause(here: str) -> str:
    """A row's claim: its text up to the first ``;``, `` (`` or `` — ``."""
    return re.split(r";| \(| — ", here, maxsplit=1)[0]


def _text(example: Example) -> str:
    """Everything an example consists of: its suite, its files and its command line."""
    return "\n".join([example.suite, *example.files.values(), " ".join(example.args)])


def test_the_differences_name_a_bare_number_and_a_prompt_files_newline_as_the_code_has_them(tmp_path: Path) -> None:
    """Two promptfoo habits that change results here are listed, each with a fix that works."""
    page = PAGE.read_text(encoding="utf-8")
    differences = page.split("### Differences that change results", 1)[1].split("\n## ", 1)[0]
    assert "returning a bare number" in differences and "keep their trailing newline" in differences
    assert read_result(0.4, None) == (0.4, None, "")  # counts toward the score, decides nothing
    with pytest.raises(ValueError, match="expected a number from 0 to 1"):
        read_result(3, None)
    assert read_result({"pass": 3 > 0, "score": min(3, 1)}, None) == (1.0, True, "")  # the fix the page gives
    (tmp_path / "kept.txt").write_text("Hi {{ name }}\n")
    (tmp_path / "trimmed.txt").write_text("Hi {{ name }}{#- -#}\n")
    renderer = TemplateRenderer(tmp_path, "suites/demo.yaml")
    assert renderer.render_file("kept.txt", {"name": "Ada"}) == "Hi Ada\n"
    assert renderer.render_file("trimmed.txt", {"name": "Ada"}) == "Hi Ada"
