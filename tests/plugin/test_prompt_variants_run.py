"""Comparing prompts in one suite: ids, markers, report breakdowns and aggregates show which prompt."""

from __future__ import annotations

import json

import pytest

PROMPTS = """\
suite: styles
models:
  bot:
    provider: scripted
    script:
      - {contains: "One word", reply: "Paris"}
      - {reply: "The capital of France is Paris, a city on the Seine."}
  parrot: {provider: echo}
prompts:
  - id: terse
    prompt: "One word: the capital of {{ country }}?"
  - {prompt_file: prompts/styles.txt, split: "---"}
tasks:
  - id: "cap-{{ country | lower }}"
    matrix:
      country: [France]
  - id: "cap-again"
    vars: {country: France}
scorers:
  - {name: C, type: contains, value: Paris}
  - {name: L, type: length, max: 5, unit: words}
aggregates:
  tables:
    - name: by_prompt
      by: [prompt, model]
      columns:
        - {fn: mean, name: score, of: C}
"""

STYLES = "Tell me about the capital of {{ country }}.\n---\nWhat city is the capital of {{ country }}?\n"


@pytest.fixture
def styles(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", **{"suites/styles": PROMPTS})
    pytester.makefile(".txt", **{"suites/prompts/styles": STYLES})
    return pytester


def test_prompt_is_in_every_case_id(styles: pytest.Pytester) -> None:
    result = styles.runpytest("suites", "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        "suites/styles.yaml::cap-france-terse[[]bot-run1[]]",
        "suites/styles.yaml::cap-france-terse[[]parrot-run1[]]",
        "suites/styles.yaml::cap-france-styles-1[[]bot-run1[]]",
        "suites/styles.yaml::cap-france-styles-1[[]parrot-run1[]]",
        "suites/styles.yaml::cap-france-styles-2[[]bot-run1[]]",
        "suites/styles.yaml::cap-france-styles-2[[]parrot-run1[]]",
        "suites/styles.yaml::cap-again-terse[[]bot-run1[]]",
        "*12 tests collected*",
    ])


def test_m_selects_one_prompt(styles: pytest.Pytester) -> None:
    result = styles.runpytest("suites", "-m", "prompt_terse and model_bot", "--strict-markers")
    result.assert_outcomes(passed=2)


def test_report_breaks_scores_down_by_prompt(styles: pytest.Pytester) -> None:
    result = styles.runpytest("suites", "-p", "no:randomly")
    # bot: terse passes (C=1, L=1), the long answers fail L; parrot echoes: fails C everywhere
    result.assert_outcomes(passed=2, failed=10)
    out = styles.path / "bench-results"
    report = (out / "report.md").read_text()
    assert "#### By prompt (tag)" in report
    section = report.split("#### By prompt (tag)")[1].split("\n#")[0]
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and "Cases" not in line and not line.startswith("| ---")]
    assert [row.split("|")[1].strip() for row in rows] == ["terse", "styles-1", "styles-2"]
    assert rows[0].split("|")[2].strip() == "4"  # cases: 2 tasks x 2 models
    summary = json.loads((out / "summary.json").read_text())
    (suite,) = summary["suites"]
    dimensions = [found["dimension"] for found in suite["breakdowns"]]
    assert dimensions == ["prompt"]  # prompt_id is the same split, so it is shown once; country is one value
    terse = suite["breakdowns"][0]["groups"][0]
    assert terse["value"] == "terse" and terse["models"]["bot"]["mean"] == 1.0
    table = {tuple(row[:2]): row[2] for row in suite["aggregates"][0]["rows"]}
    assert table[("terse", "bot")] == 1.0 and table[("styles-1", "parrot")] == 0.0


def test_records_keep_the_prompt_and_what_it_sent(styles: pytest.Pytester) -> None:
    styles.runpytest("suites", "-m", "model_bot")
    lines = (styles.path / "bench-results" / "results.jsonl").read_text().splitlines()
    found = {record["task"]: record for record in map(json.loads, lines)}
    record = found["cap-france-styles-2"]
    assert record["variables"]["prompt_id"] == "styles-2"
    assert "prompt=styles-2" in record["tags"]
    assert record["messages"] == [{"role": "user", "content": "What city is the capital of France?"}]


@pytest.mark.slow
def test_xdist_gives_the_same_prompt_variants(styles: pytest.Pytester) -> None:
    styles.runpytest("suites", "-p", "no:randomly")
    serial = json.loads((styles.path / "bench-results" / "summary.json").read_text())["suites"][0]["breakdowns"]
    styles.runpytest("suites", "-p", "no:randomly", "-n", "2")
    lines = (styles.path / "bench-results" / "results.jsonl").read_text().splitlines()
    nodeids = [json.loads(line)["nodeid"] for line in lines]
    assert len(nodeids) == len(set(nodeids)) == 12
    parallel = json.loads((styles.path / "bench-results" / "summary.json").read_text())["suites"][0]["breakdowns"]
    assert parallel == serial
