"""At collection, the names a judge prompt reads that neither the case nor the judge call will give it.

A judge prompt renders only after the model has answered, so a typo (``{{ refrence }}``) used to
surface at run time, after the model call was paid for, and ``bench validate`` could not see it. Its
names are known before: the case's variables, and what ``JudgePrompt.build_messages`` adds. A name
that is neither fails the case at collection, with the scorer's line and the prompt's key.
"""

from __future__ import annotations

from collections.abc import Collection

import jinja2

from bench_plugin.core.errors import CaseError
from bench_plugin.core.hints import did_you_mean
from bench_plugin.scoring.judge.prompt import JudgePrompt, JudgeTemplate
from bench_plugin.suite.spec import CaseSpec
from bench_plugin.suite.templates import TemplateRenderer

#: What ``JudgePrompt.build_messages`` gives every judge template besides the case's variables: the
#: answer and the conversation, a ``per_turn`` scorer's turn, an agent run, a rubric. Keep in step with it.
JUDGE_NAMES = frozenset({
    "vars", "question", "answer", "transcript", "messages", "task", "model", "reference",
    "turn", "earlier", "context",  # per_turn (scoring/per_turn.py)
    "checks", "tool_calls", "files",  # agent tasks (engines/agent/view.py); tool_calls also with function tools
    "rubric", "rubric_text", "rubric_total",  # rubrics (judge/rubric.py)
})


def check_prompt_names(prompt: JudgePrompt, case: CaseSpec, extra: Collection[str] = ()) -> None:
    """Refuse a name the prompt's templates read that nothing will define.

    Args:
        prompt: the parsed prompt (its ``prompt``, ``system`` and ``reference`` templates are read).
        case: the case, whose variables the templates see.
        extra: names the caller adds at run time (a panel's ``judge``, a consensus's ``reports``).

    Raises:
        CaseError: ``template error: 'nmae' is undefined`` at ``KEY.prompt``, with a did-you-mean; also
            when a template file does not exist or a template does not parse.
    """
    renderer = case.templates
    if renderer is None:
        return
    # an output_schema: task's judges also read its parsed answer (judge/prompt.py answer_variables)
    answer = ("output",) if case.output_schema is not None else ()
    known = {*case.variables, *JUDGE_NAMES, *answer, *extra, *renderer.env.globals}
    for template in _templates(prompt):
        where = f"{prompt.key}.{template.option}"
        unknown = next((name for name in _names(renderer, template, case, where, prompt.line) if name not in known),
                       None)
        if unknown is not None:
            guess = did_you_mean(unknown, sorted(known - set(renderer.env.globals)))
            raise CaseError(f"template error: {unknown!r} is undefined", path=case.path, line=prompt.line, key=where,
                            hint=_define_hint(guess))


def _define_hint(guess: str | None) -> str:
    """Where an undefined name can be defined (after the did-you-mean, when there is one)."""
    where = "define it under variables:, in the task's vars:, or as a matrix or dataset field"
    return f"{guess + ' ' if guess else ''}{where}; judge prompts also see {', '.join(sorted(JUDGE_NAMES))}"


def _templates(prompt: JudgePrompt) -> list[JudgeTemplate]:
    """The prompt's templates: its prompt, its system message and each of its references."""
    references = (prompt.reference,) if isinstance(prompt.reference, str) else prompt.reference or ()
    found = [prompt.prompt, prompt.system, *(JudgeTemplate("reference", text) for text in references)]
    return [template for template in found if template is not None]


def _names(renderer: TemplateRenderer, template: JudgeTemplate, case: CaseSpec, key: str,
           line: int | None) -> tuple[str, ...]:
    """The undeclared names of one template (a ``*_file`` option names a file next to the suite).

    Raises:
        CaseError: the template does not parse, or its file is not under the suite's folder.
    """
    try:
        return renderer.undeclared(template.source, from_file=template.option.endswith("_file"))
    except CaseError as exc:  # a file outside the suite's folder: already in the author's words
        raise exc.located(case.path, line, key) from None
    except jinja2.TemplateNotFound:
        raise CaseError(f"template file {template.source!r} not found under {renderer.root}", path=case.path,
                        line=line, key=key) from None
    except jinja2.TemplateSyntaxError as exc:
        raise CaseError(f"template error: {exc.message}", path=case.path, line=line, key=key) from None
