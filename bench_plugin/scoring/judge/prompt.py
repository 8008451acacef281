"""Asking a judge: which judge, the templates of its messages, and what they see of the case.

Every judge scorer asks this way: ``llm_judge`` and each judge of a panel, a panel's consensus
model, a pairwise judge. A ``JudgePrompt`` is parsed once from a scorer's options; per case it
renders the messages, finds the judge model under the case's ``judges:`` and makes the call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.core.hints import choices_hint
from bench_plugin.core.media import KINDS, MediaPart
from bench_plugin.engines.agent.view import judge_variables
from bench_plugin.scoring.context import ScoringContext
from bench_plugin.scoring.judge.rubric import Rubric, rubric_variables
from bench_plugin.scoring.per_turn import judged_turn, pick_for_turn, turn_variables
from bench_plugin.scoring.targets import TARGETS
from bench_plugin.suite.media import Where, refuse_audio
from bench_plugin.suite.spec import CaseSpec
from bench_plugin.suite.templates import render_standalone

# standalone: the prompt is the judge's user message; conversation: the prompt is a leading system
# message, then the case's conversation with the answer as the last assistant message
LAYOUTS = ("standalone", "conversation")
JUDGES_HINT = "judges are declared under the suite's top-level judges: map"


@dataclass(frozen=True)
class JudgeTemplate:
    """One template of a judge's messages: the option it came from and its text.

    For a ``*_file`` option (``prompt_file``, ``system_file``) the text names a template file in the
    suite's folder.
    """

    option: str
    source: str

    def render(self, key: str, line: int | None, context: ScoringContext, variables: Mapping[str, Any]) -> str:
        """Render with ``variables``; ``key`` is the scorer's, for errors (``scorers[1].prompt``).

        Raises:
            CaseError: when a variable is missing or the template is broken.
        """
        templates, where = context.case.templates, f"{key}.{self.option}"
        if self.option.endswith("_file"):
            if templates is None:
                raise CaseError(f"{self.option} needs the suite's folder", path=context.case.path, line=line, key=where)
            return templates.render_file(self.source, variables, key=where, line=line)
        if templates is None:
            return render_standalone(self.source, variables)
        return templates.render(self.source, variables, key=where, line=line)


def parse_templates(
    options: Mapping[str, Any], owner: str, *, system_clash: str = "give system or system_file, not both"
) -> tuple[JudgeTemplate, JudgeTemplate | None]:
    """The prompt and the optional system template of ``options``.

    Raises:
        ValueError: not exactly one of prompt/prompt_file, both system and system_file, a template
            that is not text.
    """
    if ("prompt" in options) == ("prompt_file" in options):
        raise ValueError(f"{owner} needs exactly one of prompt (a template) or prompt_file (a template file)")
    if "system" in options and "system_file" in options:
        raise ValueError(system_clash)
    prompt = _template(options, ("prompt", "prompt_file"))
    assert prompt is not None
    return prompt, _template(options, ("system", "system_file"))


def _template(options: Mapping[str, Any], keys: tuple[str, str]) -> JudgeTemplate | None:
    """The template of the first of ``keys`` (written as text, or a file name) in ``options``."""
    for key in keys:
        if key not in options:
            continue
        if not isinstance(options[key], str):
            raise ValueError(f"{key} must be a string, got {type(options[key]).__name__}")
        return JudgeTemplate(key, options[key])
    return None


def parse_show_media(options: Mapping[str, Any]) -> tuple[str, ...]:
    """What of the case's media a judge sees: its images by default, everything with ``true``, nothing with ``false``.

    Raises:
        ValueError: a value that is not true or false.
    """
    value = options.get("show_media")
    if value is None:
        return ("image",)
    if not isinstance(value, bool):
        raise ValueError(f"show_media must be true (images and audio) or false (none), got {value!r}")
    return KINDS if value else ()


def parse_reference(options: Mapping[str, Any]) -> str | tuple[str, ...] | None:
    """The ``reference`` option (a list gives one per turn); None when there is none.

    Raises:
        ValueError: a reference that is not text or a list of texts.
    """
    if "reference" not in options:
        return None
    reference = options["reference"]
    if isinstance(reference, list) and all(isinstance(item, str) for item in reference):
        return tuple(reference)
    if not isinstance(reference, str):
        raise ValueError(f"reference must be a string or a list of strings (one per turn), got {reference!r}")
    return reference


def transcript_text(messages: tuple[Message, ...]) -> str:
    """The conversation as ``role: content`` blocks, the way judge prompts quote it."""
    return "\n\n".join(f"{message.role}: {message.content}" for message in messages)


def conversation_layout(instruction: str, transcript: tuple[Message, ...], answer: str) -> tuple[Message, ...]:
    """``layout: conversation``: the instruction, the case's conversation, then the judged answer.

    The instruction is a leading system message and the answer the last assistant message (the rent
    benchmark's master scorer).

    The transcript's own final answer is replaced by ``answer`` (the scorer's ``target``), so the
    judge sees the answer once, as an unnamed assistant message.
    """
    earlier = transcript[:-1] if transcript and transcript[-1].role == "assistant" else transcript
    return (Message("system", instruction), *earlier, Message("assistant", answer))


def last_question(context: ScoringContext) -> str:
    """The last user message of the case (a multi-turn case's prompt has no user turn: its transcript's)."""
    conversation = context.transcript or context.case.messages
    users = [message.content for message in conversation if message.role == "user"]
    return users[-1] if users else ""


def model_variables(case: CaseSpec) -> dict[str, str]:
    """``model`` as every template sees it: the candidate's name, API id and label."""
    if case.model is None:
        return {"name": case.model_name, "id": case.model_name, "label": case.model_name}
    return case.model.template_vars()


def unknown_judge(case: CaseSpec, name: str, key: str, line: int | None) -> CaseError:
    """The error for a judge that is not under the case's ``judges:`` (its key ends in the option)."""
    return CaseError(
        f"unknown judge {name!r} (judges: {', '.join(case.judges) or 'none are defined'})",
        path=case.path,
        line=line,
        key=key,
        hint=JUDGES_HINT,
    )


def find_judge(case: CaseSpec, name: str, key: str, line: int | None) -> ModelSpec:
    """The judge model ``name`` under the case's ``judges:``.

    Raises:
        CaseError: at ``key`` when there is none, with a did-you-mean.
    """
    judge = case.judges.get(name)
    if judge is not None:
        return judge
    valid = list(case.judges)
    message = f"unknown judge {name!r}; " + (
        choices_hint(name, valid, label="judges") if valid else "the suite defines no judges:"
    )
    raise CaseError(message, path=case.path, line=line, key=key, hint=JUDGES_HINT)


@runtime_checkable
class CallsJudges(Protocol):
    """A scorer that calls judges by name; binding checks them against the case's ``judges:``."""

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """Each judge it calls and the option that names it: ``("gpt4o", "judge")``, ``("b", "judges[1]")``."""
        ...


def judge_names(scorer: object) -> list[str]:
    """The judges a parsed scorer calls on (none for a scorer that calls no judge)."""
    if not isinstance(scorer, CallsJudges):
        return []
    return list(dict.fromkeys(name for name, _ in scorer.named_judges()))


def check_judges(scorer: CallsJudges, case: CaseSpec, key: str, line: int | None) -> None:
    """Raises: CaseError at ``key.OPTION`` for the first judge that is not under ``judges:``."""
    for name, option in scorer.named_judges():
        if name not in case.judges:
            raise unknown_judge(case, name, f"{key}.{option}", line)


@dataclass(frozen=True)
class JudgePrompt:
    """How one judge is asked, parsed from a scorer's options.

    ``key`` and ``line`` locate the options in the YAML (a consensus's key ends in ``.consensus``);
    ``reference`` is None when there is no ``reference`` option (the case variable is used);
    ``judge`` is None when the model under test grades (a built-in grader without ``judge:``).
    """

    key: str
    line: int | None
    judge: str | None
    prompt: JudgeTemplate
    system: JudgeTemplate | None = None
    reference: str | tuple[str, ...] | None = None
    target: str = "response"
    layout: str = "standalone"
    rubric: Rubric | None = None
    show_media: tuple[str, ...] = ("image",)  # the kinds of the case's media the judge sees (``show_media``)

    def model(self, context: ScoringContext) -> ModelSpec:
        """The judge model, from the case's ``judges:``; the model under test when ``judge`` is None.

        Raises:
            CaseError: when the case has no such judge (binding normally finds this first).
        """
        if self.judge is None:
            if context.case.model is None:
                raise CaseError("no judge: is named, and the case has no model under test to grade it",
                                path=context.case.path, line=self.line, key=f"{self.key}.judge")
            return context.case.model
        return find_judge(context.case, self.judge, f"{self.key}.judge", self.line)

    def build_messages(self, context: ScoringContext, extra: Mapping[str, Any] | None = None) -> tuple[Message, ...]:
        """Render the judge's system and user messages from the case and the candidate's answer.

        The variables are ``variables(context, extra)``.

        Raises:
            CaseError: when a template fails.
        """
        variables = self.variables(context, extra)
        prompt = self.prompt.render(self.key, self.line, context, variables)
        if self.layout == "conversation":
            return conversation_layout(prompt, context.transcript, variables["answer"])
        messages = [] if self.system is None else [
            Message(role="system", content=self.system.render(self.key, self.line, context, variables))
        ]
        messages.append(Message(role="user", content=prompt, parts=self.media(context)))
        return tuple(messages)

    def check_media(self, case: CaseSpec) -> None:
        """Raises: CaseError at ``show_media`` when the judge would be sent audio its API does not take."""
        if "audio" not in self.show_media or self.judge is None or case.judges.get(self.judge) is None:
            return
        where = Where(case.path, f"{self.key}.show_media", self.line)
        refuse_audio(case.judges[self.judge], [m for m in case.messages if m.role == "user"], where,
                     hint="leave show_media out (the judge then sees the images only), or use a judge that takes audio")

    def media(self, context: ScoringContext) -> tuple[MediaPart, ...]:
        """The images (and with ``show_media: true`` the audio) of the case's user messages, each once.

        The case's own prompt counts too: a re-judged transcript comes from the record, which keeps references only.
        """
        conversation = (*context.transcript, *context.case.messages)
        found = {(part.sha256 or part.url): part for message in conversation if message.role == "user"
                 for part in message.parts if part.kind in self.show_media}
        return tuple(found.values())

    def variables(self, context: ScoringContext, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What the judge's templates see for this case (a built-in grader checks ``reference`` first).

        Template variables: the case variables (also as ``vars``), then ``question`` (the last user
        message of the case), ``answer``, ``transcript``, ``messages``, ``task`` and ``model``, which
        take precedence over case variables of the same name, and ``reference``: the rendered
        ``reference`` option (None when it renders empty), else the case variable ``reference``, else None.
        A ``per_turn`` scorer scores one turn: ``question`` and ``answer`` are that turn's, the
        conversation ends with it, and ``turn``, ``earlier`` and ``context`` describe it
        (``scoring/per_turn.py``); a list ``reference`` gives that turn's entry. A ``rubric`` adds
        ``rubric``, ``rubric_text`` and ``rubric_total`` (``judge/rubric.py``); ``extra`` adds
        variables of its own (a panel's ``judge``). An agent task adds ``checks``, ``tool_calls`` and
        ``files`` (``engines/agent/view.py``); an ``output_schema:`` task ``output`` (the answer's parsed JSON), a
        task with function tools ``tool_calls`` (``answer_variables``).

        Raises:
            CaseError: when the ``reference`` template fails.
        """
        case = context.case
        variables: dict[str, Any] = {
            **case.variables,
            "vars": case.variables,
            "question": last_question(context),
            "answer": TARGETS[self.target](context),
            "transcript": transcript_text(context.transcript)
            if context.transcript_text is None else context.transcript_text,
            "messages": [message.to_dict() for message in context.transcript],
            "task": case.task,
            "model": model_variables(case),
            **turn_variables(context),  # per_turn: this turn's question, turn, earlier turns, context
            **judge_variables(context.agent),  # an agent task: checks, tool_calls, files
            **answer_variables(context),  # an output_schema: task's parsed answer, a function-tools task's calls
            **rubric_variables(self.rubric),
            **(extra or {}),
        }
        variables["reference"] = self._reference(context, variables)
        return variables

    def _reference(self, context: ScoringContext, variables: Mapping[str, Any]) -> Any:
        """The ``reference`` option rendered (None when empty), else the case variable ``reference``.

        A case variable named reference is a dataset field; a list of references gives one per turn.
        """
        if self.reference is None:
            return pick_for_turn(context.case.variables.get("reference"), context, lists_only_per_turn=True)
        source = pick_for_turn(self.reference, context)
        if source is None:
            return None
        reference = JudgeTemplate("reference", source).render(self.key, self.line, context, variables)
        return reference if reference.strip() else None

    async def call(
        self, context: ScoringContext, judge: ModelSpec, extra: Mapping[str, Any] | None = None
    ) -> Completion:
        """Send ``judge`` the messages this prompt renders for the case; return its reply unread.

        Raises:
            CaseError: when a template fails. ProviderError: when the call fails.
        """
        case = context.case
        request = CompletionRequest(
            model=judge,
            messages=self.build_messages(context, extra),
            task=case.task,
            run=case.run,
            turn=judged_turn(context),
            purpose="judge",
            # ``model`` is the candidate, so an offline judge (a replay keyed by the judged model,
            # a scripted reply) can tell whose answer it grades; ``extra`` tells a panel's judge or
            # consensus model what it is asked (``judge``, ``reports``)
            variables={**case.variables, **(extra or {}), "model": model_variables(case)},
        )
        return await context.call_model(request)


def answer_variables(context: ScoringContext) -> dict[str, Any]:
    """What a judge reads of a structured answer.

    ``output``: the parsed JSON of an ``output_schema:`` task (None when it did not parse); ``tool_calls``: the calls
    of a task with function tools (``{name, arguments}``, the arguments as the model wrote them).
    """
    found: dict[str, Any] = {}
    if context.structured_output is not None:
        found["output"] = context.structured_output.value
    if context.case.functions:
        found["tool_calls"] = [{"name": call.name, "arguments": call.arguments}
                               for message in context.transcript if message.role == "assistant"
                               for call in message.tool_calls]
    return found
