"""The container backend without a container engine: its command line, and its plumbing through a stand-in client.

No Docker or Podman engine answers on the machines these tests were written on, so the tests that run
programs in real containers (tests/test_sandbox.py) skip there, saying why. What can be checked without
one is checked here: every isolation flag of ``docker run``, and, through a fake ``docker`` executable
that logs what it is asked, that the engine is found, the image must be present (never pulled), the
client gets no API key in its environment, and the container is killed by name at the timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.engines.agent.sandbox import choose
from bench_plugin.engines.agent.sandbox.container import ContainerSandbox, client_environment, container_argv
from bench_plugin.engines.agent.workspace import create_workspace, remove_workspace
from bench_plugin.suite.agent.spec import SandboxLimits, SandboxSpec, WorkspaceSpec

MB = 1024 * 1024
LIMITS = SandboxLimits(cpu_seconds=7, memory_mb=300, processes=12, file_mb=9, output_kb=64)
IMAGE = "bench-test/present:1"
MARKER = "sk-bench-container-marker-0123456789"

FAKE_ENGINE = """#!{python}
# a stand-in for the docker client: logs each call, answers like an engine that holds one image
import json, os, sys, time
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"args": args, "env": dict(os.environ)}}) + "\\n")
if args[0] == "info" or args[0] == "kill":
    sys.exit(0)
if args[:2] == ["image", "inspect"]:
    sys.exit(0 if args[2] == {image!r} else 1)
if args[0] == "run":
    program = args[args.index({image!r}) + 1:]
    print("ran", *program, flush=True)
    if program[0] == "sleep":
        time.sleep(float(program[1]))
    sys.exit(3)
sys.exit(2)
"""


def flag_values(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == flag]


def test_every_isolation_flag_is_on_the_command_line() -> None:
    workspace = Path("/ws/case-1")
    args = container_argv("docker", IMAGE, "bench-sandbox-x", ["python3", "t.py"], workspace, limits=LIMITS,
                          network=False, uid=4242)
    assert args[:8] == ["docker", "run", "--rm", "--init", "--name", "bench-sandbox-x", "--pull", "never"]
    assert flag_values(args, "--network") == ["none"]
    assert "--read-only" in args  # the image's filesystem
    assert flag_values(args, "--tmpfs") == [f"/tmp:rw,nosuid,nodev,size={LIMITS.file_mb}m,mode=1777"]
    assert flag_values(args, "--cap-drop") == ["ALL"]
    assert flag_values(args, "--security-opt") == ["no-new-privileges"]
    assert flag_values(args, "--user") == ["4242:4242"]
    assert flag_values(args, "--memory") == ["300m"] and flag_values(args, "--memory-swap") == ["300m"]  # no swap
    assert flag_values(args, "--pids-limit") == ["12"]
    assert flag_values(args, "--ulimit") == ["cpu=7:8", f"fsize={9 * MB}:{9 * MB}", "core=0:0"]
    assert flag_values(args, "--volume") == ["/ws/case-1:/ws/case-1:rw"]  # the only thing mounted
    assert flag_values(args, "--workdir") == ["/ws/case-1"]
    env = dict(value.split("=", 1) for value in flag_values(args, "--env"))
    assert env == {"HOME": "/ws/case-1", "PYTHONPATH": "/ws/case-1", "PYTHONDONTWRITEBYTECODE": "1",
                   "LANG": "C.UTF-8"}  # the image's PATH, and nothing of pytest's environment
    assert args[-3:] == [IMAGE, "python3", "t.py"]
    for forbidden in ("--privileged", "--pid", "--ipc", "--userns", "--cap-add", "--device", "--mount"):
        assert forbidden not in args


def test_the_network_is_the_default_bridge_only_when_the_tool_allows_it() -> None:
    args = container_argv("podman", IMAGE, "b", ["x"], Path("/w"), limits=LIMITS, network=True, uid=1)
    assert flag_values(args, "--network") == ["bridge"] and args[0] == "podman"


def test_the_program_cannot_pass_options_to_the_engine() -> None:
    """Everything after the image is the program's argv: ``--privileged`` there is an argument, not a flag."""
    args = container_argv("docker", IMAGE, "b", ["--privileged", "-v", "/:/host"], Path("/w"), limits=LIMITS,
                          network=False, uid=1)
    assert args[args.index(IMAGE):] == [IMAGE, "--privileged", "-v", "/:/host"]
    assert "--privileged" not in args[:args.index(IMAGE)]


def test_the_engine_client_gets_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", MARKER)
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/docker.sock")
    monkeypatch.setenv("SOME_TOKEN", MARKER)
    env = client_environment()
    assert env["DOCKER_HOST"] == "unix:///run/user/docker.sock" and "PATH" in env
    assert MARKER not in json.dumps(env)


# ---------------------------------------------------------------- through a stand-in client


@pytest.fixture
def fake_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``docker`` on an otherwise empty PATH (no bwrap, no podman); returns its call log."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.jsonl"
    client = folder / "docker"
    client.write_text(FAKE_ENGINE.format(python=sys.executable, log=str(log), image=IMAGE))
    client.chmod(client.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setenv("OPENAI_API_KEY", MARKER)  # in pytest's environment: it must not reach the client
    monkeypatch.setattr(choose, "_ENGINE_PROBE", [])  # the engine is looked for once per process
    monkeypatch.setattr(choose, "_LANDLOCK_PROBE", ["off (test)"])  # auto would take it before a container
    return log


@pytest.fixture
def workspace() -> Iterator[Path]:
    root = create_workspace(WorkspaceSpec(files={"a.txt": "hello\n"}))
    yield root
    remove_workspace(root)


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_auto_falls_back_to_a_container_engine_that_holds_the_image(fake_engine: Path) -> None:
    sandbox = asyncio.run(choose.open_sandbox(SandboxSpec(backend="auto", image=IMAGE, limits=LIMITS)))
    assert isinstance(sandbox, ContainerSandbox) and sandbox.image == IMAGE
    assert [call["args"][:2] for call in calls(fake_engine)] == [["info"], ["image", "inspect"]]


def test_an_absent_image_is_never_pulled(fake_engine: Path) -> None:
    found, reason = asyncio.run(choose.container(SandboxSpec(backend="container", image="absent:1")))
    assert found is None
    assert reason == "the image 'absent:1' is not present for docker (images are never pulled: docker pull absent:1)"
    assert not any(call["args"][0] in ("pull", "run") for call in calls(fake_engine))


def test_a_program_runs_through_the_engine_with_the_built_command_line(fake_engine: Path, workspace: Path) -> None:
    sandbox = asyncio.run(choose.open_sandbox(SandboxSpec(backend="container", image=IMAGE, limits=LIMITS)))
    result = asyncio.run(sandbox.run(["python3", "-c", "print(1)"], workspace, timeout_s=20))
    assert result.exit_code == 3 and result.stdout == "ran python3 -c print(1)\n"
    run = next(call for call in calls(fake_engine) if call["args"][0] == "run")
    name = flag_values(run["args"], "--name")[0]
    uid = int(flag_values(run["args"], "--user")[0].split(":")[0])
    assert run["args"] == container_argv("docker", IMAGE, name, ["python3", "-c", "print(1)"], workspace,
                                         limits=LIMITS, network=False, uid=uid)[1:]
    if os.geteuid() == 0:  # root: a user of the workspace's own, who owns it
        assert uid != 0 and workspace.stat().st_uid == uid
    for call in calls(fake_engine):
        assert MARKER not in json.dumps(call)  # neither in the client's environment nor on its command line


def test_at_the_timeout_the_container_is_killed_by_name(fake_engine: Path, workspace: Path) -> None:
    sandbox = asyncio.run(choose.open_sandbox(SandboxSpec(backend="container", image=IMAGE, limits=LIMITS)))
    result = asyncio.run(sandbox.run(["sleep", "60"], workspace, timeout_s=1))
    assert result.timed_out
    logged = calls(fake_engine)
    run = next(call for call in logged if call["args"][0] == "run")
    assert ["kill", flag_values(run["args"], "--name")[0]] in [call["args"] for call in logged]


def test_an_engine_that_does_not_answer_is_a_reason_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 ) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    client = folder / "docker"
    client.write_text(f"#!{sys.executable}\nimport sys\nprint('Cannot connect to the Docker daemon', file=sys.stderr)\n"
                      "sys.exit(1)\n")
    client.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(choose, "_ENGINE_PROBE", [])
    found, reason = asyncio.run(choose.container(SandboxSpec(backend="container")))
    assert found is None
    assert reason == "docker does not answer (Cannot connect to the Docker daemon); podman is not installed"
