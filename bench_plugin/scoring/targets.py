"""Where the text a scorer reads comes from (its ``target:``): the answer, the raw reply, or the reasoning.

Checks and judges share this table; it is the seam for scoring tool calls or files later.
"""

from __future__ import annotations

from collections.abc import Callable

from bench_plugin.scoring.context import ScoringContext


def _raw(context: ScoringContext) -> str:
    turn = context.last_turn
    return (turn.raw or "") if turn is not None else context.response


def _thinking(context: ScoringContext) -> str:
    turn = context.last_turn
    return (turn.thinking or "") if turn is not None else ""


# ``response`` is the answer (after any thinking tags), ``raw`` the reply as sent back, ``thinking``
# the reasoning
TARGETS: dict[str, Callable[[ScoringContext], str]] = {
    "response": lambda context: context.response,
    "raw": _raw,
    "thinking": _thinking,
}
