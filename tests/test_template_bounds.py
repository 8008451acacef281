"""An untrusted template cannot exhaust the machine, and whatever it raises is a CaseError at its line."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import CaseError
from bench_plugin.suite.sandbox_limits import MAX_EXPONENT, MAX_INT_DIGITS, MAX_OUTPUT, MAX_REPEAT, MAX_STEPS
from bench_plugin.suite.templates import TemplateRenderer, render_standalone

WHERE = "suites/demo.yaml:5: tasks[0].prompt: template error: "


@pytest.fixture
def renderer(tmp_path: Path) -> TemplateRenderer:
    return TemplateRenderer(tmp_path, "suites/demo.yaml")


def returns(call: Callable[[], Any]) -> Any:
    """Run ``call`` in a thread and give back what it returned or raised.

    A guard, not a timing: every call here is bounded by design and takes milliseconds; the generous
    wait only turns a regression into a failure instead of a hung run.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the render did not return: a limit is missing"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def refused(renderer: TemplateRenderer, source: str, variables: dict[str, Any] | None = None) -> str:
    """Render ``source`` as tasks[0].prompt on line 5; return the CaseError's text."""
    with pytest.raises(CaseError) as info:
        returns(lambda: renderer.render(source, variables or {}, key="tasks[0].prompt", line=4))
    return str(info.value)


# -- arithmetic -------------------------------------------------------------------------------------


def test_power_with_a_huge_exponent_is_refused_at_the_key_and_line(renderer: TemplateRenderer) -> None:
    message = refused(renderer, "{{ 2 ** 5000 }}")
    assert message.startswith(WHERE + f"'**' with an exponent of 5000; the largest allowed is {MAX_EXPONENT:,}")
    assert "hint: templates are bounded so that a suite cannot exhaust the machine" in message


def test_power_whose_result_would_have_too_many_digits_is_refused(renderer: TemplateRenderer) -> None:
    message = refused(renderer, "{{ (10 ** 500) ** 100 }}")
    assert f"** 100 would have more than {MAX_INT_DIGITS:,} digits" in message


def test_tower_of_powers_is_refused_before_it_is_computed(renderer: TemplateRenderer) -> None:
    # jinja2's ** groups from the left, so the tower must be written with brackets to be a tower
    assert "'**' with an exponent of 387420489" in refused(renderer, "{{ 9 ** (9 ** 9) }}")


def test_ordinary_and_cheap_powers_still_compute(renderer: TemplateRenderer) -> None:
    assert renderer.evaluate("{{ 2 ** 10 }}", {}) == 1024
    assert renderer.evaluate("{{ 1.5 ** 2 }}", {}) == 2.25
    assert renderer.evaluate("{{ (-1) ** 1000001 }}", {}) == -1  # 0, 1 and -1 cost nothing to raise


def test_multiplying_big_integers_is_refused(renderer: TemplateRenderer) -> None:
    source = "{% set a = 10 ** 1000 %}{{ a * a * a * a * a }}"
    assert f"'*' would make a number of more than {MAX_INT_DIGITS:,} digits" in refused(renderer, source)


def test_float_overflow_is_a_case_error(renderer: TemplateRenderer) -> None:
    assert refused(renderer, "{{ 2.0 ** 2000 }}").startswith(WHERE + "a number too large to compute")


# -- repetition, building and output -----------------------------------------------------------------


def test_repeating_a_string_beyond_the_limit_is_refused(renderer: TemplateRenderer) -> None:
    message = refused(renderer, "{{ 'ab' * 60000 }}")
    assert message.startswith(
        WHERE + f"'*' repeating 2 characters or items 60000 times; the most it may make is {MAX_REPEAT:,}"
    )
    assert len(renderer.render("{{ 'ab' * 50000 }}", {})) == MAX_REPEAT


def test_repeating_a_list_counts_what_its_items_hold(renderer: TemplateRenderer) -> None:
    assert "'*' repeating 1,002 characters or items 1000 times" in refused(renderer, "{{ [[1] * 1000] * 1000 }}")
    assert "'*' repeating" in refused(renderer, "{{ [1] * 10 ** 9 }}")


def test_range_beyond_the_sandbox_limit_is_refused(renderer: TemplateRenderer) -> None:
    assert refused(renderer, "{{ range(100001)|length }}").startswith(WHERE + "range() of more than 100,000 items")
    assert renderer.render("{{ range(100000)|length }}", {}) == "100000"


@pytest.mark.parametrize(
    "source",
    [
        "{% set a = 'x' * 100000 %}{% set b = [a, a, a, a, a, a, a, a, a, a, a] %}{{ b|length }}",
        "{% set a = 'x' * 100000 %}{{ (a ~ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a)|length }}",
        "{% set a = 'x' * 100000 %}{{ (a + a + a + a + a + a + a + a + a + a + a)|length }}",
        "{% set a = 'x' * 100000 %}{{ dict(k=[a, a, a, a, a, a], v=[a, a, a, a, a, a])|length }}",
    ],
    ids=["list-literal", "tilde", "plus", "call-arguments"],
)
def test_values_a_template_builds_are_weighed(renderer: TemplateRenderer, source: str) -> None:
    assert f"more than {MAX_OUTPUT:,} characters" in refused(renderer, source)


def test_output_beyond_the_limit_stops_the_render(renderer: TemplateRenderer) -> None:
    message = refused(renderer, "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}")
    assert message.startswith(WHERE + f"the output would be more than {MAX_OUTPUT:,} characters")


def test_one_oversized_output_value_is_refused_before_it_is_printed(renderer: TemplateRenderer) -> None:
    big = ["x" * 1000] * 2000  # data that is 2 MB when printed
    assert f"an output of more than {MAX_OUTPUT:,}" in refused(renderer, "{{ big }}", {"big": big})


# -- steps --------------------------------------------------------------------------------------------


def test_nested_loops_run_out_of_steps(renderer: TemplateRenderer) -> None:
    source = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    assert refused(renderer, source).startswith(WHERE + f"more than {MAX_STEPS:,} loop iterations, calls and filters")


def test_exponential_macro_recursion_runs_out_of_steps(renderer: TemplateRenderer) -> None:
    source = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"
    assert f"more than {MAX_STEPS:,} loop iterations" in refused(renderer, source)


def test_endless_recursion_is_a_case_error(renderer: TemplateRenderer) -> None:
    message = refused(renderer, "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
    assert message.startswith(WHERE + "nested too deeply")


def test_each_render_has_its_own_budget(renderer: TemplateRenderer) -> None:
    source = "{% for i in range(60000) %}{% endfor %}done"
    assert renderer.render(source, {}) == "done"
    assert renderer.render(source, {}) == "done"


# -- formats and filters that multiply their input ----------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ '%999999d' % 1 }}",
        "{{ '{:999999}'.format(1) }}",
        "{{ '{x:>999999}'.format_map({'x': 1}) }}",
        "{{ '%0999999d'|format(1) }}",
        "{{ 'x'|center(999999) }}",
        "{{ 'x'.ljust(999999) }}",
        "{{ 'x'.zfill(999999) }}",
        "{{ (1).to_bytes(999999, 'big') }}",
        "{{ [1]|batch(999999, 'x')|list }}",
        "{{ [1]|slice(999999)|list }}",
        "{{ lipsum(999999) }}",
    ],
)
def test_widths_and_counts_are_bounded(renderer: TemplateRenderer, source: str) -> None:
    assert f"999999 is larger than {MAX_REPEAT:,}" in refused(renderer, source)


@pytest.mark.parametrize(
    "source",
    [
        "{{ ('a' * 100000).replace('a', 'b' * 100000) }}",
        "{{ ('a' * 100000)|replace('a', 'b' * 100000) }}",
        "{{ range(100000)|join('x' * 100000) }}",
        "{{ ('x' * 100000).join(range(20)|map('string')) }}",
        "{{ ('\t' * 100000).expandtabs(100000) }}",
        "{{ ('a\n' * 50000)|indent(100) }}",
        "{{ ('a ' * 50000)|wordwrap(1, wrapstring='x' * 1000) }}",
        "{{ ('a.com ' * 10000)|urlize(rel='x' * 100000) }}",
        "{{ ('a' * 100).translate({97: 'b' * 100000}) }}",
        "{{ ('%(a)s' * 200) % {'a': 'x' * 10000} }}",
    ],
)
def test_operations_that_multiply_their_input_are_refused_before_they_run(
    renderer: TemplateRenderer, source: str
) -> None:
    assert f"would make more than {MAX_OUTPUT:,} characters" in refused(renderer, source)


@pytest.mark.parametrize(
    "source",
    ["{{ '%*d' % (5, 1) }}", "{{ '{:{w}}'.format(1, w=5) }}", "{{ [1]|tojson(999999) }}"],
)
def test_widths_that_cannot_be_checked_are_refused(renderer: TemplateRenderer, source: str) -> None:
    assert refused(renderer, source).startswith(WHERE)


def test_ordinary_templates_render_as_before(renderer: TemplateRenderer) -> None:
    variables = {"items": ["a", "b"], "score": 7.25, "row": {"q": "why?"}}
    cases = {
        "{% for x in items %}{{ loop.index }}:{{ x }}{% if not loop.last %}, {% endif %}{% endfor %}": "1:a, 2:b",
        "{% for x in [] %}x{% else %}none{% endfor %}": "none",
        "{{ '%.1f'|format(score) }} {{ '%s=%d' % ('n', 3) }} {{ '{:>4}|{q}'.format(7, **row) }}": "7.2 n=3    7|why?",
        "{{ ([1, 2] + [3])|join('-') }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ 2 * 'c' }}": "1-2-3 a1None abab cc",
        "{% set a, b = 1, 2 %}{{ a + b }} {{ {'k': [1, (2, 3)]}|tojson }} {{ row|tojson(2)|length }}":
            '3 {"k": [1, [2, 3]]} 17',
        "{{ items|map('upper')|join }} {{ 'x'|center(5) }}| {{ 'a\tb'.expandtabs(2) }} {{ 'a-b'.replace('-', '+') }}":
            "AB   x  | a b a+b",
        "{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(1) }}{{ items|batch(1)|list|length }}": "<1>2",
    }
    for source, expected in cases.items():
        assert renderer.render(source, variables) == expected, source
    assert renderer.evaluate("{{ [n, n * 2] }}", {"n": 3}) == [3, 6]
    assert renderer.evaluate("{{ {'a': n} }}", {"n": 1}) == {"a": 1}


# -- every error is a CaseError -------------------------------------------------------------------------

EVERY_KIND = [
    ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
    ("{{ 1 // 0 }}", "ZeroDivisionError: integer division or modulo by zero"),
    ("{{ 1 + [] }}", "TypeError: unsupported operand type(s) for +: 'int' and 'list'"),
    ("{{ 2.0 ** 2000 }}", "a number too large to compute"),
    ("{{ ''.__class__ }}", "access to attribute '__class__' of 'str' object is unsafe."),
    ("{{ nme }}", "'nme' is undefined"),
    ("{{ [1, 2][5] }}", "list object has no element 5"),
    ("{{ 'a' ~ }}", "unexpected 'end of"),
    ("{{ '{' .format(1) }}", "ValueError: Single '{' encountered in format string"),
    ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", "nested too deeply"),
]


@pytest.mark.parametrize(("source", "expected"), EVERY_KIND, ids=[e for _, e in EVERY_KIND])
def test_every_error_kind_is_a_case_error_at_the_key_and_line(
    renderer: TemplateRenderer, source: str, expected: str
) -> None:
    for call in (
        lambda: renderer.render(source, {}, key="tasks[0].prompt", line=4),
        lambda: renderer.evaluate(source, {}, key="tasks[0].prompt", line=4),
    ):
        with pytest.raises(CaseError) as info:
            returns(call)
        assert str(info.value).startswith(WHERE + expected), str(info.value)


@pytest.mark.parametrize("source", ["1 / 0", "1 + []", "2 ** 5000", "nme", "range(10 ** 6)", "'x' * 10 ** 6"])
def test_expressions_raise_only_case_errors(renderer: TemplateRenderer, source: str) -> None:
    with pytest.raises(CaseError) as info:
        returns(lambda: renderer.expression(source, {}, key="datasets[0].filter", line=4))
    assert str(info.value).startswith("suites/demo.yaml:5: datasets[0].filter: template error: ")


def test_check_turns_a_parser_recursion_into_a_case_error(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError, match="nested too deeply"):
        renderer.check("{{ " + "[" * 3000 + "]" * 3000 + " }}", key="tasks[0].turns[1]", line=4)


def test_standalone_renders_raise_only_case_errors() -> None:
    for source in (
        "{{ 1 / 0 }}", "{{ 2 ** 5000 }}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    ):
        with pytest.raises(CaseError, match=r"^<suite>: template error: "):
            returns(lambda source=source: render_standalone(source, {}))
