"""Scorers, providers and engines added in Python, and the pytest_bench_case_recorded hook.

They come from a conftest.py (the repository's own word_budget scorer among them) or from an
installed package's entry points.

The guide's section 26 examples also run in ``tests/test_guide_examples.py``; the tests here check what
their outcomes cannot show (records, scoping, the messages, the package route).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "suite-guide.md"
WORD_BUDGET = REPO / "suites" / "word_budget" / "word_budget.yaml"


def guide_block(after: str) -> str:
    """The text of the first fenced block of the guide below the line that starts with ``after``."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after))
    opening = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    closing = next(i for i in range(opening + 1, len(lines)) if lines[i].rstrip() == "```")
    return "".join(line + "\n" for line in lines[opening + 1 : closing])


def write_guide_example(pytester: pytest.Pytester, name: str, *, conftest: bool = True) -> None:
    """``suites/NAME.yaml`` (and, with ``conftest``, ``suites/conftest.py``) as the guide marks them."""
    suites = pytester.path / "suites"
    suites.mkdir(exist_ok=True)
    (suites / f"{name}.yaml").write_text(guide_block(f"<!-- example: {name} "), encoding="utf-8")
    if conftest:
        (suites / "conftest.py").write_text(guide_block(f"<!-- file: {name}/conftest.py -->"), encoding="utf-8")


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return {f"{r['task']}[{r['model']}]": r for r in map(json.loads, lines)}


def component(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in record["scores"]["components"] if c["name"] == name)


def fnmatch_literal(text: str) -> str:
    return re.sub(r"([][*?])", r"[\1]", text)


# ----------------------------------------------------------------------------- the repository's conftest.py


def test_repository_conftest_scorer_grades_the_word_budget_suite(pytester: pytest.Pytester) -> None:
    (pytester.path / "conftest.py").write_text((REPO / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8")
    pytester.makefile(".yaml", **{"suites/word_budget/word_budget": WORD_BUDGET.read_text(encoding="utf-8")})
    result = pytester.runpytest("suites", "--bench-models", "brief,rambling")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["*score 0.5333 < threshold 0.9 (W=0.06667: 29 words, budget 15, 14 over)*"])
    found = records(pytester)
    within = component(found["idempotent[brief]"], "W")
    assert (within["value"], within["raw"], within["passed"]) == (pytest.approx(13 / 15), 17, False)
    assert within["detail"] == "17 words, budget 15, 2 over" and found["idempotent[brief]"]["status"] == "passed"
    assert component(found["cache[rambling]"], "W")["value"] == 1.0
    assert found["latency[rambling]"]["status"] == "failed"


def test_repository_conftest_scorer_rejects_a_bad_budget_at_its_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "conftest.py").write_text((REPO / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8")
    pytester.makefile(".yaml", **{"suites/budget": """\
models:
  parrot: {provider: echo}
tasks:
  - id: hello
    prompt: Hello
    scorers:
      - {type: word_budget, max_words: many}
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*suites/budget.yaml:7: tasks[[]0].scorers[[]0]*max_words: expected a whole number of at least 1, got 'many'*"]
    )


# ----------------------------------------------------------------------------- scorers from conftest.py

SHOUT_CONFTEST = '''\
from dataclasses import dataclass

from bench_plugin.scoring.context import ComponentScore
from bench_plugin.suite.spec import ScorerSpec


@dataclass(frozen=True)
class Shout:
    spec: ScorerSpec

    @classmethod
    def parse(cls, spec):
        return cls(spec)

    async def score(self, context):
        loud = context.response.isupper()  # a verdict of its own (passed) decides; a bare number only measures
        return ComponentScore(name=self.spec.name, value=float(loud), passed=loud, detail="all caps?")


def pytest_bench_scorer_types():
    return {"shout": Shout}
'''

SHOUTING_SUITE = """\
models:
  loud: {provider: scripted, script: [{reply: HELLO}]}
  quiet: {provider: scripted, script: [{reply: hello}]}
tasks:
  - id: greet
    prompt: Say hello.
    scorers:
      - {type: shout}
"""


def test_conftest_scorer_passes_and_fails_cases_and_is_in_the_record(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/conftest": SHOUT_CONFTEST})
    pytester.makefile(".yaml", **{"suites/loud": SHOUTING_SUITE})
    pytester.runpytest("suites").assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    assert component(found["greet[loud]"], "shout") == {**component(found["greet[loud]"], "shout"),
                                                         "value": 1.0, "detail": "all caps?"}
    assert component(found["greet[quiet]"], "shout")["value"] == 0.0


def test_conftest_scorer_is_not_known_to_a_sibling_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/loud/conftest": SHOUT_CONFTEST})
    pytester.makefile(".yaml", **{"suites/loud/greet": SHOUTING_SUITE, "suites/plain/other": SHOUTING_SUITE})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["*suites/plain/other.yaml:8: tasks[[]0].scorers[[]0]*unknown scorer type 'shout'*"])
    assert "suites/loud/greet.yaml:8" not in result.stdout.str()


def test_guide_scorer_bad_option_fails_with_the_message_the_guide_shows(pytester: pytest.Pytester) -> None:
    write_guide_example(pytester, "extend-scorer")
    suite = pytester.path / "suites" / "extend-scorer.yaml"
    good = "words: [light, water, carbon dioxide, oxygen]"
    assert good in suite.read_text()
    suite.write_text(suite.read_text().replace(good, "words: light"))
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=2)
    shown = guide_block("decides which ones are valid.").strip()
    result.stdout.fnmatch_lines([f"*{fnmatch_literal(shown)}*"])


# ----------------------------------------------------------------------------- providers and engines


def test_conftest_provider_type_answers_for_the_suite_models(pytester: pytest.Pytester) -> None:
    write_guide_example(pytester, "extend-provider")
    pytester.runpytest("suites").assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    assert found["product[calc]"]["provider"] == "local" and found["product[calc]"]["response"] == "391"
    assert found["capital[calc]"]["response"] == "I can only do arithmetic."


def test_conftest_provider_hook_returning_a_non_callable_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/conftest": "def pytest_bench_provider_types():\n    return {'calculator': 42}\n"})
    pytester.makefile(".yaml", **{"suites/calc": "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*pytest_bench_provider_types returned something that is not a provider type*"])


def test_conftest_engine_runs_the_tasks_that_name_it(pytester: pytest.Pytester) -> None:
    write_guide_example(pytester, "extend-engine")
    pytester.runpytest("suites").assert_outcomes(passed=1, failed=1)
    found = records(pytester)
    assert (found["vote[wobbly]"]["response"], found["vote[wobbly]"]["usage"]["calls"]) == ("42", 3)
    assert (found["once[wobbly]"]["response"], found["once[wobbly]"]["usage"]["calls"]) == ("41", 1)


def test_unknown_engine_fails_its_cases_at_the_task_line(pytester: pytest.Pytester) -> None:
    write_guide_example(pytester, "extend-engine")
    suite = pytester.path / "suites" / "extend-engine.yaml"
    suite.write_text(suite.read_text().replace("engine: majority_vote", "engine: majority"))
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=0, failed=2)
    result.stdout.fnmatch_lines(["*suites/extend-engine.yaml:*engine*unknown engine 'majority'*majority_vote*"])


# ----------------------------------------------------------------------------- entry points of a package


def install_as_distribution(site: Path, name: str, entry_points: str, modules: dict[str, str]) -> None:
    """What an installer leaves on sys.path: the modules and ``NAME-0.1.dist-info`` with entry_points.txt."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    for relative, text in modules.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text, encoding="utf-8")


def entry_points_txt(pyproject: str) -> str:
    """The entry_points.txt a build backend writes for ``[project.entry-points.*]`` tables."""
    groups = tomllib.loads(pyproject)["project"]["entry-points"]
    return "".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()) + "\n"
        for group, points in groups.items()
    )


def test_the_guide_package_serves_its_names_through_entry_points(pytester: pytest.Pytester) -> None:
    # the guide's pyproject lines and its three conftest.py files as the package's modules, no conftest.py
    install_as_distribution(
        pytester.path, "my_bench_ext", entry_points_txt(guide_block("### Sharing them as a package")),
        {
            "my_bench_ext/__init__.py": "",
            "my_bench_ext/scorers.py": guide_block("<!-- file: extend-scorer/conftest.py -->"),
            "my_bench_ext/providers.py": guide_block("<!-- file: extend-provider/conftest.py -->"),
            "my_bench_ext/engines.py": guide_block("<!-- file: extend-engine/conftest.py -->"),
        },
    )
    for name in ("extend-scorer", "extend-provider", "extend-engine"):
        write_guide_example(pytester, name, conftest=False)
    # a fresh process: entry point metadata is read once per process, and pytester puts its folder on
    # the child's PYTHONPATH, where importlib.metadata finds the dist-info
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=3)
    found = records(pytester)
    vague = component(found["photosynthesis[vague]"], "K")
    assert vague["detail"] == "1 of 4 keywords; missing water, carbon dioxide, oxygen"
    assert found["product[calc]"]["response"] == "391" and found["vote[wobbly]"]["usage"]["calls"] == 3


def test_a_broken_entry_point_fails_only_the_cases_that_name_it(pytester: pytest.Pytester) -> None:
    install_as_distribution(
        pytester.path, "broken_ext", "[bench_plugin.scorers]\nshout = broken_ext:Shout\n",
        {"broken_ext.py": "raise ImportError('this package is broken')\n"},
    )
    pytester.makefile(".yaml", **{
        "suites/plain": SHOUTING_SUITE.replace("type: shout", "type: contains, value: l, ignore_case: true"),
        "suites/loud": SHOUTING_SUITE,
        "suites/typo": SHOUTING_SUITE.replace("type: shout", "type: shuot"),
    })
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines([
        "*suites/loud.yaml:8: *scorer type 'shout' (broken_ext:Shout) failed to load: ImportError('this package is*",
        "*suites/typo.yaml:8: *unknown scorer type 'shuot'; did you mean 'shout'?*",
    ], consecutive=False)


# ----------------------------------------------------------------------------- pytest_bench_case_recorded

RECORDING_CONFTEST = '''\
import json


def pytest_bench_case_recorded(config, record):
    where = "worker" if hasattr(config, "workerinput") else "controller"
    with open(config.rootpath / "recorded.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps({"nodeid": record["nodeid"], "status": record["status"], "where": where}) + "\\n")
'''


@pytest.mark.parametrize("workers", [pytest.param([], id="in-process"),
                                     pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)])
def test_case_recorded_hook_sees_every_record_once_on_the_controller(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makeconftest(RECORDING_CONFTEST)
    pytester.makefile(".yaml", **{"suites/many": """\
models:
  a: {provider: echo}
  b: {provider: scripted, script: [{reply: nope}]}
runs: 3
tasks:
  - {id: one, prompt: "yes", scorers: [{type: contains, value: "yes"}]}
  - {id: two, prompt: "yes please", scorers: [{type: contains, value: "yes"}]}
"""})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=6, failed=6)
    seen = [json.loads(line) for line in (pytester.path / "recorded.jsonl").read_text().splitlines()]
    results = pytester.path / "bench-results" / "results.jsonl"
    written = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["nodeid"] for r in seen) == sorted(r["nodeid"] for r in written) and len(seen) == 12
    assert {r["where"] for r in seen} == {"controller"}
    assert sorted(r["status"] for r in seen) == ["failed"] * 6 + ["passed"] * 6
