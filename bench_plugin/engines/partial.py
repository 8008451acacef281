"""What a case had said when a call failed in its middle, carried on the error to the record.

A multi-turn case, a model-to-model conversation or an agent run that fails at its tenth call has
nine answers worth keeping: to read, to resume or to re-judge. The engine attaches them to the
``ProviderError`` it re-raises (or the ``CaseError`` of a template that failed between two calls: those
answers were paid for too); ``case.py`` puts them in the record.
"""

from __future__ import annotations

from bench_plugin.core.transcript import Transcript

_ATTRIBUTE = "partial_transcript"


def keep_partial(exc: BaseException, transcript: Transcript) -> None:
    """Attach ``transcript`` to ``exc``, unless an engine nearer the failure already attached one."""
    if partial_of(exc) is None:
        setattr(exc, _ATTRIBUTE, transcript)


def partial_of(exc: BaseException) -> Transcript | None:
    """The transcript of what was said before ``exc`` ended the case, if an engine kept one."""
    found = getattr(exc, _ATTRIBUTE, None)
    return found if isinstance(found, Transcript) else None
