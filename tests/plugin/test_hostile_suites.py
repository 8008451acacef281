"""A hostile suite fails with a message at its line, never with a hang or a traceback of ours.

Hostile means a template that divides by zero or loops forever, or an alias bomb; other suites in the run
are not affected.
"""

from __future__ import annotations

import pytest

GOOD_SUITE = "models:\n  a: {provider: echo}\ntasks:\n  - {id: fine, prompt: hello}\n"

# a suite (a top-level tasks: is what makes a YAML file one) that also holds nine lists of nine,
# each made of the one before: 387 million strings from a few hundred bytes
BILLION_LAUGHS = """\
models: {}
tasks: []
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def assert_no_internal_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text
    assert "bench_plugin/" not in text, "a frame of our internals leaked into the output"


def with_broken_task(prompt: str) -> str:
    """A suite whose second task (its prompt on line 6) is ``prompt``."""
    return GOOD_SUITE + f"  - id: broken\n    prompt: '{prompt}'\n"


def test_division_by_zero_fails_that_case_alone_and_other_suites_pass(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": with_broken_task("x {{ 1 / 0 }}"), "suites/other": GOOD_SUITE})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*suites/demo.yaml:6: tasks[[]1[]].prompt: template error: ZeroDivisionError: division by zero*"]
    )
    assert_no_internal_traceback(result)


def test_runaway_template_fails_that_case_alone(pytester: pytest.Pytester) -> None:
    loops = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    pytester.makefile(".yaml", **{"suites/demo": with_broken_task(loops), "suites/other": GOOD_SUITE})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*suites/demo.yaml:6: tasks[[]1[]].prompt: template error: more than 100,000 loop iterations*",
            "*hint: templates are bounded so that a suite cannot exhaust the machine*",
        ]
    )
    assert_no_internal_traceback(result)


def test_huge_power_fails_that_case_alone(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": with_broken_task("{{ 9 ** (9 ** 9) }}")})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*suites/demo.yaml:6: tasks[[]1[]].prompt: template error: '**' with an exponent*"])
    assert_no_internal_traceback(result)


def test_alias_bomb_is_a_collection_error_with_its_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/bomb": BILLION_LAUGHS, "suites/other": GOOD_SUITE})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*suites/bomb.yaml:8: f[[]0[]]: too many alias expansions: the suite expands to more than 100,000 nodes*",
            "*hint: aliases may share a value a few times, not multiply it*",
        ]
    )
    assert_no_internal_traceback(result)


def test_other_suites_still_run_past_an_alias_bomb_when_asked(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/bomb": BILLION_LAUGHS, "suites/other": GOOD_SUITE})
    result = pytester.runpytest("suites", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    assert_no_internal_traceback(result)


def test_recursive_alias_is_a_collection_error_with_its_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": GOOD_SUITE + "vars: &v [*v]\n"})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*suites/demo.yaml:5: vars[[]0[]]: recursive alias*"])
    assert_no_internal_traceback(result)
