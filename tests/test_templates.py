"""Templates render in a sandbox, fail loudly on missing variables, and keep native types."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from bench_plugin.core.errors import CaseError
from bench_plugin.suite.templates import TemplateRenderer


@pytest.fixture
def renderer(tmp_path: Path) -> TemplateRenderer:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "shared.j2").write_text("Be {{ tone }}.")
    (tmp_path / "prompts" / "main.j2").write_text('{% include "prompts/shared.j2" %} Q: {{ q }}')
    return TemplateRenderer(tmp_path, "suites/demo.yaml")


def test_single_expression_keeps_its_type(renderer: TemplateRenderer) -> None:
    assert renderer.evaluate("{{ 2 * n }}", {"n": 3}) == 6
    assert renderer.evaluate("{{ items[1:] }}", {"items": [1, 2, 3]}) == [2, 3]


def test_several_expressions_render_as_text(renderer: TemplateRenderer) -> None:
    assert renderer.evaluate("{{ a }}-{{ b }}", {"a": 1, "b": 2}) == "1-2"


def test_non_strings_pass_through(renderer: TemplateRenderer) -> None:
    assert renderer.evaluate(12, {}) == 12


def test_missing_variable_names_key_and_line(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError) as info:
        renderer.render("Hi {{ nme }}", {"name": "x"}, key="tasks[0].prompt", line=4)
    assert str(info.value).startswith("suites/demo.yaml:5: tasks[0].prompt: template error: 'nme' is undefined")


def test_missing_variable_in_single_expression_is_a_case_error(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError, match="'nope' is undefined"):
        renderer.evaluate("{{ nope }}", {})


def test_include_resolves_inside_the_suite_folder(renderer: TemplateRenderer) -> None:
    assert renderer.render_file("prompts/main.j2", {"tone": "brief", "q": "why?"}) == "Be brief. Q: why?"


def test_include_cannot_escape_the_suite_folder(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError, match="not found"):
        renderer.render_file("../etc/passwd", {})


def test_sandbox_blocks_attribute_escapes(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError, match="template error"):
        renderer.render("{{ ''.__class__.__mro__[1].__subclasses__() }}", {})


def test_sandbox_refuses_to_mutate_data(renderer: TemplateRenderer) -> None:
    data = {"items": [1]}
    with pytest.raises(CaseError):
        renderer.render("{{ items.append(2) }}", data)
    assert data["items"] == [1]


@pytest.mark.parametrize("source", [
    "case-{{ n }}", "{{n}}", "Say {{ n }} and {{ word }}.", "{{ none_value }}|{{ flag }}|{{ number }}",
    "{{ items }} {{ mapping }}", "plain text", "", "tail newline {{ n }}\n", "}} {{ n }} }}",
    "{{ true }}", "{{ n | upper }}", "{{- n }}", "{% if n %}x{% endif %}", "{# note #}{{ n }}", "{{ missing }}",
])
def test_plain_substitution_renders_what_jinja2_renders(source: str) -> None:
    """Text-and-``{{ name }}`` templates skip jinja2 (speed); their output must be jinja2's, byte for byte."""
    renderer = TemplateRenderer(None)
    variables = {"n": 7, "word": "ok", "none_value": None, "flag": True, "number": 2.50, "items": [1, "a"],
                 "mapping": {"k": "v"}}
    try:
        expected: str | type[Exception] = renderer.env.from_string(source).render(variables)
    except jinja2.UndefinedError:
        expected = CaseError
    if expected is CaseError:
        with pytest.raises(CaseError):
            renderer.render(source, variables)
    else:
        assert renderer.render(source, variables) == expected


def test_plain_substitution_keeps_the_output_limit() -> None:
    renderer = TemplateRenderer(None)
    big = "x" * 600_000
    with pytest.raises(CaseError, match="more than"):
        renderer.render("{{ a }}{{ a }}", {"a": big})


def test_an_error_inside_a_template_file_names_the_file_and_its_line(
    renderer: TemplateRenderer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prompts" / "broken.j2").write_text("Hello\n\n{{ missing }}\n")
    (tmp_path / "prompts" / "syntax.j2").write_text("Hello\n{% if %}\n")
    with pytest.raises(CaseError) as info:
        renderer.render_file("prompts/broken.j2", {}, key="tasks[0].prompt_file", line=4)
    assert str(info.value).startswith(
        "suites/demo.yaml:5: tasks[0].prompt_file: template error: 'missing' is undefined (at prompts/broken.j2:3)")
    with pytest.raises(CaseError, match=r"\(at prompts/syntax\.j2:2\)"):
        renderer.render_file("prompts/syntax.j2", {})
    with pytest.raises(CaseError, match=r"'tone' is undefined \(at prompts/shared\.j2:1\)"):  # the included file
        renderer.render_file("prompts/main.j2", {"q": "why?"})


def test_an_error_in_a_template_of_many_lines_names_its_line_in_the_template(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError, match=r"(?m)'b' is undefined \(line 3 of the template\)$"):
        renderer.render("first\n{{ a }}\n{{ b }}", {"a": 1})
    with pytest.raises(CaseError, match=r"(?m)'b' is undefined$"):  # one line: the suite's line says it all
        renderer.render("{{ a }} {{ b }}", {"a": 1})


def test_the_undefined_hint_is_for_names_not_for_attributes(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError) as info:
        renderer.render("{{ judge.nme }}", {"judge": {"name": "j"}})
    assert "has no attribute 'nme'" in str(info.value) and "define it under variables" not in str(info.value)


def test_a_template_file_that_is_not_utf8_names_its_line_and_column(renderer: TemplateRenderer, tmp_path: Path) -> None:
    (tmp_path / "prompts" / "latin1.j2").write_bytes("Hi\n  café\n".encode("latin-1"))
    expected = r"template file prompts/latin1\.j2 is not UTF-8: byte 0xe9 at line 2, column 6"
    with pytest.raises(CaseError, match=expected):
        renderer.render_file("prompts/latin1.j2", {})


def test_promptfoos_load_filter_is_named_as_fromjson(renderer: TemplateRenderer) -> None:
    """A prompt ported from promptfoo reads JSON with ``load``: the hint says what it is called here."""
    with pytest.raises(CaseError) as caught:
        renderer.render("{{ (style | load).tone }}", {"style": '{"tone": "calm"}'}, key="prompt", line=4)
    assert "No filter named 'load'" in str(caught.value)
    assert "hint: promptfoo's 'load' filter is 'fromjson' here: {{ value | fromjson }}" in str(caught.value)


def test_a_misspelt_filter_gets_a_did_you_mean(renderer: TemplateRenderer) -> None:
    with pytest.raises(CaseError, match="hint: did you mean 'lower'"):
        renderer.render("{{ q | lowr }}", {"q": "A"}, key="prompt", line=4)
