"""CPU per call of a streamed answer beside a whole one, in the same run, against the mock server.

The mock server runs in its own process and answers ``--words`` words, whole (one JSON body) or as server-sent
events (one event per word, sent as fast as it can: no pacing, so the figures are the client's work, not its
waits). Two figures, each the minimum over ``--repeat`` rounds:

- the provider's call path alone, in this process (``OpenAICompatProvider.complete`` over the runner's pool,
  ``--concurrency`` in flight): CPU seconds of this process per call;
- a pytest run of ``--cases`` cases, with and without ``--bench-stream``: the marginal CPU per case,
  ``(CPU(N) - CPU(1)) / (N - 1)``, of the pytest process.

The ratio streamed / whole is what streaming costs; each event is parsed (JSON) and timed, so it grows with
the words of the answer.

    python benchmarks/stream_cpu.py                        # 1000 calls, 64 words, 64 in flight
    python benchmarks/stream_cpu.py --cases 500 --words 256 --repeat 5
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from harness import case_options, mock_server, run_pytest, write_suite

from bench_plugin.core.chat import CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.openai_compat import OpenAICompatProvider


def reply_rules(words: int) -> list[dict[str, object]]:
    """The suite's cases ask ``Say N``: the answer is N and then ``words`` more words."""
    return [{"model": "bench-model", "match": r"Say (\d+)", "reply": r"\1 " + " ".join(["word"] * words)}]


async def _calls(base_url: str, calls: int, concurrency: int, stream: bool) -> None:
    pool = HttpPool(size=concurrency)
    spec = ProviderSpec("local", "openai_compatible", base_url, timeout_s=30, stream=stream)
    provider = OpenAICompatProvider(spec, pool)
    model = ModelSpec("m", spec, "bench-model", "m")
    slots = asyncio.Semaphore(concurrency)

    async def one(n: int) -> None:
        async with slots:
            answer = await provider.complete(CompletionRequest(model, (Message("user", f"Say {n}"),)))
            assert answer.text.startswith(str(n)) and (answer.ttft_s is not None) == stream

    try:
        await asyncio.gather(*(one(n) for n in range(calls)))
    finally:
        await pool.aclose()


def provider_cpu_ms(base_url: str, calls: int, concurrency: int, stream: bool, repeat: int) -> float:
    """CPU milliseconds of this process per call, the minimum over ``repeat`` rounds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        asyncio.run(_calls(base_url, calls, concurrency, stream))
        best = min(best, time.process_time() - started)
    return 1000 * best / calls


def pytest_marginal_ms(many: Path, one: Path, cases: int, repeat: int, args: list[str]) -> float:
    total = min(run_pytest(many, *args).cpu_s for _ in range(repeat))
    single = min(run_pytest(one, *args).cpu_s for _ in range(repeat))
    return 1000 * (total - single) / max(1, cases - 1)


def main() -> int:
    parser = case_options(__doc__, "rounds per figure; the minimum is printed")
    parser.add_argument("--words", type=int, default=64, help="words of each answer (one event each when streamed)")
    options = parser.parse_args()
    n, repeat = options.cases, max(1, options.repeat)
    args = ["--bench-concurrency", str(options.concurrency), "--bench-cache", "off", "--bench-html", "off"]
    print(f"{n} calls of {options.words + 1} words, answer latency {options.latency:g} s, "
          f"{options.concurrency} in flight, min of {repeat}\n")
    print(f"{'path':<26} {'whole ms':>9} {'streamed ms':>12} {'ratio':>6}")
    with mock_server(options.latency, reply_rules(options.words)) as base_url, tempfile.TemporaryDirectory() as tmp:
        whole = provider_cpu_ms(base_url, n, options.concurrency, False, repeat)
        streamed = provider_cpu_ms(base_url, n, options.concurrency, True, repeat)
        print(f"{'provider call (CPU/call)':<26} {whole:>9.3f} {streamed:>12.3f} {streamed / whole:>6.2f}")
        many, one = Path(tmp) / "many", Path(tmp) / "one"
        write_suite(many, base_url, n)
        write_suite(one, base_url, 1)
        whole = pytest_marginal_ms(many, one, n, repeat, args)
        streamed = pytest_marginal_ms(many, one, n, repeat, [*args, "--bench-stream"])
        print(f"{'pytest case (marginal)':<26} {whole:>9.3f} {streamed:>12.3f} {streamed / whole:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
