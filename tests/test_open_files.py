"""A process that will hold many sockets raises its open-file limit first, or says why it cannot (Unix)."""

from __future__ import annotations

import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

CHECK = """\
import resource
from bench_plugin.providers.http import allow_open_files
print(allow_open_files(400))
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def run_with_limits(soft: int, hard: int) -> list[str]:
    """``CHECK`` in a child process started with these limits: a lowered hard limit cannot be raised again."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    done = subprocess.run([sys.executable, "-c", CHECK], preexec_fn=limit, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_a_low_soft_limit_is_raised_toward_the_hard_one() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1056:
        pytest.skip(f"this machine's hard limit ({hard}) is below what the test asks for")
    message, soft = run_with_limits(256, hard)  # macOS starts processes at 256
    assert message == "None" and int(soft) == 2 * 400 + 256


def test_a_hard_limit_too_low_is_a_clear_message() -> None:
    message, soft = run_with_limits(256, 256)
    assert soft == "256"
    assert message == ("--bench-concurrency 400 needs about 464 open files (a socket per call in flight), and this "
                       "process may open 256 (ulimit -n): raise that limit or lower the concurrency")


def test_enough_open_files_changes_nothing() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 2 * 400 + 256:
        pytest.skip("this machine's soft limit is lower than the test needs")
    assert run_with_limits(soft, hard) == ["None", str(soft)]
