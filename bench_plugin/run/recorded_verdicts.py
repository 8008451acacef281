"""Before a case runs: a judge that replays recorded verdicts must hold one for this model and task.

A reproduced benchmark (MT-Bench) serves GPT-4's recorded verdicts for the models it has them for.
Any other model would be called, then skipped when its first verdict is missing; checking first
skips it before the model is called (no tokens spent), with a reason that says how to judge it.
With ``--bench-judge`` the judges are real models and nothing is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_plugin.core.chat import CompletionRequest
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import ReplayMissError
from bench_plugin.scoring.bind import CaseScoring, WithVariables
from bench_plugin.scoring.context import Scorer
from bench_plugin.suite.spec import CaseSpec

if TYPE_CHECKING:
    from bench_plugin.scoring.judge.llm_judge import JudgeScorer


def check_recorded_verdicts(case: CaseSpec, scoring: CaseScoring) -> None:
    """Raise when a judge scorer's replay judge has no recording for the case's model and task.

    A judge scorer is an ``llm_judge``, a built-in grader asking through one, or either behind a scorer's ``vars:``.

    Args:
        case: the case about to run.
        scoring: its scorers, bound (``ScoringBinder.bind``).

    Raises:
        ReplayMissError: kind ``replay_miss``, so the case is SKIPPED with the reason (never scored).
        CaseError: when the replay file cannot be read or a key template fails.
    """
    if not any(_replays(judge) for judge in case.judges.values()):
        return  # no judge of the case replays recordings (most suites): there is nothing to look up
    # start-up: the judge scorer's modules are imported only for suites whose judges replay verdicts
    from bench_plugin.providers.offline import find_recordings
    from bench_plugin.scoring.judge.llm_judge import JudgeScorer
    from bench_plugin.scoring.judge.prompt import model_variables  # start-up: as above

    for scorer in scoring.scorers:
        asking, extra = _judge_of(scorer, JudgeScorer)
        name = asking.prompt.judge if asking is not None else None
        judge = case.judges.get(name) if name is not None else None
        if judge is None or not _replays(judge):
            continue
        request = CompletionRequest(
            model=judge, messages=(), task=case.task, run=case.run, purpose="judge",
            variables={**case.variables, **extra, "model": model_variables(case)},
        )
        model_key, task_key, entries = find_recordings(request)
        if not entries:
            file = Path(judge.options["replay"]["file"]).name
            raise ReplayMissError(
                f"judge '{name}' replays recorded verdicts and {file} has none for model '{model_key}', "
                f"task '{task_key}'; to judge this model, name a real judge: --bench-judge PROVIDER:MODEL",
                kind="replay_miss",
            )


def _replays(judge: ModelSpec) -> bool:
    return judge.provider.type == "replay" and "replay" in judge.options


def _judge_of(scorer: Scorer, judge_type: type[JudgeScorer]) -> tuple[JudgeScorer | None, Mapping[str, Any]]:
    """The ``llm_judge`` that asks for ``scorer`` (itself, or a grader's), and the variables its ``vars:`` add."""
    variables: dict[str, Any] = {}
    while isinstance(scorer, WithVariables):
        variables = {**scorer.variables, **variables}  # the outer wrapper's own win, as when it scores
        scorer = scorer.inner
    if isinstance(scorer, judge_type):
        return scorer, variables
    inner = getattr(scorer, "judge", None)
    return (inner if isinstance(inner, judge_type) else None), variables
