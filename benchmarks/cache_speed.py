"""What the response cache costs per call: a lookup on the event loop's thread against one sent to a thread.

Fills a cache with N answers (prompts of about 1 KB, like a short case), then times, from inside an
event loop: the key (canonical JSON + SHA-256), a hit and a miss read on the loop's own thread (how
``runner.py`` reads), the same hit through ``asyncio.to_thread``, and queueing an answer for the writer
thread. Prints microseconds per call and the ratio of the two ways of reading.

    python benchmarks/cache_speed.py [N]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from bench_plugin.calls.cache import ResponseCache, cache_key
from bench_plugin.core.chat import Completion, CompletionRequest, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec

MODEL = ModelSpec("m", ProviderSpec("p", "openai_compatible", "http://127.0.0.1:8000/v1"), "model-1", "M",
                  params={"temperature": 0.0, "max_tokens": 256})


def request(n: int) -> CompletionRequest:
    prompt = f"Question {n}: " + "lorem ipsum dolor sit amet " * 40
    return CompletionRequest(MODEL, (Message("system", "Answer briefly."), Message("user", prompt)), run=1)


def per_call_us(started: float, calls: int) -> float:
    return (time.perf_counter() - started) / calls * 1e6


async def measure(cache: ResponseCache, keys: list[str], requests: list[CompletionRequest]) -> dict[str, float]:
    figures: dict[str, float] = {}
    started = time.perf_counter()
    for req in requests:
        cache_key(req)
    figures["key (JSON + SHA-256)"] = per_call_us(started, len(requests))
    started = time.perf_counter()
    for key in keys:
        assert cache.get(key) is not None
    figures["hit, on the loop's thread"] = per_call_us(started, len(keys))
    started = time.perf_counter()
    for key in keys:
        assert cache.get("absent-" + key) is None
    figures["miss, on the loop's thread"] = per_call_us(started, len(keys))
    started = time.perf_counter()
    for key in keys:
        assert await asyncio.to_thread(cache.get, key) is not None
    figures["hit, through asyncio.to_thread"] = per_call_us(started, len(keys))
    answer = Completion("An answer of a few words. " * 10, Usage(300, 40), 0.2, "stop", "id-1")
    started = time.perf_counter()
    for key in keys:
        cache.put("new-" + key, answer, "p", "model-1")
    figures["put (queued to the writer)"] = per_call_us(started, len(keys))
    return figures


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    requests = [request(n) for n in range(count)]
    keys = [cache_key(req) for req in requests]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        filling = ResponseCache(folder, "write")
        answer = Completion("An answer of a few words. " * 10, Usage(300, 40), 0.2, "stop", "id-1")
        started = time.perf_counter()
        for key in keys:
            filling.put(key, answer, "p", "model-1")
        filling.close()
        print(f"stored {count} answers through the writer thread: {per_call_us(started, count):.1f} us each "
              "(queued and committed)")
        cache = ResponseCache(folder, "on")
        figures = asyncio.run(measure(cache, keys, requests))
        started = time.perf_counter()
        cache.close()
        print(f"writer drained at close in {(time.perf_counter() - started) * 1e3:.1f} ms")
    for name, value in figures.items():
        print(f"{name:<34} {value:8.1f} us")
    ratio = figures["hit, through asyncio.to_thread"] / figures["hit, on the loop's thread"]
    print(f"a hit through a thread costs {ratio:.1f}x one read on the loop's thread")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
