"""The container backend: each program in a fresh container of a local image (Docker or Podman).

The workspace is mounted read-write at its own path; the image's filesystem is read-only, with a small
private ``/tmp``. The container has no network unless the tool allows it (then the engine's default
bridge), no capability, no way to gain privileges, the limits (memory and processes for the whole
container, CPU time and file size for each process), and runs as the workspace's user. At the
timeout the container is killed, and every process in it with it. Images are never pulled: the one
named must be present.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.launch import Launch, environment
from bench_plugin.engines.agent.sandbox.owner import own_user
from bench_plugin.suite.agent.spec import SandboxLimits

ENGINES = ("docker", "podman")
STOP_S = 10.0
# what the engine's client needs from the caller's environment; nothing of it reaches the container
_CLIENT_PREFIXES = ("DOCKER_", "CONTAINER_", "CONTAINERS_", "PODMAN_")
_CLIENT_NAMES = ("PATH", "HOME", "USER", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "TMPDIR")


def container_argv(engine: str, image: str, name: str, argv: Sequence[str], workspace: Path, *,
                   limits: SandboxLimits, network: bool, uid: int) -> list[str]:
    """The ``docker run`` (or ``podman run``) command line for one program.

    Args:
        engine: ``docker`` or ``podman`` (or a path to one).
        image: the image, present locally.
        name: the container's name, to kill it at the timeout.
        argv: the program, looked up in the image's ``PATH``.
        workspace: mounted read-write at its own path, and the working directory.
        limits: memory and processes for the container, CPU time and file size for each process.
        network: the engine's default network, else none.
        uid: the user (and group) the program runs as.
    """
    mb = 1024 * 1024
    env = {key: value for key, value in environment(workspace).items() if key != "PATH"}  # the image's PATH
    return [
        engine, "run", "--rm", "--init", "--name", name, "--pull", "never",
        "--network", "bridge" if network else "none",
        "--read-only", "--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.file_mb}m,mode=1777",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--user", f"{uid}:{uid}",
        "--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m",
        "--pids-limit", str(limits.processes),
        "--ulimit", f"cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
        "--ulimit", f"fsize={limits.file_mb * mb}:{limits.file_mb * mb}", "--ulimit", "core=0:0",
        "--volume", f"{workspace}:{workspace}:rw", "--workdir", str(workspace),
        *[part for key, value in env.items() for part in ("--env", f"{key}={value}")],
        image, *argv,
    ]


def client_environment() -> dict[str, str]:
    """What the engine's client is started with: its own settings, no API key."""
    return {key: value for key, value in os.environ.items()
            if key in _CLIENT_NAMES or key.startswith(_CLIENT_PREFIXES)}


class ContainerSandbox(Sandbox):
    """Programs in containers of ``image``; see the module's docstring.

    Args:
        limits: what the programs may spend.
        engine: the engine's client (``docker`` or ``podman``), one that answers.
        image: the image, present locally.
    """

    name = "container"

    def __init__(self, limits: SandboxLimits, engine: str, image: str) -> None:
        super().__init__(limits)
        self.engine = engine
        self.image = image

    def launch(self, argv: Sequence[str], workspace: Path, *, network: bool) -> Launch:
        """A new container per program, named so that the timeout can kill it."""
        own = own_user(workspace)
        uid = own if own is not None else os.getuid()
        name = f"bench-sandbox-{secrets.token_hex(8)}"
        args = container_argv(self.engine, self.image, name, argv, workspace, limits=self.limits, network=network,
                              uid=uid)

        def stop() -> None:
            subprocess.run([self.engine, "kill", name], capture_output=True, timeout=STOP_S, check=False,
                           env=client_environment())

        return Launch(tuple(args), client_environment(), Path("/"), stop=stop)


def find_engine() -> tuple[str | None, str]:
    """The first engine whose client answers (``docker info`` / ``podman info``), or None and why not."""
    reasons = []
    for engine in ENGINES:
        client = shutil.which(engine)
        if client is None:
            reasons.append(f"{engine} is not installed")
            continue
        try:
            answer = subprocess.run([client, "info"], capture_output=True, text=True, timeout=20, check=False,
                                    env=client_environment())
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"{engine} does not answer: {exc}")
            continue
        if answer.returncode == 0:
            return client, ""
        lines = (answer.stderr.strip() or answer.stdout.strip()).splitlines()
        reasons.append(f"{engine} does not answer" + (f" ({lines[-1][:200]})" if lines else ""))
    return None, "; ".join(reasons)


def has_image(engine: str, image: str) -> bool:
    """Whether ``image`` is present for ``engine`` (nothing is pulled)."""
    try:
        answer = subprocess.run([engine, "image", "inspect", image], capture_output=True, timeout=20, check=False,
                                env=client_environment())
    except (OSError, subprocess.SubprocessError):
        return False
    return answer.returncode == 0
