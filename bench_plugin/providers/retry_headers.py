"""How long a server asks us to wait before trying again, read from its answer's headers.

``Retry-After`` (seconds or a date), ``retry-after-ms``, and the resets of OpenAI's and Anthropic's rate-limit
headers, also under a proxy's prefix (LiteLLM). ``calls/retry.py`` waits what this reads.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from datetime import datetime, timezone

import httpx


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay seconds or an HTTP-date); None if unreadable."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


# Proxies such as LiteLLM forward the upstream's headers under this prefix.
_PROXY_PREFIXES = ("", "llm_provider-")
# (remaining, reset) pairs: OpenAI's durations ("6m0s", "20ms"), Anthropic's RFC 3339 instants
_RESET_HEADERS = (
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset"),
    ("anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"),
    ("anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset"),
    ("anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset"),
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def retry_wait_of(headers: Mapping[str, str], status: int = 429, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait before trying again; None when it does not say.

    In order: ``retry-after-ms``, ``Retry-After`` (seconds or an HTTP date), and on a 429 the reset of
    the exhausted limit (``x-ratelimit-reset-requests``/``-tokens``, ``anthropic-ratelimit-*-reset``),
    each also under a proxy's ``llm_provider-`` prefix (LiteLLM).
    """
    headers = httpx.Headers(headers)
    for prefix in _PROXY_PREFIXES:
        milliseconds = parse_retry_after(headers.get(prefix + "retry-after-ms"), now)
        if milliseconds is not None:
            return milliseconds / 1000
        seconds = parse_retry_after(headers.get(prefix + "retry-after"), now)
        if seconds is not None:
            return seconds
    if status != 429:  # the ratelimit headers come with every answer; only a 429 says one ran out
        return None
    resets: list[tuple[bool, float]] = []
    for prefix in _PROXY_PREFIXES:
        for remaining, reset in _RESET_HEADERS:
            wait = parse_reset(headers.get(prefix + reset), now)
            if wait is not None:
                resets.append((headers.get(prefix + remaining, "").strip() == "0", wait))
    exhausted = [wait for empty, wait in resets if empty]
    chosen = exhausted or [wait for _, wait in resets]
    return max(chosen) if chosen else None


def parse_reset(value: str | None, now: float | None = None) -> float | None:
    """Seconds until a rate limit resets: ``1s``, ``6m0s``, ``20ms``, ``1.5`` or an RFC 3339 instant."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    parts = _DURATION_PART.findall(value)
    if parts and "".join(number + unit for number, unit in parts) == value:
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(number) * scale[unit] for number, unit in parts)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return parse_retry_after(value, now)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
