"""The mock server's ``POST /v1/embeddings``: the same text always gets the same vector.

Vectors are hashed character trigrams (``providers/text_vectors.py``, the offline providers' own),
so texts that share words come out close and the scores of a ``similar`` scorer are the same
offline and over HTTP. ``usage`` counts words as tokens, like the mock's completions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.providers.text_vectors import DIMENSIONS, hashed_vector

MAX_DIMENSIONS = 4096


def embedding_inputs(body: Mapping[str, Any]) -> list[str] | None:
    """The texts of a request's ``input`` (one string or a list of them); None when it is anything else."""
    value = body.get("input")
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(text, str) for text in value):
        return list(value)
    return None


def embeddings_body(body: Mapping[str, Any]) -> tuple[int, dict[str, Any] | str]:
    """``(status, body)`` of the answer: the vectors in OpenAI's shape, or 400 and why not.

    ``dimensions`` (1 to 4096) sets the vectors' length, as OpenAI's ``text-embedding-3`` models allow.
    """
    texts = embedding_inputs(body)
    if texts is None:
        return 400, "input must be a string or a non-empty list of strings (token arrays are not mocked)"
    if any(not text for text in texts):
        return 400, "input must not contain empty strings"
    size = body.get("dimensions", DIMENSIONS)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_DIMENSIONS:
        return 400, f"dimensions must be a whole number from 1 to {MAX_DIMENSIONS}"
    tokens = sum(len(text.split()) for text in texts)
    return 200, {
        "object": "list",
        "model": str(body.get("model")),
        "data": [{"object": "embedding", "index": index, "embedding": list(hashed_vector(text, size))}
                 for index, text in enumerate(texts)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
