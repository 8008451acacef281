"""What scorers take and give, and the two shapes a scorer type has: parse options once, then score cases.

A ``ScorerType`` (what a YAML ``type:`` names) turns one ``ScorerSpec`` into a ``Scorer`` at
collection, checking every option once; the ``Scorer`` is frozen and scores each case from its
typed fields, a ``ScoringContext`` in and a ``ComponentScore`` out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from bench_plugin.core.chat import CallModel, EmbedTexts, Message
from bench_plugin.core.errors import CaseError
from bench_plugin.core.transcript import AgentRun, StructuredOutput, TurnResult
from bench_plugin.suite.spec import CaseSpec, ScorerSpec


@dataclass(frozen=True)
class ComponentScore:
    """One named component of a case's score.

    ``value`` is normalised to 0..1 (None means unscored: the grader could not decide, and the
    component is left out of averages). ``raw`` is the value on the scorer's own scale (a judge's
    8 out of 10). ``detail`` is the evidence a person reads; ``judge_output`` the judge's full reply.
    A ``per_turn`` scorer gives one component per turn (``J.t1``...) with ``turn`` and ``scorer`` set.
    ``categories`` holds a rubric's per-category scores (None: that category could not be read);
    ``extra`` holds what a panel, a consensus or a pairwise comparison found (``panel``,
    ``participants``, ``pairwise``), merged into the record's component as it is.
    """

    name: str
    value: float | None
    raw: float | None = None
    passed: bool | None = None
    detail: str = ""
    judge_output: str | None = None
    error: str | None = None
    usage: Mapping[str, Any] = field(default_factory=dict)
    turn: int | None = None
    scorer: str | None = None
    categories: Mapping[str, float | None] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unscored(self) -> bool:
        """Whether the grader could not decide (no value)."""
        return self.value is None

    def to_dict(self) -> dict[str, Any]:
        """The component as plain data, the way records keep it."""
        out: dict[str, Any] = {
            "name": self.name,
            "value": self.value,
            "raw": self.raw,
            "passed": self.passed,
            "detail": self.detail,
            "judge_output": self.judge_output,
            "error": self.error,
            "usage": dict(self.usage),
        }
        if self.turn is not None:  # a per-turn component, e.g. J.t2: turn 2 of scorer J
            out.update(turn=self.turn, scorer=self.scorer)
        if self.categories:
            out["categories"] = dict(self.categories)
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class ScoringContext:
    """Everything a scorer may look at for one case.

    ``response`` is the final answer text; ``transcript`` the whole conversation including it.
    ``call_model`` is the runner's way to make a model call (judges use it), with its retries and
    concurrency limits: scorers never make HTTP calls of their own. ``turns`` are the turns of the
    conversation; ``turn`` is set when a ``per_turn`` scorer scores one of them, and then
    ``response`` is that turn's answer and ``transcript`` the conversation up to it. ``embed`` is
    the runner's embedding call (``similar`` scorers), like ``call_model``; None where no runner is.
    """

    case: CaseSpec
    response: str
    transcript: tuple[Message, ...]
    call_model: CallModel
    turns: tuple[TurnResult, ...] = ()
    turn: TurnResult | None = None
    # how judges read the conversation when it is not role: content blocks (a model-to-model
    # conversation: speaker names and events); None for a per-turn context
    transcript_text: str | None = None
    # an agent task's run: tool calls, checks of the final state, final files (None for other tasks)
    agent: AgentRun | None = None
    embed: EmbedTexts | None = None
    # an output_schema: task's answer read as JSON (None for other tasks)
    structured_output: StructuredOutput | None = None

    @property
    def last_turn(self) -> TurnResult | None:
        """The turn being scored, else the last answered turn of the case."""
        if self.turn is not None:
            return self.turn
        return next((turn for turn in reversed(self.turns) if turn.answered), None)


def require_agent(context: ScoringContext, spec: ScorerSpec) -> AgentRun:
    """The agent run a scorer of agent tasks reads.

    Raises:
        CaseError: the task has no tools, so no run: a suite problem named at the scorer's line.
    """
    if context.agent is None:
        raise CaseError(f"{spec.type} scores agent tasks: give the task tools:", path=context.case.path,
                        line=spec.line, key=spec.key)
    return context.agent


class Scorer(Protocol):
    """A scorer with its options parsed: frozen, made once per ScorerSpec by its type's parse."""

    @property
    def spec(self) -> ScorerSpec:
        """The spec it was parsed from: its name is the component's, its key and line locate errors."""
        ...

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Score one case. Raise nothing for a bad answer: that is a low score.

        Raises:
            JudgeError: the grader could not decide (the component is unscored).
            CaseError: something only the case can tell is wrong (a template that fails to render).
            ProviderError: a model call failed (the case is an ERROR).
        """
        ...


class ScorerType(Protocol):
    """What a YAML ``type:`` names; the registry holds one per name."""

    def parse(self, spec: ScorerSpec) -> Scorer:
        """Check and parse the options of ``spec`` (the JSON Schema cannot check them all).

        Raises:
            ValueError: (or TypeError) naming the bad option; the caller adds the file and line.
        """
        ...


@runtime_checkable
class ChecksCase(Protocol):
    """A scorer that can tell, before anything runs, whether it fits a case.

    For example: its judges are under ``judges:``, its pairwise baseline is one of the suite's models.
    """

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError located at the scorer's line and the key that is wrong."""
        ...


@runtime_checkable
class PreparesCase(Protocol):
    """A scorer that needs something of the machine before the case runs (a sandbox for the answer's code).

    Checked before the model is called, so that a case that could not be scored costs nothing.
    """

    async def before_case(self, case: CaseSpec) -> None:
        """Raises: SandboxError (the case is skipped), or another error the case ends with."""
        ...


@dataclass(frozen=True)
class ScoreSet:
    """All components of one case plus the composite and the verdict.

    ``composite`` is None when the case is unscored (``unscored_reason`` says why) or has no
    scorers; ``passed`` is None only when unscored. ``threshold`` is the ``pass_threshold`` (None:
    the default pass rule); ``pass_detail`` says which pass rules held or failed, when the default
    rule or a scorer's ``threshold`` decided (``scoring/pass_rule.py``), else it is empty.
    """

    components: tuple[ComponentScore, ...]
    composite: float | None
    passed: bool | None
    threshold: float | None
    composite_detail: str = ""
    unscored_reason: str | None = None
    pass_detail: str = ""
    dropped: Mapping[str, str] = field(default_factory=dict)  # components the composite left out, and why

    def to_dict(self) -> dict[str, Any]:
        """The scores as plain data, the way records keep them."""
        return {
            "components": [c.to_dict() for c in self.components],  # a list: scorer order survives JSON
            "composite": self.composite,
            "passed": self.passed,
            "threshold": self.threshold,
            "composite_detail": self.composite_detail,
            "unscored_reason": self.unscored_reason,
            # only when a pass rule other than the composite's threshold decided: records of suites
            # that set pass_threshold and no scorer threshold read as they always did
            **({"pass_detail": self.pass_detail} if self.pass_detail else {}),
        }
