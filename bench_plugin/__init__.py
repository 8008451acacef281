"""bench_plugin: LLM benchmarks written as YAML suites and run as pytest tests."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# The public names: what a scorer, provider or engine written outside the project imports. Internal modules
# may move; these names stay. Each is imported when first used (PEP 562), so `import bench_plugin` stays cheap:
# pytest imports this package first, at every start-up, before it knows whether a suite will run.
_PUBLIC = {
    # how anyone talks to a model
    "CallModel": "bench_plugin.core.chat", "Completion": "bench_plugin.core.chat",
    "CompletionRequest": "bench_plugin.core.chat", "EmbeddingRequest": "bench_plugin.core.chat",
    "Embeddings": "bench_plugin.core.chat", "Message": "bench_plugin.core.chat", "ToolCall": "bench_plugin.core.chat",
    "ToolDefinition": "bench_plugin.core.chat", "Usage": "bench_plugin.core.chat",
    "MediaPart": "bench_plugin.core.media",  # an image or audio clip of a message (``Message.parts``)
    "ResponseSchema": "bench_plugin.core.chat",
    # who is called
    "ModelSpec": "bench_plugin.core.endpoints", "Pricing": "bench_plugin.core.endpoints",
    "ProviderSpec": "bench_plugin.core.endpoints",
    # what a case produced
    "AgentRun": "bench_plugin.core.transcript", "ToolCallRecord": "bench_plugin.core.transcript",
    "Transcript": "bench_plugin.core.transcript", "TurnResult": "bench_plugin.core.transcript",
    "StructuredOutput": "bench_plugin.core.transcript",
    # the exception tree
    "AuthError": "bench_plugin.core.errors", "BenchError": "bench_plugin.core.errors",
    "JudgeError": "bench_plugin.core.errors", "ProviderError": "bench_plugin.core.errors",
    "SuiteError": "bench_plugin.core.errors", "TransientProviderError": "bench_plugin.core.errors",
    # what the suite says
    "CaseSpec": "bench_plugin.suite.spec", "ScorerSpec": "bench_plugin.suite.spec",
    "TaskSpec": "bench_plugin.suite.spec",
    # scorers
    "ComponentScore": "bench_plugin.scoring.context", "Scorer": "bench_plugin.scoring.context",
    "ScorerType": "bench_plugin.scoring.context", "ScoringContext": "bench_plugin.scoring.context",
    # providers
    "BaseProvider": "bench_plugin.providers.interface", "Provider": "bench_plugin.providers.interface",
    "merge_params": "bench_plugin.providers.interface", "HttpPool": "bench_plugin.providers.http",
    # a stand-in server a conftest.py starts for its suites (pytest_bench_base_urls)
    "MockServer": "bench_plugin.mock.server",
}

__all__ = [  # the names of _PUBLIC, spelled out for tools that read __all__
    "AgentRun",
    "AuthError",
    "BaseProvider",
    "BenchError",
    "CallModel",
    "CaseSpec",
    "Completion",
    "CompletionRequest",
    "ComponentScore",
    "EmbeddingRequest",
    "Embeddings",
    "HttpPool",
    "JudgeError",
    "MediaPart",
    "Message",
    "MockServer",
    "ModelSpec",
    "Pricing",
    "Provider",
    "ProviderError",
    "ProviderSpec",
    "ResponseSchema",
    "Scorer",
    "ScorerSpec",
    "ScorerType",
    "ScoringContext",
    "StructuredOutput",
    "SuiteError",
    "TaskSpec",
    "ToolCall",
    "ToolCallRecord",
    "ToolDefinition",
    "Transcript",
    "TransientProviderError",
    "TurnResult",
    "Usage",
    "__version__",
    "merge_params",
]

if TYPE_CHECKING:
    from bench_plugin.core.chat import (
        CallModel,
        Completion,
        CompletionRequest,
        EmbeddingRequest,
        Embeddings,
        Message,
        ResponseSchema,
        ToolCall,
        ToolDefinition,
        Usage,
    )
    from bench_plugin.core.endpoints import ModelSpec, Pricing, ProviderSpec
    from bench_plugin.core.errors import (
        AuthError,
        BenchError,
        JudgeError,
        ProviderError,
        SuiteError,
        TransientProviderError,
    )
    from bench_plugin.core.media import MediaPart
    from bench_plugin.core.transcript import AgentRun, StructuredOutput, ToolCallRecord, Transcript, TurnResult
    from bench_plugin.mock.server import MockServer
    from bench_plugin.providers.http import HttpPool
    from bench_plugin.providers.interface import BaseProvider, Provider, merge_params
    from bench_plugin.scoring.context import ComponentScore, Scorer, ScorerType, ScoringContext
    from bench_plugin.suite.spec import CaseSpec, ScorerSpec, TaskSpec


def __getattr__(name: str) -> Any:
    """Import a public name from its module the first time it is asked for."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'bench_plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})



def _import_without_assert_rewriting() -> None:
    """Let this package's modules load as plain Python, not through pytest's assertion rewriter.

    pytest marks every module of a ``pytest11`` plugin's distribution for assertion rewriting. Our asserts
    are invariants, not tests, so rewriting gains nothing, and where the rewritten byte code cannot be
    cached (``PYTHONDONTWRITEBYTECODE=1``, a read-only site-packages) pytest parses and compiles every
    module again at each start-up: about half a second for this package (``benchmarks/startup.py``).
    ``PYTEST_DONT_REWRITE`` in a docstring does not help there: the module is still parsed and compiled
    to find it. This package's ``__init__`` is the first of its modules imported, so unmarking the
    package here leaves the rest to Python's own import and byte-code cache. pytest has no public way
    to do this: if its private names change, the modules are simply rewritten again.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if isinstance(marked, set) and __name__ in marked:
            marked.discard(__name__)
            decided = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(decided, dict):
                decided.clear()


_import_without_assert_rewriting()
