"""Validation finds everything at once: a file's mistakes, and a case's problems, all said in one run.

A suite with five typos took five tries (``temprature``, then ``promt``...), a case with four problems four
(a regex, then min > max, then an unknown judge, then a composite naming ``Q``). Each message keeps its form
(``file:line: key: what was expected``).
"""

from __future__ import annotations

import fnmatch

import pytest

from bench_plugin.cli import main

FIVE_MISTAKES = """\
suite: five
models:
  m: {provider: echo, temprature: 0.2}
tasks:
  - id: a
    promt: hi
  - id: b
    prompt: hi
    scorers: [{type: contains, valeu: x}]
  - id: c
    prompt: hi
    runs: many
scorers:
  - {type: contains, value: hi, colour: red}
"""
FIVE_LINES = [
    "*five.yaml:3: models.m.temprature: unknown key 'temprature'*",
    "*five.yaml:6: tasks[[]0[]].promt: unknown key 'promt'*",
    "*five.yaml:9: tasks[[]1[]].scorers[[]0[]].valeu: unknown key 'valeu'*",
    "*five.yaml:12: tasks[[]2[]].runs: expected *, got 'many'*",
    "*five.yaml:14: scorers[[]0[]].colour: unknown key 'colour'*",
]
FOUR_PROBLEMS = """\
suite: several
models:
  m: {provider: echo}
judges:
  j: {provider: echo}
tasks:
  - id: a
    prompt: hi
    scorers:
      - {name: R, type: regex, pattern: "a("}
      - {name: L, type: length, min: 10, max: 2}
      - {name: J, type: llm_judge, judge: nosuch, prompt: "good? {{ response }}"}
    composite: {formula: "R + Q"}
"""
FOUR_LINES = [
    "*several.yaml:10: tasks[[]0[]].scorers[[]0[]]: regex: pattern /a(/ does not compile*",
    "*several.yaml:11: tasks[[]0[]].scorers[[]1[]]: length: min (10) is greater than max (2)*",
    "*several.yaml:12: tasks[[]0[]].scorers[[]2[]].judge: unknown judge 'nosuch'*",
    "*several.yaml:13: tasks[[]0[]].composite: formula 'R + Q': unknown component 'Q'*",
]


def test_a_file_with_five_mistakes_reports_all_five_in_one_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/five": FIVE_MISTAKES})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(FIVE_LINES)  # in file order, one collection error
    result.stdout.fnmatch_lines(["*hint: did you mean 'temperature'?*"])
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])


def test_a_case_with_four_problems_reports_all_of_them(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/several": FOUR_PROBLEMS})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(FOUR_LINES)


def test_bench_validate_reports_every_mistake_and_counts_them(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".yaml", **{"suites/five": FIVE_MISTAKES, "suites/several": FOUR_PROBLEMS})
    assert main(["validate", str(pytester.path / "suites")]) == 1
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).splitlines()
    for pattern in FIVE_LINES + FOUR_LINES:
        assert any(fnmatch.fnmatch(line, pattern) for line in lines), (pattern, lines)
    assert any(line.endswith("five.yaml: 5 problems; no case collected") for line in lines), lines
    assert any(line.endswith("several.yaml: 1 case, 1 with problems (4 problems)") for line in lines), lines


def test_mistakes_in_several_features_are_said_together(pytester: pytest.Pytester) -> None:
    """A schema-valid file: an aggregate naming no component, a leaderboard of none, a data_dir outside, a task's."""
    suite = FOUR_PROBLEMS.replace("suite: several\n", "suite: features\ndata_dir: ../../elsewhere\n") + (
        "aggregates:\n  tables:\n    - {name: t, by: [model], columns: [{name: x, fn: mean, of: nosuch}]}\n"
        "leaderboard: {of: nothing, sessions: cases}\n")
    pytester.makefile(".yaml", **{"suites/features": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.stdout.fnmatch_lines([
        "*features.yaml:2: data_dir: *",
        "*features.yaml:17: aggregates.tables[[]0[]].columns[[]0[]].of: unknown component 'nosuch'*",
        "*features.yaml:18: leaderboard.of: unknown component 'nothing'*",
    ])


def test_a_case_whose_prompt_and_threshold_do_not_render_says_both(pytester: pytest.Pytester) -> None:
    suite = ("models:\n  m: {provider: echo}\ntasks:\n  - id: a\n    prompt: 'hi {{ nme }}'\n"
             "    pass_threshold: '{{ limit }}'\n    scorers: [{type: contains, value: x}]\n")
    pytester.makefile(".yaml", **{"suites/tpl": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tpl.yaml:5: tasks[[]0[]].prompt: template error: 'nme' is undefined*",
                                 "*tpl.yaml:6: tasks[[]0[]].pass_threshold: template error: 'limit' is undefined*"])


def test_every_duplicate_key_is_said_at_once(pytester: pytest.Pytester) -> None:
    suite = ("models:\n  m: {provider: echo}\n  m: {provider: echo}\n"
             "tasks:\n  - id: a\n    prompt: hi\n    prompt: ho\n")
    pytester.makefile(".yaml", **{"suites/dup": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.stdout.fnmatch_lines(["*dup.yaml:3: models.m: duplicate key 'm' (first on line 2)*",
                                 "*dup.yaml:7: tasks[[]0[]].prompt: duplicate key 'prompt' (first on line 6)*"])


def test_a_case_whose_prompt_fails_still_names_its_scorers_problems(pytester: pytest.Pytester) -> None:
    """A case with a problem was not bound: its regex and its judge prompt were said only once the prompt was fixed."""
    suite = ("models:\n  m: {provider: echo}\njudges:\n  j: {provider: echo}\ntasks:\n  - id: a\n"
             "    prompt: 'hi {{ nme }}'\n    scorers:\n      - {name: R, type: regex, pattern: 'a('}\n"
             "      - {name: J, type: llm_judge, judge: j, prompt: 'rate {{ answr }}'}\n")
    pytester.makefile(".yaml", **{"suites/tpl": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tpl.yaml:7: tasks[[]0[]].prompt: template error: 'nme' is undefined*",
                                 "*tpl.yaml:9: tasks[[]0[]].scorers[[]0[]]: regex: pattern /a(/ does not compile*",
                                 "*tpl.yaml:10: tasks[[]0[]].scorers[[]1[]].prompt: template error: 'answr'*"])
