"""Why an endpoint refused a request as sent (HTTP 400, 422...): the likely cause, read from the server's answer.

Running such a case again cannot help; what to change depends on what the server said: a prompt longer than
the model's context, or a parameter the server does not take (and whether the suite or ``--bench-model-arg``
sent it).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

_CONTEXT = re.compile(r"context[ _-]?(length|size|window)|maximum context|prompt is too long|too many tokens",
                      re.IGNORECASE)
"""How servers say the prompt does not fit: OpenAI and vLLM (``maximum context length``, the code
``context_length_exceeded``), llama.cpp (``context size``), Anthropic (``prompt is too long``)."""
_UNKNOWN_FIELD = re.compile(r"unexpected (field|param|argument|keyword)|unrecogni[sz]ed|unknown (field|param|argument)"
                            r"|extra (fields|inputs) (are )?not permitted|not supported|unsupported", re.IGNORECASE)
"""How servers say a request carries a field they do not take (transformers' serve: ``Unexpected fields``)."""


def likely_cause(message: str, params: Iterable[str], from_command_line: Collection[str]) -> str | None:
    """What to change, from the server's message; None when it names nothing recognised.

    Args:
        message: the server's answer, as the record keeps it.
        params: the names of the parameters the model was sent (the suite's and ``--bench-model-arg``'s).
        from_command_line: those ``--bench-model-arg`` set.
    """
    if _CONTEXT.search(message):
        return ("the prompt does not fit the model's context (with max_tokens for the answer): shorten the prompt, "
                "lower max_tokens, or choose a model with a longer context")
    key = _refused_parameter(message, list(params), from_command_line)
    if key is None:
        return None
    where = "--bench-model-arg" if key in from_command_line else "the suite (the model's parameters)"
    return f"the server does not take parameter {key!r}, which {where} sent: leave it out for this model"


def _refused_parameter(message: str, sent: list[str], from_command_line: Collection[str]) -> str | None:
    """The parameter the server names; when it names none but refuses a field, the command line's first."""
    named = [key for key in sent if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", message)]
    if not named and _UNKNOWN_FIELD.search(message):
        named = [key for key in sent if key in from_command_line]
    return named[0] if named else None
