"""The .env reader reads what python-dotenv reads, in time linear in the file, with bounded interpolation."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from dotenv import dotenv_values

from bench_plugin.plugin.options.env_file import load_env_file
from bench_plugin.plugin.options.env_syntax import MAX_EXPANDED_CHARS, ExpansionTooLarge, env_values

SAMPLES = [
    "A=1\nB=two words\n",
    "export A=1\n  B = spaced  \n",
    "# comment\n\nA=1 # trailing comment\nB=no#comment\n",
    "A='single ${X} \\' kept'\nB=\"double \\n \\\" ${A}\"\n",
    "A=\"first\nsecond\"\nB='one\ntwo'\nC=3\n",
    "A=x\nB=${A}-${MISSING:-fallback}-${HOME_FROM_ENV}\n",
    "BARE\nA=${BARE}\n",
    "A=\"unclosed\nB=2\n",
    "A='x' junk\nB=2\n",
    "A=\nB=${A:-default}\n",
    "A=1\nA=2\n",
    "KEY.WITH-DASH=1\n",
    "A=\"a\\\\\"\nB=c\n",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_values_are_python_dotenvs(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME_FROM_ENV", "env-value")
    monkeypatch.delenv("MISSING", raising=False)
    expected = dotenv_values(stream=io.StringIO(text), interpolate=True)
    assert env_values(text) == dict(expected)


def test_interpolation_that_doubles_every_line_is_bounded() -> None:
    text = "A=" + "x" * 1000 + "\n" + "".join(f"V{i + 1}=${{V{i}}}${{V{i}}}\n".replace("V0", "A") for i in range(40))
    with pytest.raises(ExpansionTooLarge, match=f"{MAX_EXPANDED_CHARS:,}"):
        env_values(text, {})


def test_a_hundred_thousand_lines_are_read_in_one_pass() -> None:
    """Linear: each ${NAME} is one dict lookup (the timing is in benchmarks/env_file_speed.py)."""
    text = "".join(f"VAR_{i}=value_{i}_${{VAR_{i - 1}:-start}}\n" if i % 2 else f"VAR_{i}=v{i}\n"
                   for i in range(100_000))
    values = env_values(text, {})
    assert len(values) == 100_000 and values["VAR_99999"] == "value_99999_v99998"


def test_a_file_that_expands_without_end_is_a_usage_error_that_shows_no_value(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("A=secret-value-" + "x" * 1000 + "\n" + "".join(
        f"V{i + 1}=${{V{i}}}${{V{i}}}\n".replace("V0", "A") for i in range(40)), encoding="utf-8")
    with pytest.raises(pytest.UsageError, match=r"cannot read .*more than") as caught:
        load_env_file(env)
    assert "secret-value" not in str(caught.value)
