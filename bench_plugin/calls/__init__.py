"""One call's way out: attempts and retries, rate limits and the breaker, the cache, the call log, prices."""
