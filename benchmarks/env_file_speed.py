"""Reading a large ``.env``: seconds of ``env_values`` next to a plain read of the same lines, and the ratio.

python-dotenv's ``dotenv_values(interpolate=True)`` took 150 s for 100,000 lines (a copy of the environment
per variable); the target of issue 29 is well under a second, linear in the file. Half the lines use
``${NAME}``. Prints figures, asserts nothing; ``--dotenv`` adds python-dotenv on a tenth of the lines.

    python benchmarks/env_file_speed.py
    python benchmarks/env_file_speed.py --lines 200000 --dotenv
"""

from __future__ import annotations

import argparse
import io
import time

from bench_plugin.plugin.options.env_syntax import env_values

TARGET_S = 1.0


def env_text(lines: int) -> str:
    return "".join(f"VAR_{i}=value_{i}_${{VAR_{i - 1}:-start}}\n" if i % 2 else f"VAR_{i}='v {i}'  # note\n"
                   for i in range(lines))


def best_of(repeat: int, work: object) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dotenv", action="store_true", help="also time python-dotenv on lines / 10")
    options = parser.parse_args()
    text = env_text(options.lines)
    plain = best_of(options.repeat, lambda: [line.partition("=") for line in text.splitlines()])
    ours = best_of(options.repeat, lambda: env_values(text, {}))
    print(f"{options.lines:,} lines: env_values {ours:.3f} s, plain split {plain:.3f} s, "
          f"ratio {ours / plain:.1f}x; {ours / TARGET_S:.2f} of the {TARGET_S:.0f} s target")
    half = env_text(options.lines // 2)
    print(f"{options.lines // 2:,} lines: env_values {best_of(options.repeat, lambda: env_values(half, {})):.3f} s "
          "(linear: about half the above)")
    if options.dotenv:
        from dotenv import dotenv_values

        tenth = env_text(options.lines // 10)
        seconds = best_of(1, lambda: dotenv_values(stream=io.StringIO(tenth), interpolate=True))
        print(f"{options.lines // 10:,} lines: python-dotenv interpolate=True {seconds:.3f} s")


if __name__ == "__main__":
    main()
