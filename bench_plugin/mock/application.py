"""The mock server's application route, ``POST /app/ask``: a retrieval-style JSON API in a shape of its own.

It is what ``type: application`` providers are tried on offline: the request is ``{"query": text, ...}``
(or the query as a plain-text body), the answer
``{"result": {"answer": text, "citations": [...]}, "meta": {"tokens": {"prompt": n, "completion": m}}}``.
The mock's rules apply to it as to any route (``path: application``; ``match`` searches the query).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ROUTE = "application"
PATH = "/app/ask"


def application_query(body: Mapping[str, Any]) -> str:
    """The question asked: the body's ``query``."""
    query = body.get("query")
    return query if isinstance(query, str) else ""


def application_body(answer: str, query: str, number: int) -> dict[str, Any]:
    """The answer in the application's shape, with a citation and token counts (whitespace-separated words)."""
    return {
        "id": f"app-{number}",
        "result": {"answer": answer, "citations": [{"doc": "kb/handbook.md", "score": 0.87}]},
        "meta": {"tokens": {"prompt": len(query.split()), "completion": len(answer.split())}},
    }
