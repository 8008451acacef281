"""The README's tutorial does what the README says it does."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SUITES = Path(__file__).resolve().parents[2] / "suites"


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


def readme_mock_run() -> tuple[list[str], list[dict[str, object]]]:
    """The README's pytest command against the mock server (its arguments), and the rules it shows."""
    start = README.index("To try the HTTP path without a real model")
    section = README[start:README.index("\n## ", start)]
    command = re.search(r"^pytest (suites/capitals\.yaml .*)$", section, re.MULTILINE)
    rules = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert command and rules, "the mock server's example moved"
    return command.group(1).split(), yaml.safe_load(rules.group(1))


@pytest.mark.parametrize(("with_rules", "passed"), [(False, 0), (True, 1)], ids=["echo", "rules"])
def test_the_mock_server_example_ends_as_the_readme_says(
    pytester: pytest.Pytester, with_rules: bool, passed: int
) -> None:
    from bench_plugin.mock.server import MockServer

    args, rules = readme_mock_run()
    pytester.makefile(".yaml", **{"suites/capitals": (SUITES / "capitals.yaml").read_text(encoding="utf-8")})
    shutil.copytree(SUITES / "data", pytester.path / "suites" / "data")
    shutil.copytree(SUITES / "prompts", pytester.path / "suites" / "prompts")
    with MockServer(rules=rules if with_rules else None) as server:
        args = [arg.replace("http://127.0.0.1:8000", server.url) for arg in args]
        result = pytester.runpytest(*args, "--bench-html", "off")
    result.assert_outcomes(passed=passed, failed=8 - passed)
    assert result.ret == 1
    # the reason the README gives; with the rule, France is answered right and the others still echo
    result.stdout.fnmatch_lines(["*expected to contain 'Tokyo'*not found*"])
    assert ("expected to contain 'Paris'" in result.stdout.str()) is not with_rules
