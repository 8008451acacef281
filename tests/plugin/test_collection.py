"""Suites become one pytest item per model x task x run, selectable like any test."""

from __future__ import annotations

import json

import pytest

from suites import CAPITALS  # type: ignore[import-not-found]


@pytest.fixture
def capitals(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    return pytester


def test_one_item_per_model_task_and_run(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "--collect-only", "-q", "--bench-runs", "2")
    result.stdout.fnmatch_lines(
        [
            "suites/capitals.yaml::capital-france[[]atlas-run1[]]",
            "suites/capitals.yaml::capital-france[[]atlas-run2[]]",
            "suites/capitals.yaml::capital-france[[]parrot-run1[]]",
            "suites/capitals.yaml::capital-france[[]parrot-run2[]]",
            "suites/capitals.yaml::capital-japan[[]atlas-run1[]]",
            "*8 tests collected*",
        ]
    )


def test_collect_only_calls_no_model(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "--collect-only", "-q")
    assert result.ret == 0
    assert not (capitals.path / "bench-results").exists(), "collect-only wrote results: something ran"


def test_k_selects_by_model_name(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "-k", "atlas")
    result.assert_outcomes(passed=2)
    lines = (capitals.path / "bench-results" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2, "deselected cases must not run"


def test_m_selects_by_tag_and_model_marker(capitals: pytest.Pytester) -> None:
    capitals.runpytest("suites", "-m", "geography and model_parrot").assert_outcomes(failed=2)
    capitals.runpytest("suites", "-m", "not geography").assert_outcomes()


def test_strict_markers_accept_suite_markers(capitals: pytest.Pytester) -> None:
    capitals.runpytest("suites", "--strict-markers", "-m", "provider_scripted").assert_outcomes(passed=2)


def test_bench_models_chooses_among_suite_models(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "--bench-models", "parrot", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*capital-france[[]parrot-run1[]]", "*2 tests collected*"])


def test_bench_models_accepts_provider_and_model(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "--bench-models", "echo:any-model", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*capital-france[[]echo:any-model-run1[]]", "*2 tests collected*"])


def test_unknown_bench_model_is_a_usage_error_listing_choices(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "--bench-models", "gpt-5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-models: unknown model(s) gpt-5*atlas, parrot*"])


def test_last_failed_reruns_only_failures(capitals: pytest.Pytester) -> None:
    capitals.runpytest("suites").assert_outcomes(passed=2, failed=2)
    result = capitals.runpytest("suites", "--lf")
    result.assert_outcomes(failed=2)
    # the cases --lf does not run keep their earlier records: one record per case
    lines = (capitals.path / "bench-results" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["status"] for line in lines) == ["failed", "failed", "passed", "passed"]


def test_exitfirst_stops_after_first_failure(pytester: pytest.Pytester) -> None:
    suite = CAPITALS.replace("country: [France, Japan]", "country: [France, Japan, France2]").replace(
        "'Japan': 'Tokyo'", "'Japan': 'Tokyo', 'France2': 'Paris'"
    )
    pytester.makefile(".yaml", **{"suites/capitals": suite})
    result = pytester.runpytest("suites", "-x", "--bench-models", "parrot")
    result.assert_outcomes(failed=1)


def test_yaml_that_is_not_a_suite_is_ignored_in_directories(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS, "suites/other": "name: docker-compose\n"})
    result = pytester.runpytest("suites", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*4 tests collected*"])


def test_junitxml_carries_model_task_and_score(capitals: pytest.Pytester) -> None:
    capitals.runpytest("suites", "--junitxml", "junit.xml", "-k", "atlas and france")
    xml = (capitals.path / "junit.xml").read_text()
    assert '<property name="bench_model" value="atlas" />' in xml
    assert '<property name="bench_score" value="0.9667" />' in xml


def test_only_a_run_naming_models_searches_its_folders_for_suites(
    capitals: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pytest run in the environment loads the plugin: one of plain tests must not walk the project."""
    searched: list[object] = []
    monkeypatch.setattr("bench_plugin.plugin.find_suites", lambda *args: searched.append(args) or [])
    capitals.makepyfile(test_plain="def test_one():\n    pass\n")
    capitals.runpytest(".", "-p", "no:cacheprovider").assert_outcomes(passed=3, failed=2)  # parrot fails
    assert searched == []
    capitals.runpytest(".", "-p", "no:cacheprovider", "--bench-models", "parrot").assert_outcomes(passed=1, failed=2)
    assert len(searched) == 1


def test_other_tools_yaml_files_leave_a_projects_own_test_run_alone(pytester: pytest.Pytester) -> None:
    """A project's Taskfile.yml was collected as a broken suite; its docker-compose.yml turned report.html on."""
    pytester.makefile(".yml", Taskfile="version: '3'\ntasks:\n  build: {cmds: [make]}\n",
                      **{"docker-compose": "services: {}\n"})
    pytester.makefile(".yaml", **{".pre-commit-config": "repos: []\n"})
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest(".", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "bench-results").exists()


def test_a_projects_own_test_run_does_not_load_the_suite_validator(pytester: pytest.Pytester) -> None:
    """Every pytest run in the environment loads the plugin: jsonschema (31 ms) waits for a suite to validate."""
    pytester.makepyfile(test_plain="import sys\n\ndef test_one():\n    assert 'jsonschema' not in sys.modules\n")
    pytester.runpytest_subprocess(".", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_unknown_bench_model_is_a_usage_error_under_xdist_too(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest_subprocess("suites", "-n", "2", "--bench-models", "gpt-5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-models: unknown model(s) gpt-5*"])


def test_unknown_provider_in_base_url_is_a_usage_error(capitals: pytest.Pytester) -> None:
    result = capitals.runpytest("suites", "--bench-base-url", "vlm=http://127.0.0.1:9/v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-base-url: unknown provider(s) vlm; choose from:*vllm*"])
