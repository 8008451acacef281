"""The ``llm_judge`` scorer: a judge model reads the answer and gives a number on a scale.

A reply with no readable verdict makes the component unscored (never a silent 0), and a failed call
raises ``ProviderError`` so the runner can tell infrastructure failures from bad answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.chat import Completion, Message
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.judge_reply import (
    Reading,
    ReplyReader,
    candidate_names,
    parse_reply_reader,
    participant_names,
    reading_fields,
)
from bench_plugin.scoring.judge.prompt import (
    LAYOUTS,
    JudgePrompt,
    check_judges,
    parse_reference,
    parse_show_media,
    parse_templates,
)
from bench_plugin.scoring.judge.prompt_names import check_prompt_names
from bench_plugin.scoring.judge.rubric import Rubric
from bench_plugin.scoring.judge.usage import completion_usage
from bench_plugin.scoring.judge.verdict_maps import VerdictMap
from bench_plugin.scoring.options import check_choice, check_flag, check_option_names, is_number
from bench_plugin.scoring.targets import TARGETS
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

OPTION_KEYS = (
    "judge",
    "show_media",
    "prompt",
    "prompt_file",
    "system",
    "system_file",
    "reference",
    "scale",
    "parse",
    "clamp",
    "target",
    "layout",
    "rubric",
    "participants",
    "verdict",
)
DEFAULT_SCALE = (1.0, 10.0)


def parse_scale(
    options: Mapping[str, Any], rubric: Rubric | None, labels: VerdictMap | None = None
) -> tuple[float, float]:
    """``scale: [lowest, highest]``.

    Without one: a ``verdict:`` map's lowest to highest score, a rubric's lowest to highest total, else 1..10.

    Raises:
        ValueError: not two numbers, or not from low to high.
    """
    scale = options.get("scale", _default_scale(rubric, labels))
    if not _two_numbers(scale):
        raise ValueError(f"scale must be two numbers [lowest, highest], got {scale!r}")
    low, high = float(scale[0]), float(scale[1])
    if low >= high:
        raise ValueError(f"scale [{low:g}, {high:g}] must go from low to high")
    return low, high


def _default_scale(rubric: Rubric | None, labels: VerdictMap | None) -> Any:
    """A ``verdict:`` map's lowest to highest score, a rubric's lowest to highest total, else 1..10."""
    if labels is not None:
        return [labels.low, labels.high]
    return [rubric.low, rubric.high] if rubric else DEFAULT_SCALE


def _two_numbers(scale: Any) -> bool:
    return (
        isinstance(scale, (list, tuple))
        and len(scale) == 2
        and all(is_number(bound) for bound in scale)
    )


def _judge_name(judge: Any, owner: str, optional: bool) -> str | None:
    """``judge:``, a name; None, when optional, has the model under test grade its own answer.

    That is inspect's default for model-graded scorers.
    """
    if judge is None and optional:
        return None
    if not isinstance(judge, str) or not judge:
        raise ValueError(f"{owner} needs judge: the name of a model under the suite's judges:")
    return judge


@dataclass(frozen=True)
class JudgeScorer:
    """``type: llm_judge``: asks a judge for a verdict; value is ``(raw - lo) / (hi - lo)`` on the ``scale``.

    ``prompt`` is how the judge is asked, ``reader`` how its reply is read; a panel asks each of its
    judges with a copy whose ``prompt.judge`` differs.
    """

    spec: ScorerSpec
    prompt: JudgePrompt
    reader: ReplyReader
    scale: tuple[float, float] = DEFAULT_SCALE
    clamp: bool = False

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Check the options before any call is made.

        Raises:
            ValueError: for unknown keys, a missing prompt, a bad scale or parse rule.
        """
        return cls.from_options(spec, spec.options)

    @classmethod
    def from_options(
        cls, spec: ScorerSpec, options: Mapping[str, Any], *, owner: str = "llm_judge",
        allowed: tuple[str, ...] = OPTION_KEYS, judge_optional: bool = False,
    ) -> Self:
        """The scorer ``options`` describe; ``spec`` names the component and locates errors.

        A panel reads its judges' options out of its own; a built-in grader (``scoring/graders/``)
        gives its own prompt and verdict, the options it takes (``allowed``) and its name (``owner``),
        and may leave ``judge`` out (``judge_optional``): the model under test then grades.

        Raises:
            ValueError: naming the option that is wrong.
        """
        try:
            return cls._from_options(spec, options, owner, allowed, judge_optional)
        except TypeError as exc:  # a wrong type is a bad option like any other
            raise ValueError(str(exc)) from exc

    @classmethod
    def _from_options(
        cls, spec: ScorerSpec, options: Mapping[str, Any], owner: str, allowed: tuple[str, ...], judge_optional: bool
    ) -> Self:
        check_option_names(options, allowed, owner)
        judge = _judge_name(options.get("judge"), owner, judge_optional)
        prompt, system = parse_templates(options, owner)
        layout = check_choice("layout", options.get("layout", "standalone"), LAYOUTS)
        if layout == "conversation" and system is not None:
            raise ValueError(
                "layout: conversation sends the prompt as the leading system message; drop system/system_file"
            )
        reference = parse_reference(options)
        clamp = check_flag("clamp", options.get("clamp", False))
        target = check_choice("target", options.get("target", "response"), tuple(TARGETS))
        reader = parse_reply_reader(options)
        scale = parse_scale(options, reader.rubric, reader.labels)
        asking = JudgePrompt(spec.key, spec.line, judge, prompt, system, reference, target, layout, reader.rubric,
                             show_media=parse_show_media(options))
        return cls(spec, asking, reader, scale, clamp)

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """Each judge it calls and the option that names it (``CallsJudges``); none when the model under test grades."""
        return () if self.prompt.judge is None else ((self.prompt.judge, "judge"),)

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError when the judge is not under the suite's ``judges:``, or a prompt reads an unknown name."""
        check_judges(self, case, self.spec.key, self.spec.line)
        check_prompt_names(self.prompt, case)
        self.prompt.check_media(case)

    def build_messages(self, context: ScoringContext, extra: Mapping[str, Any] | None = None) -> tuple[Message, ...]:
        """The messages the judge is sent for this case (see ``JudgePrompt.build_messages``)."""
        return self.prompt.build_messages(context, extra)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Call the judge through ``context.call_model`` and read its verdict.

        Raises:
            CaseError: for an unknown judge or a template that fails (the case fails alone).
            ProviderError: when the judge call fails; the runner classifies it.
        """
        return await self.ask(context, self.prompt.model(context))

    async def ask(
        self, context: ScoringContext, judge: ModelSpec, extra: Mapping[str, Any] | None = None
    ) -> ComponentScore:
        """One judge's call and its reading (a panel asks each of its judges this way).

        Raises:
            CaseError: when a template fails. ProviderError: when the call fails.
        """
        completion = await self.prompt.call(context, judge, extra)
        case = context.case
        return self.read(judge, completion, candidate_names(case), participant_names(case))

    def read(
        self,
        judge: ModelSpec,
        completion: Completion,
        candidate: Sequence[str] = (),
        known: Sequence[Sequence[str]] = (),
    ) -> ComponentScore:
        """Turn a judge's reply into a component: normalised value, raw verdict, full reply and usage.

        ``value`` is 0..1 for composites; ``raw`` keeps the verdict on the scale, e.g. -0.5 on [-1, 1].
        ``candidate`` holds the names the candidate may be written as (a table row, a participant's
        entry); ``known`` those of every participant of a conversation (``judge_reply.py``).
        Rubric categories go to ``categories`` and participants' scores to ``extra["participants"]``.
        """
        reply = completion.text
        reading = self.reader.read(reply, candidate, clamp=self.clamp, known=known)
        common: dict[str, Any] = {"name": self.spec.name, "judge_output": reply, "usage": completion_usage(completion),
                                  **reading_fields(reading)}
        if reading.raw is None:
            error = f"could not read a score from the judge reply: {reading.error}"
            return ComponentScore(value=None, detail=f"judge {judge.label}: no verdict", error=error, **common)
        if reading.label is not None:
            common["extra"] = {**common["extra"], "verdict": reading.label}
        return self._on_scale(reading.raw, self._shown(judge, reading, reading.raw), common)

    def _shown(self, judge: ModelSpec, reading: Reading, raw: float) -> str:
        """``judge J: 7/10``, ``judge J: C = 1/1`` or ``-0.5 on [-1, 1]``, with the reading's notes."""
        low, high = self.scale
        # a signed scale (-1..+1) reads badly as "-0.5/1"
        on_scale = f"{raw:g} on [{low:g}, {high:g}]" if low < 0 else f"{raw:g}/{high:g}"
        shown = f"judge {judge.label}: " + (on_scale if reading.label is None else f"{reading.label} = {on_scale}")
        return shown + "".join(f" ({note})" for note in (reading.note, *reading.problems) if note)

    def _on_scale(self, raw: float, shown: str, common: dict[str, Any]) -> ComponentScore:
        """The component of a verdict: normalised on the scale, clamped when asked, else unscored off it."""
        low, high = self.scale
        if not low <= raw <= high:
            if not self.clamp:
                outside = f"judge verdict {raw:g} is outside the scale [{low:g}, {high:g}]"
                error = f"{outside} (set clamp: true to clamp it)"
                return ComponentScore(value=None, raw=raw, detail=f"{shown}, off the scale", error=error, **common)
            raw = min(max(raw, low), high)
            shown = f"{shown}, clamped to {raw:g}"
        value = round((raw - low) / (high - low), 6)
        # raw is the verdict on the judge's own scale (clamped when asked): what stance means and bins read
        return ComponentScore(value=value, raw=raw, detail=shown, **common)
