"""The bundled code_generation suite runs offline: the correct model passes, the wrong one scores low, with reasons."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import SandboxError
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.suite.agent.spec import SandboxSpec

SUITE = Path(__file__).resolve().parents[2] / "suites" / "code_generation"


@pytest.fixture(autouse=True)
def sandbox_works() -> None:
    try:
        asyncio.run(open_sandbox(SandboxSpec()))
    except SandboxError as exc:
        pytest.skip(f"no sandbox works here: {exc}")


def run_bundled(pytester: pytest.Pytester, *args: str, **outcomes: int) -> dict[str, dict[str, Any]]:
    shutil.copytree(SUITE, pytester.path / "suites" / "code_generation")
    pytester.runpytest("suites/code_generation", "-p", "no:cacheprovider", *args).assert_outcomes(**outcomes)
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r["scores"]["components"][0] for line in lines}


@pytest.mark.slow
def test_the_correct_model_passes_and_the_wrong_one_scores_low_for_its_reasons(pytester: pytest.Pytester) -> None:
    found = run_bundled(pytester, "--bench-models", "correct,wrong", passed=4, failed=4)
    for task, tests in (("running-max", 5), ("squeeze-runs", 4), ("brackets-balanced", 5), ("nth-prime", 4)):
        right = found[f"{task}[correct-run1]"]
        assert (right["value"], right["passed"], right["tests"]["total"]) == (1.0, True, tests), right["detail"]
    assert found["running-max[wrong-run1]"]["value"] == 0.6
    assert "killed by SIGSEGV: the code crashed" in found["squeeze-runs[wrong-run1]"]["detail"]
    assert found["brackets-balanced[wrong-run1]"]["detail"].startswith("timed out after 20 s")
    assert found["nth-prime[wrong-run1]"]["detail"].startswith("0 of 4 tests passed")
    assert all(found[f"{task}[wrong-run1]"]["passed"] is False for task in
               ("running-max", "squeeze-runs", "brackets-balanced", "nth-prime"))
