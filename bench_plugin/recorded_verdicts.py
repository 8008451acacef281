"""Before a case runs: a judge that replays recorded verdicts must hold one for this model and task.

A reproduced benchmark (MT-Bench) serves GPT-4's recorded verdicts for the models it has them for.
Any other model would be called, then skipped when its first verdict is missing; checking first
skips it before the model is called (no tokens spent), with a reason that says how to judge it.
With ``--bench-judge`` the judges are real models and nothing is checked.
"""

from __future__ import annotations

from pathlib import Path

from bench_plugin.chat import CompletionRequest
from bench_plugin.errors import ReplayMissError
from bench_plugin.providers.offline import find_recordings
from bench_plugin.scoring.bind import CaseScoring
from bench_plugin.scoring.judge.llm_judge import JudgeScorer
from bench_plugin.scoring.judge.prompt import model_variables
from bench_plugin.suite.spec import CaseSpec


def check_recorded_verdicts(case: CaseSpec, scoring: CaseScoring) -> None:
    """Raise when an ``llm_judge`` scorer's replay judge has no recording for the case's model and task.

    Args:
        case: the case about to run.
        scoring: its scorers, bound (``ScoringBinder.bind``).

    Raises:
        ReplayMissError: kind ``replay_miss``, so the case is SKIPPED with the reason (never scored).
        CaseError: when the replay file cannot be read or a key template fails.
    """
    for scorer in scoring.scorers:
        name = scorer.prompt.judge if isinstance(scorer, JudgeScorer) else None
        judge = case.judges.get(name) if name is not None else None
        if judge is None or judge.provider.type != "replay" or "replay" not in judge.options:
            continue
        request = CompletionRequest(
            model=judge, messages=(), task=case.task, run=case.run, purpose="judge",
            variables={**case.variables, "model": model_variables(case)},
        )
        model_key, task_key, entries = find_recordings(request)
        if not entries:
            file = Path(judge.options["replay"]["file"]).name
            raise ReplayMissError(
                f"judge '{name}' replays recorded verdicts and {file} has none for model '{model_key}', "
                f"task '{task_key}'; to judge this model, name a real judge: --bench-judge PROVIDER:MODEL",
                kind="replay_miss",
            )
