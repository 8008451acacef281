r"""Escape sequences in data never reach the terminal: every line we print shows them as visible escapes.

The probe is a model id, a YAML key or an error text holding an OSC title change and a clear-screen; each
place prints it as the text ``\x1b]0;PWNED\x07\x1b[2J``, which a terminal shows rather than obeys.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bench_plugin.calls.run_status import RunStatus
from bench_plugin.cli import main
from bench_plugin.core.errors import SuiteError
from bench_plugin.plugin.progress import ProgressDisplay

PROBE = "\x1b]0;PWNED\x07\x1b[2J"
SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J"
YAML_PROBE = r"\e]0;PWNED\a\e[2J"  # the probe in a double-quoted YAML string


def assert_shown_not_obeyed(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert SHOWN in text, text


class _Reporter:
    """The part of pytest's terminal reporter the progress display uses; keeps what was written."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.currentfspath: Any = None

    def isatty(self) -> bool:
        return False

    def ensure_newline(self) -> None:
        pass

    def write(self, text: str) -> None:
        self.written.append(text)

    def write_line(self, text: str) -> None:
        self.written.append(text + "\n")


def test_the_progress_line_shows_a_model_ids_escapes() -> None:
    reporter = _Reporter()
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin={"terminalreporter": reporter}.get),
                             get_verbosity=lambda: 0)
    status = RunStatus()
    status.case_started()
    display = ProgressDisplay(config, status)  # type: ignore[arg-type]  # the parts of a Config it reads
    with status.waiting(f"loc/slow{PROBE}", "HTTP 429", 3):
        display.tick(5.0)
    assert_shown_not_obeyed("".join(reporter.written))


def test_a_file_error_shows_the_escapes_of_a_yaml_key(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/key": f"""\
models:
  m: {{provider: offline_echo}}
tasks:
  - {{id: t, prompt: hi, "{YAML_PROBE}": 1}}
scorers:
  - {{type: contains, value: hi}}
"""})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    assert_shown_not_obeyed(result.stdout.str())
    assert "suites/key.yaml:4" in result.stdout.str()


def test_a_suite_errors_text_shows_escapes_and_keeps_its_lines() -> None:
    error = SuiteError(f"bad value {PROBE}", path=f"s{PROBE}.yaml", line=0, key=f"tasks.{PROBE}",
                       excerpt=f"  > 1 | {PROBE}", hint="fix it")
    text = str(error)
    assert "\x1b" not in text and "\x07" not in text
    assert text.count(SHOWN) == 4 and text.count("\n") == 2  # the excerpt and the hint keep their own lines


def test_bench_validate_shows_the_escapes_of_an_unknown_provider_name(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".yaml", **{"suites/demo": f"""\
models:
  m: {{provider: "nowhere{YAML_PROBE}", id: x}}
tasks:
  - {{id: t, prompt: hi}}
scorers:
  - {{type: contains, value: hi}}
"""})
    assert main(["validate", str(pytester.path / "suites")]) == 1
    captured = capsys.readouterr()
    assert_shown_not_obeyed(captured.out + captured.err)


def test_the_failure_text_we_give_pytest_shows_escapes() -> None:
    import json
    from pathlib import Path

    from bench_plugin.plugin.nodes import infrastructure_message
    from bench_plugin.results.record import CaseRecord

    golden = Path(__file__).parents[1] / "golden" / "pairwise_two_cases.jsonl"
    record = CaseRecord.from_dict({**json.loads(golden.read_text(encoding="utf-8").splitlines()[0]),
                                   "reason": f"HTTP 500: {PROBE}", "error": {"kind": "http_5xx"}})
    assert_shown_not_obeyed(infrastructure_message(record))
