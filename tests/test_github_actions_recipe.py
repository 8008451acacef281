"""The guide's GitHub Actions recipe parses, runs the suites with the gates deciding, and names only real options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "docs" / "github-actions" / "bench.yml"
BENCH_OPTION = re.compile(r"--bench-[a-z][a-z-]*")


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def run_lines() -> str:
    return "\n".join(step.get("run", "") for job in workflow()["jobs"].values() for step in job["steps"])


def test_the_recipe_runs_on_main_and_on_pull_requests() -> None:
    data = workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads the key `on` as true
    assert triggers["push"] == {"branches": ["main"]} and "pull_request" in triggers
    steps = [step for job in data["jobs"].values() for step in job["steps"]]
    uploads = [step["with"]["name"] for step in steps if str(step.get("uses", "")).startswith("actions/upload")]
    assert "bench-results-main" in uploads
    assert "--name bench-results-main" in run_lines()  # what main uploads is what a pull request downloads
    assert "compare.md" in run_lines()
    assert {"--bench-exit-on-gates", "--bench-baseline"} <= set(BENCH_OPTION.findall(run_lines()))


def test_every_bench_option_the_recipe_names_exists(pytester: pytest.Pytester) -> None:
    named = set(BENCH_OPTION.findall(run_lines()))
    known = set(BENCH_OPTION.findall(pytester.runpytest("--help").stdout.str()))
    assert named and named <= known, sorted(named - known)


def test_the_guide_shows_the_recipe_as_it_is_in_docs() -> None:
    guide = (REPO / "docs" / "suite-guide.md").read_text(encoding="utf-8")
    assert "github-actions/bench.yml" in guide
