"""Valid suites that the collection-time name checks must not refuse: names a request will carry at run time."""

from __future__ import annotations

import pytest

# a scripted model that only one task runs, and that no run selects by default
RESTRICTED = """\
models:
  bot:
    provider: scripted
    default: false
    script:
      - {task: "greet-*", reply: "Hello, {{ name }}!"}
      - {reply: ok}
  parrot: {provider: echo}
tasks:
  - id: greet-ada
    models: [bot]
    vars: {name: Ada}
    prompt: Say hello.
    scorers: [{type: equals, value: "Hello, Ada!"}]
  - {id: plain, prompt: ok, scorers: [{type: equals, value: ok}]}
"""

# a project's scorer type that calls the suite's scripted judge with variables of its own
ASKING_SCORER = """\
from __future__ import annotations

from dataclasses import dataclass

from bench_plugin.core.chat import CompletionRequest, Message
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.suite.spec import ScorerSpec


@dataclass(frozen=True)
class AskJudge:
    spec: ScorerSpec

    @classmethod
    def parse(cls, spec: ScorerSpec) -> AskJudge:
        return cls(spec)

    async def score(self, context: ScoringContext) -> ComponentScore:
        case = context.case
        request = CompletionRequest(
            model=case.judges["grader"], messages=(Message(role="user", content="Grade it."),), task=case.task,
            run=case.run, purpose="judge", variables={**case.variables, "candidate_answer": context.response},
        )
        ok = (await context.call_model(request)).text == "PASS"
        return ComponentScore(name=self.spec.name, value=float(ok), passed=ok, detail="graded")


def pytest_bench_scorer_types() -> dict[str, object]:
    return {"ask_judge": AskJudge}
"""

ASKING_SUITE = """\
models:
  bot: {provider: scripted, script: [{reply: Paris}]}
judges:
  grader:
    provider: scripted
    script:
      - reply: "{{ 'PASS' if candidate_answer == 'Paris' else 'FAIL' }}"
tasks:
  - {id: capital, prompt: "Capital of France?", scorers: [{type: ask_judge}]}
"""


def test_a_rule_reading_the_variables_of_a_task_only_an_unselected_model_runs_is_not_refused(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", **{"suites/demo": RESTRICTED})
    result = pytester.runpytest_inprocess("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_inprocess("suites", "-p", "no:cacheprovider", "--bench-models", "bot")
    result.assert_outcomes(passed=2)


def test_a_typo_in_a_rule_is_still_refused_when_every_task_runs(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": RESTRICTED.replace("{{ name }}", "{{ nmae }}")})
    result = pytester.runpytest_inprocess("suites", "-p", "no:cacheprovider", "--bench-models", "bot")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*models.bot.script?0?.reply: template error: 'nmae' is undefined*"])


def test_a_scripted_judge_may_read_what_a_project_scorer_sends_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": ASKING_SUITE})
    (pytester.path / "suites" / "conftest.py").write_text(ASKING_SCORER)
    result = pytester.runpytest_inprocess("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_typo_in_a_scripted_judge_is_still_refused_without_project_code(pytester: pytest.Pytester) -> None:
    judged = '{type: llm_judge, judge: grader, prompt: "Grade: {{ answer }}"}'
    suite = ASKING_SUITE.replace("{type: ask_judge}", judged)
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.runpytest_inprocess("suites", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*judges.grader.script?0?.reply: template error: 'candidate_answer' is undefined*"])
