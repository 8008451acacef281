"""An embedding call dressed as a completion, so it passes the same limits, retries and call log.

Rate limits, concurrency slots, the circuit breaker (``attempts.py``), retries and backoff
(``providers/retry.py``) and the case's ``CallLog`` all speak ``CompletionRequest`` and
``Completion``. Rather than a second copy of each, the runner hands them an ``EmbeddingCall``: a
provider whose ``complete`` embeds, and a stand-in request (the texts as user messages, so token
estimates for ``tpm`` limits see them). The vectors are kept aside and never enter a record.
"""

from __future__ import annotations

from dataclasses import replace

from bench_plugin.core.chat import Completion, CompletionRequest, EmbeddingRequest, Embeddings, Message
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.providers.interface import EmbeddingProvider, Provider


class EmbeddingCall:
    """One embedding call as ``complete_with_retries`` sees it: ``complete`` makes one ``embed`` attempt.

    Args:
        provider: the endpoint's provider, which can embed.
        request: the texts to embed and the model.
    """

    def __init__(self, provider: Provider, request: EmbeddingRequest) -> None:
        if not isinstance(provider, EmbeddingProvider):  # the runner asks can_embed first
            raise TypeError(f"provider type {provider.spec.type!r} cannot embed texts")
        self._embedder: EmbeddingProvider = provider
        self._policy: Provider = provider
        self.spec: ProviderSpec = provider.spec
        self.request = request
        self.stand_in = CompletionRequest(
            model=request.model,
            messages=tuple(Message("user", text) for text in request.texts),
            task=request.task,
            run=request.run,
            purpose=request.purpose,
        )
        self._answer: Embeddings | None = None

    async def complete(self, request: CompletionRequest) -> Completion:
        """One attempt at the embedding; its usage and latency as a completion without text."""
        answer = await self._embedder.embed(self.request)
        self._answer = answer
        return Completion(text="", usage=answer.usage, latency_s=answer.latency_s, request_id=answer.request_id)

    def answer(self, completion: Completion) -> Embeddings:
        """The vectors of the successful attempt, with the attempts the whole call took."""
        assert self._answer is not None, "complete_with_retries returns only after an attempt succeeded"
        return replace(self._answer, attempts=completion.attempts)

    def should_retry(self, exc: BaseException) -> bool:
        """As the provider says."""
        return self._policy.should_retry(exc)

    def connection_key(self) -> str:
        """As the provider says: embeddings share the endpoint's limits with its completions."""
        return self._policy.connection_key()

    def max_concurrency(self) -> int | None:
        """As the provider says."""
        return self._policy.max_concurrency()

    async def aclose(self) -> None:
        """Nothing: the runner closes the provider itself."""
        return None


def can_embed(provider: Provider) -> bool:
    """Whether the provider has an ``embed`` method (OpenAI-compatible and offline providers do)."""
    return isinstance(provider, EmbeddingProvider)
