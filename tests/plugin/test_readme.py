"""The README's tutorial does what the README says it does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def tutorial_suite() -> str:
    block = re.search(r"1\. Write `suites/my_bench.yaml`:\n\n   ```yaml\n(.*?)   ```", README, re.DOTALL)
    assert block, "the tutorial's suite block moved"
    return "\n".join(line[3:] for line in block.group(1).splitlines()) + "\n"


def readme_block_after(marker: str) -> list[str]:
    start = README.index(marker)
    block = re.search(r"```\n(.*?)   ```", README[start:], re.DOTALL)
    assert block
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_tutorial_collects_the_ids_the_readme_shows(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/my_bench": tutorial_suite()})
    result = pytester.runpytest("suites/my_bench.yaml", "--collect-only", "-q")
    assert readme_block_after("2. See the cases") == [line for line in result.stdout.lines if "::" in line]


def test_tutorial_passes(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/my_bench": tutorial_suite()})
    pytester.runpytest("suites/my_bench.yaml").assert_outcomes(passed=2)


def test_tutorial_typo_message_is_the_one_shown(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/my_bench": tutorial_suite().replace("prompt:", "promt:")})
    result = pytester.runpytest("suites/my_bench.yaml")
    expected = readme_block_after("4. A mistake points at the line")
    result.stdout.fnmatch_lines(["*" + fnmatch_literal(line) + "*" for line in expected])


def fnmatch_literal(text: str) -> str:
    """Escape fnmatch's special characters so ``text`` matches only itself."""
    return re.sub(r"([][*?])", r"[\1]", text)


def readme_ci_gates() -> str:
    section = README[README.index("## In CI: is this commit worse than main?"):]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block, "the CI section's gates block moved"
    return block.group(1)


def test_the_ci_sections_gates_hold_against_an_unchanged_baseline(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/my_bench": tutorial_suite() + readme_ci_gates()})
    first = pytester.runpytest("suites/", "--bench-output", "main-results", "--bench-html", "off")
    first.assert_outcomes(passed=3, skipped=1)  # the two cases, the absolute gate; the relative one has no baseline
    again = pytester.runpytest("suites/", "--bench-baseline", "main-results", "--bench-exit-on-gates",
                               "--bench-html", "off")
    assert again.ret == 0
    again.stdout.fnmatch_lines(["*quality gates*"])
