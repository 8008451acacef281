"""The sandbox backends, one guarantee per test, each against the attack of issue 11 (item 1) it stops.

The guarantees are tested for every confining backend (``CONFINING``), each test skipping with the
reason where its backend does not work on this machine; the pure parts (command lines, the filesystem
view, the Seatbelt profile, the seccomp filter, the choice of a backend) run everywhere.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_plugin.core.errors import SandboxError, ToolFailure
from bench_plugin.engines.agent.builtin_tools import list_files, read_file, search
from bench_plugin.engines.agent.sandbox import choose
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.bubblewrap import BubblewrapSandbox, bwrap_argv, filesystem_view
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.engines.agent.sandbox.container import ContainerSandbox, container_argv, find_engine
from bench_plugin.engines.agent.sandbox.landlock import launcher_options
from bench_plugin.engines.agent.sandbox.landlock_launcher import Options
from bench_plugin.engines.agent.sandbox.launch import CommandResult
from bench_plugin.engines.agent.sandbox.owner import FIRST_UID
from bench_plugin.engines.agent.sandbox.seatbelt import seatbelt_argv, seatbelt_profile
from bench_plugin.engines.agent.sandbox.unconfined import UnconfinedSandbox
from bench_plugin.engines.agent.sandbox.unix_sockets import deny_unix_sockets_filter
from bench_plugin.engines.agent.workspace import create_workspace, remove_workspace, snapshot
from bench_plugin.suite.agent.spec import SandboxLimits, SandboxSpec, WorkspaceSpec

LIMITS = SandboxLimits()
CONFINING = ("bubblewrap", "landlock", "seatbelt", "container")
"""Every backend that confines, in the order ``auto`` tries them."""
LINUX = ("bubblewrap", "landlock", "container")
"""The backends whose programs see a Linux ``/proc`` of their own."""


def bubblewrap(limits: SandboxLimits = LIMITS) -> BubblewrapSandbox:
    found, reason = asyncio.run(choose.bubblewrap(limits))
    if found is None:
        pytest.skip(f"bubblewrap does not work here: {reason}")
    return found


def confined(backend: str, limits: SandboxLimits = LIMITS) -> Sandbox:
    """The sandbox of ``backend``, or the test skips saying why it does not work here."""
    found, reason = asyncio.run(choose.BACKENDS[backend](SandboxSpec(backend=backend, limits=limits)))
    if found is None:
        pytest.skip(f"{backend} does not work here: {reason or 'not this system'}")
    return found


@pytest.fixture(params=CONFINING)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=LINUX)
def linux_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def workspace() -> Iterator[Path]:
    root = create_workspace(WorkspaceSpec(files={"a.txt": "hello\n"}))
    yield root
    remove_workspace(root)


def run(sandbox: Sandbox, workspace: Path, code: str, *, timeout_s: float = 20, network: bool = False,
        program: str = "python3") -> CommandResult:
    argv = [program, "-c", code] if program == "python3" else [program, *code.split()]
    return asyncio.run(sandbox.run(argv, workspace, timeout_s=timeout_s, network=network))


def survivors(marker: str) -> list[str]:
    """Command lines of processes on the machine that hold ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in command:
                found.append(command)
    return found


# ---------------------------------------------------------------- what runs everywhere: the command lines


def test_bwrap_command_line_isolates_and_keeps_the_interpreter(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    view = filesystem_view(workspace.resolve())
    args = bwrap_argv("bwrap", ["prog"], view, network=False, limits=SandboxLimits(file_mb=7), own_user=True,
                      features=frozenset({"--size", "--disable-userns"}))
    text = " ".join(args)
    for flag in ("--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind / /", "--proc /proc",
                 "--clearenv", "--cap-drop ALL", f"--bind {view.workspace} {view.workspace}"):
        assert flag in text
    assert f"--perms 1777 --size {7 * 1024 * 1024} --tmpfs /tmp" in text
    assert args[-2:] == ["--", "prog"] and "--unshare-user" not in args  # root: the entry switches user
    assert Path("/tmp") in view.hidden and all(Path("/usr") not in folder.parents for folder in view.hidden)
    shared = bwrap_argv("bwrap", ["prog"], view, network=True, limits=LIMITS, own_user=False,
                        features=frozenset({"--disable-userns"}))
    assert "--unshare-net" not in shared and "--unshare-user" in shared and "--disable-userns" in shared


def test_environment_inside_is_only_path_home_and_python_settings(tmp_path: Path) -> None:
    args = bwrap_argv("bwrap", ["prog"], filesystem_view(tmp_path), network=False, limits=LIMITS, own_user=False,
                      features=frozenset())
    names = [args[i + 1] for i, arg in enumerate(args) if arg == "--setenv"]
    assert sorted(names) == ["HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH"]


def test_container_command_line_has_every_limit_and_no_network() -> None:
    limits = SandboxLimits(cpu_seconds=5, memory_mb=256, processes=32, file_mb=8)
    args = container_argv("docker", "python:3-slim", "box", ["python3", "t.py"], Path("/w"), limits=limits,
                          network=False, uid=1234)
    text = " ".join(args)
    for flag in ("run --rm --init --name box --pull never", "--network none", "--read-only", "--cap-drop ALL",
                 "--security-opt no-new-privileges", "--user 1234:1234", "--memory 256m", "--pids-limit 32",
                 "--ulimit cpu=5:6", f"--ulimit fsize={8 * 1024 * 1024}", "--volume /w:/w:rw", "--workdir /w"):
        assert flag in text
    assert args[-3:] == ["python:3-slim", "python3", "t.py"]
    assert "--network bridge" in " ".join(container_argv("podman", "i", "b", ["x"], Path("/w"), limits=limits,
                                                         network=True, uid=1))


def test_without_any_backend_opening_one_fails_saying_how_to_fix_it(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no docker, no podman
    monkeypatch.setattr(choose, "_ENGINE_PROBE", [])
    monkeypatch.setattr(choose, "_LANDLOCK_PROBE", ["the kernel has no Landlock (test)"])
    with pytest.raises(SandboxError) as caught:
        asyncio.run(open_sandbox(SandboxSpec()))
    message = str(caught.value)
    assert "bubblewrap: bwrap is not installed" in message and "docker is not installed" in message
    assert "landlock: the kernel has no Landlock (test)" in message
    assert "apt-get install bubblewrap" in message and "--bench-sandbox none" in message
    assert "user namespaces" in message  # the kernel feature the landlock backend needs
    with pytest.raises(SandboxError, match="the bubblewrap sandbox the suite or --bench-sandbox asks for"):
        asyncio.run(open_sandbox(SandboxSpec(backend="bubblewrap")))
    assert isinstance(asyncio.run(open_sandbox(SandboxSpec(backend="none"))), UnconfinedSandbox)


def test_without_bubblewrap_auto_takes_landlock_where_the_kernel_has_it(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    confined("landlock")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap
    assert asyncio.run(open_sandbox(SandboxSpec())).name == "landlock"
    assert list(choose.BACKENDS) == ["bubblewrap", "landlock", "seatbelt", "container"]


def test_landlock_launcher_is_told_what_to_empty_and_where_to_write(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    view = filesystem_view(workspace.resolve(), network=False)
    options = Options([*launcher_options(view, SandboxLimits(file_mb=3), network=False), "--", "prog", "x"])
    empty = dict(options.empty)
    assert empty["/tmp"] == "1777" and empty["/dev/shm"] == "1777" and empty["/run"] == "0755"
    assert options.writable == [str(view.workspace), "/tmp", "/dev/shm"] and not options.network
    assert options.bound[-1] == str(view.workspace) and options.tmp_bytes == str(3 * 1024 * 1024)
    assert options.command == ["prog", "x"]
    with_network = Options([*launcher_options(filesystem_view(workspace.resolve()), LIMITS, network=True), "--"])
    assert with_network.network and "/run" not in dict(with_network.empty)  # DNS settings may live there


def test_seatbelt_profile_denies_by_default_and_never_allows_unix_sockets() -> None:
    """The profile, as text: it cannot be run on Linux (sandbox-exec is macOS's)."""
    closed = seatbelt_profile(hidden=2, kept=1, network=False)
    lines = closed.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert '(deny file-read* (subpath (param "HIDDEN_0")) (subpath (param "HIDDEN_1")))' in lines
    assert '(allow file-read* (subpath (param "KEPT_0")) (subpath (param "WORKSPACE")))' in lines
    assert lines.index("(allow file-read*)") < lines.index('(deny file-read* (subpath (param "HIDDEN_0")) '
                                                          '(subpath (param "HIDDEN_1")))')  # later rules win
    write = next(line for line in lines if line.startswith("(allow file-write*"))
    assert write.startswith('(allow file-write* (subpath (param "WORKSPACE")) (literal "/dev/null")')
    assert "(allow process-info* (target same-sandbox))" in lines and "(allow signal (target same-sandbox))" in lines
    assert "network-outbound" not in closed and "AF_INET" not in closed
    assert lines[-2:] == ["(deny network* (remote unix-socket) (local unix-socket))",
                          "(deny system-socket (socket-domain AF_UNIX))"]
    opened = seatbelt_profile(hidden=0, kept=0, network=True)
    assert "(allow network-outbound (remote ip))" in opened and "HIDDEN" not in opened
    assert opened.rstrip().endswith("(deny system-socket (socket-domain AF_UNIX))")  # after the network's rules


def test_seatbelt_command_line_passes_paths_as_parameters(tmp_path: Path) -> None:
    workspace = (tmp_path / "w s\"quoted").resolve()
    workspace.mkdir()
    args = seatbelt_argv(["prog", "x"], workspace, [], network=False)
    assert args[:2] == ["/usr/bin/sandbox-exec", "-p"] and args[-2:] == ["prog", "x"]
    params = [args[i + 1] for i, arg in enumerate(args) if arg == "-D"]
    assert f"WORKSPACE={workspace}" in params  # no quoting: the profile names the parameter, not the path
    assert str(workspace) not in args[2]
    assert any(param.startswith("HIDDEN_") and param.endswith(str(tmp_path.resolve())) for param in params)


def test_unix_socket_filter_refuses_af_unix_only_on_known_machines() -> None:
    code = deny_unix_sockets_filter("x86_64")
    assert code is not None and len(code) % 8 == 0
    assert deny_unix_sockets_filter("sparc64") is None
    assert deny_unix_sockets_filter("aarch64") is not None


# ---------------------------------------------------------------- every backend: the guarantees


def test_parent_environment_and_processes_are_invisible(linux_backend: str, workspace: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"sk-bench-marker-{uuid.uuid4().hex}"
    monkeypatch.setenv("BENCH_TEST_API_KEY", marker)
    result = run(confined(linux_backend), workspace, """
import os
print(sorted(os.environ))
print(sorted(p for p in os.listdir('/proc') if p.isdigit()))
for pid in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:
    try:
        print(open('/proc/%d/environ' % pid).read())
    except OSError as exc:
        print('refused', pid, exc.strerror)
""")
    assert marker not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONDONTWRITEBYTECODE', 'PYTHONPATH']"
    if linux_backend != "container":  # (the engine's init may start more)
        assert lines[1] == "['1', '2']"  # its own PID namespace: the namespace's init and the program
    assert str(os.getpid()) not in lines[1]


def test_only_the_workspace_is_writable(backend: str, workspace: Path, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    home = Path(os.path.expanduser("~"))
    targets = [f"/tmp/../bench-outside-{token}", str(Path(__file__).parent / f"escape-{token}"),
               str(home / f"escape-{token}"), f"/usr/escape-{token}", str(tmp_path / f"escape-{token}")]
    result = run(confined(backend), workspace, f"""
import os
for path in {targets!r}:
    try:
        open(path, 'w').write('x')
        print('WROTE', path)
    except OSError as exc:
        print('refused', exc.strerror)
open('inside.txt', 'w').write('ok')
open('/tmp/scratch-{token}', 'w').write('private tmp')
print(os.getuid())
""")
    assert "WROTE" not in result.stdout, result.stdout
    assert all(not Path(target).exists() for target in targets)
    assert not Path(f"/tmp/scratch-{token}").exists()  # its /tmp is its own
    assert (workspace / "inside.txt").read_text() == "ok"
    if os.geteuid() == 0:  # pytest runs as root: the program does not
        assert int(result.stdout.splitlines()[-1]) >= FIRST_UID


def test_setsid_child_dies_at_the_timeout(linux_backend: str, workspace: Path) -> None:
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"
    started = time.monotonic()
    result = run(confined(linux_backend), workspace, f"""
import subprocess, time
subprocess.Popen(['setsid', 'sleep', '{marker}'])
print('detached', flush=True)
time.sleep(100)
""", timeout_s=2)
    assert result.timed_out and "detached" in result.stdout
    assert time.monotonic() - started < 10
    time.sleep(0.2)
    assert survivors(f"sleep {marker}") == []


def test_detached_child_of_a_finished_program_dies_with_it(linux_backend: str, workspace: Path) -> None:
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"
    result = run(confined(linux_backend), workspace, f"""
import subprocess
subprocess.Popen(['setsid', 'sleep', '{marker}'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
""", timeout_s=10)
    assert result.exit_code == 0 and result.duration_s < 5
    time.sleep(0.2)
    assert survivors(f"sleep {marker}") == []


@pytest.mark.parametrize("backend", ["bubblewrap", "landlock"])  # (a container outlives its client: the engine's)
def test_nothing_outlives_a_killed_pytest(backend: str, tmp_path: Path) -> None:
    """A pytest killed (SIGKILL, no clean-up) while a program and its detached child run: both die with it."""
    confined(backend)
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = tmp_path / "victim.py"
    script.write_text(f"""
import asyncio
from pathlib import Path
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.suite.agent.spec import SandboxSpec

async def main():
    sandbox = await open_sandbox(SandboxSpec(backend={backend!r}))
    code = "import subprocess, time; subprocess.Popen(['setsid', 'sleep', '{marker}']); time.sleep(300)"
    await sandbox.run(['python3', '-c', code], Path({str(workspace)!r}), timeout_s=300)

asyncio.run(main())
""")
    victim = subprocess.Popen([sys.executable, str(script)], cwd=Path(__file__).resolve().parents[1])
    try:
        deadline = time.monotonic() + 30
        while not survivors(f"sleep {marker}") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert survivors(f"sleep {marker}"), "the sandboxed child never started"
    finally:
        victim.kill()
        victim.wait()
    deadline = time.monotonic() + 5
    while survivors(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert survivors(f"sleep {marker}") == []


def test_output_flood_is_cut_and_memory_stays_bounded(backend: str, workspace: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(confined(backend, SandboxLimits(output_kb=64)), workspace,
                 "import sys\nwhile True: sys.stdout.write('x' * 1_000_000)")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.note == "output cut at 64 KB: the program wrote more and was stopped"
    assert not result.timed_out and result.duration_s < 10 and grown_mb < 50


def test_file_size_limit_is_a_clear_error(backend: str, workspace: Path) -> None:
    sandbox = confined(backend, SandboxLimits(file_mb=2))
    python = run(sandbox, workspace, "open('big', 'wb').write(b'x' * 3_000_000)")
    assert python.exit_code == 1 and "File too large" in python.stderr
    dd = run(sandbox, workspace, "if=/dev/zero of=big2 bs=1M count=5", program="dd")
    assert dd.note == "ended by SIGXFSZ: it wrote a file past the 2 MB limit"
    assert (workspace / "big2").stat().st_size <= 2 * 1024 * 1024
    assert run(sandbox, workspace, "print('still fine')").stdout == "still fine\n"


def test_cpu_memory_and_process_limits(backend: str, workspace: Path) -> None:
    sandbox = confined(backend, SandboxLimits(cpu_seconds=1, memory_mb=256, processes=8))
    spin = run(sandbox, workspace, "while True: pass", timeout_s=30)
    assert spin.note == "ended by SIGXCPU: it used up its 1 s of CPU time" and spin.duration_s < 10
    memory = run(sandbox, workspace, "x = bytearray(512 * 1024 * 1024)")
    assert memory.exit_code == 1 and "MemoryError" in memory.stderr
    forks = run(sandbox, workspace, """
import subprocess
started = []
try:
    for _ in range(50):
        started.append(subprocess.Popen(['sleep', '5']))
except OSError as exc:
    print('stopped after', len(started), exc.strerror)
""")
    if backend != "seatbelt":  # (no user namespace on macOS: the limit would count the caller's own processes)
        assert forks.stdout.startswith("stopped after") and int(forks.stdout.split()[2]) < 8


def test_a_two_gigabyte_file_stops_at_the_file_limit(backend: str, workspace: Path) -> None:
    sandbox = confined(backend, SandboxLimits(file_mb=16))
    for target in ("big", "/tmp/big"):
        result = run(sandbox, workspace, f"if=/dev/zero of={target} bs=1M count=2048", program="dd")
        assert result.note == "ended by SIGXFSZ: it wrote a file past the 16 MB limit", (target, result)
    assert (workspace / "big").stat().st_size <= 16 * 1024 * 1024


def test_a_fork_flood_stops_at_the_process_limit(linux_backend: str, workspace: Path) -> None:
    result = run(confined(linux_backend, SandboxLimits(processes=16)), workspace, """
import os, time
made = 0
try:
    while made < 500:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        made += 1
except OSError as exc:
    print('stopped after', made)
""", timeout_s=30)
    assert result.stdout.startswith("stopped after") and int(result.stdout.split()[2]) < 16, result


@pytest.fixture
def host_socket() -> Iterator[Path]:
    """A 0777 Unix socket file, listening, in a 0755 folder a sandbox can read (not under /tmp or home)."""
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(__file__).resolve().parent
    folder = Path(tempfile.mkdtemp(prefix="bench-probe-", dir=base))
    folder.chmod(0o755)
    path = folder / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        server.listen()
        path.chmod(0o777)
        yield path
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_no_unix_socket_of_the_host_can_be_reached(backend: str, workspace: Path, host_socket: Path) -> None:
    """The held-out probe: a socket file the program can see, with or without network, cannot be connected to."""
    sandbox = confined(backend)
    code = f"""
import os, socket
print('visible' if os.path.exists({str(host_socket)!r}) else 'hidden')
try:
    socket.socket(socket.AF_UNIX).connect({str(host_socket)!r})
    print('CONNECTED')
except OSError as exc:
    print('refused', exc.strerror)
"""
    for network in (False, True):
        result = run(sandbox, workspace, code, network=network)
        assert "CONNECTED" not in result.stdout and "refused" in result.stdout, (network, result)
    control = run(UnconfinedSandbox(LIMITS), workspace, code)
    assert "CONNECTED" in control.stdout  # the probe works: without a sandbox it connects
    pair = run(sandbox, workspace, "import socket\na, b = socket.socketpair()\na.send(b'ok')\nprint(b.recv(2))")
    assert pair.stdout == "b'ok'\n"  # a pair of the program's own still works (asyncio, multiprocessing pipes)


def test_no_network_unless_allowed(backend: str, workspace: Path) -> None:
    sandbox = confined(backend)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        code = f"""
import socket
try:
    socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), timeout=3).close()
    print('connected')
except OSError as exc:
    print('refused', exc)
"""
        assert run(sandbox, workspace, code).stdout.startswith("refused")
        assert run(sandbox, workspace, code, network=True).stdout == "connected\n"


def test_no_capability_and_no_way_to_gain_one(linux_backend: str, workspace: Path) -> None:
    result = run(confined(linux_backend), workspace, """
import os
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
print(status['CapEff'].strip(), status['NoNewPrivs'].strip(), os.geteuid())
""")
    effective, no_new_privileges, euid = result.stdout.split()
    assert int(effective, 16) == 0 and no_new_privileges == "1"
    assert os.geteuid() != 0 or int(euid) >= FIRST_UID


def test_links_made_inside_are_not_followed_by_the_tools(backend: str, workspace: Path) -> None:
    result = run(confined(backend), workspace, """
import os
os.symlink('/etc/passwd', 'leak.txt')
os.symlink('/etc', 'etc')
os.mkfifo('pipe')
""")
    assert result.exit_code == 0
    assert [entry["path"] for entry in snapshot(workspace)] == ["a.txt"]
    assert list_files(workspace, {}) == "a.txt"
    assert "root:" not in search(workspace, {"pattern": "root"})
    with pytest.raises(ToolFailure, match="outside the workspace"):
        read_file(workspace, {"path": "leak.txt"})
    with pytest.raises(ToolFailure, match="not a regular file"):
        read_file(workspace, {"path": "pipe"})


def test_missing_program_says_so(backend: str, workspace: Path) -> None:
    with pytest.raises(ToolFailure, match="cannot run 'no-such-program-here': No such file or directory"):
        run(confined(backend), workspace, "", program="no-such-program-here")


def readable_by(uid: int, paths: list[Path]) -> str | None:
    """None when user ``uid`` can read every path (a file, or a folder it can list), else the first it cannot."""
    code = "import os, sys\nfor p in sys.argv[1:]:\n    os.listdir(p) if os.path.isdir(p) else open(p).close()"
    try:
        subprocess.run(["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", sys.executable,
                        "-I", "-S", "-c", code, *map(str, paths)], capture_output=True, timeout=30, check=True)
    except subprocess.CalledProcessError as exc:
        return exc.stderr.decode(errors="replace").strip().splitlines()[-1] if exc.stderr else "cannot run Python"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bubblewrap", "landlock"])
def test_as_an_ordinary_user_in_a_user_namespace(backend: str) -> None:
    """Run by someone other than root, programs keep that user in their own user namespace."""
    system_python = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not system_python.exists():
        pytest.skip("needs root (to become another user), setpriv and a system Python of this version")
    confined(backend)
    site = next(path for path in sys.path if path.endswith("site-packages"))
    repo = Path(__file__).resolve().parents[1]
    refused = readable_by(65534, [repo / "bench_plugin" / "__init__.py", Path(site), system_python])
    if refused is not None:
        pytest.skip(f"user 65534 cannot read the checkout or its packages ({refused}): make them readable to run this")
    folder = Path(tempfile.mkdtemp(prefix="bench-sandbox-user-"))  # tmp_path's parents admit root only
    folder.chmod(0o777)
    script = folder / "probe.py"
    script.write_text("""
import asyncio, os, subprocess
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.engines.agent.workspace import create_workspace, remove_workspace
from bench_plugin.suite.agent.spec import SandboxLimits, SandboxSpec, WorkspaceSpec

async def main():
    sandbox = await open_sandbox(SandboxSpec(backend=BACKEND, limits=SandboxLimits(processes=8)))
    root = create_workspace(WorkspaceSpec())
    code = ("import os, subprocess\\nprint(os.getuid(), sorted(p for p in os.listdir('/proc') if p.isdigit()))\\n"
            "n = 0\\ntry:\\n    for _ in range(50): subprocess.Popen(['sleep', '3']); n += 1\\n"
            "except OSError: print('stopped after', n)")
    result = await sandbox.run(['python3', '-c', code], root, timeout_s=20)
    print(type(sandbox).__name__, result.stdout, result.stderr)
    remove_workspace(root)

asyncio.run(main())
""".replace("BACKEND", repr(backend)))
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(folder), "PYTHONPATH": f"{repo}:{site}"}
    try:
        done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                               str(system_python), str(script)], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines = done.stdout.splitlines()
    if done.returncode != 0 and backend in done.stderr:
        pytest.skip(f"unprivileged user namespaces are not available here: {done.stderr.splitlines()[-1]}")
    assert lines, done.stderr
    assert lines[0] == f"{type(confined(backend)).__name__} 65534 ['1', '2']", done.stdout + done.stderr
    assert lines[1].startswith("stopped after") and int(lines[1].split()[2]) < 8


# ---------------------------------------------------------------- none: what it still does, what it cannot


def test_none_keeps_the_limits_but_not_the_isolation(workspace: Path) -> None:
    sandbox = UnconfinedSandbox(SandboxLimits(file_mb=1, output_kb=16))
    assert sandbox.name == "none" and not sandbox.isolated
    big = run(sandbox, workspace, "open('big', 'wb').write(b'x' * 2_000_000)")
    assert "File too large" in big.stderr
    flood = run(sandbox, workspace, "import sys\nwhile True: sys.stdout.write('x' * 100_000)")
    assert flood.note is not None and flood.note.startswith("output cut at 16 KB")
    visible = run(sandbox, workspace, f"import os; print(os.path.exists('/proc/{os.getpid()}'))")
    assert visible.stdout == "True\n"  # the caller's processes are in plain view: this is no sandbox


# ---------------------------------------------------------------- container


def container_sandbox(limits: SandboxLimits = LIMITS) -> ContainerSandbox:
    engine, reason = find_engine()
    if engine is None:
        pytest.skip(f"no container engine answers here: {reason}")
    found, reason = asyncio.run(choose.container(SandboxSpec(backend="container", limits=limits)))
    if found is None:
        pytest.skip(reason)
    return found


@pytest.mark.slow
def test_container_isolates_limits_and_kills_at_the_timeout(workspace: Path) -> None:
    sandbox = container_sandbox(SandboxLimits(file_mb=2))
    token = uuid.uuid4().hex
    result = run(sandbox, workspace, f"""
import os
print(sorted(p for p in os.listdir('/proc') if p.isdigit())[:3])
for path in ['/usr/escape-{token}', '/etc/escape-{token}']:
    try:
        open(path, 'w')
        print('WROTE', path)
    except OSError:
        pass
open('inside.txt', 'w').write('ok')
""")
    assert "WROTE" not in result.stdout and (workspace / "inside.txt").read_text() == "ok"
    big = run(sandbox, workspace, "open('big', 'wb').write(b'x' * 3_000_000)")
    assert "File too large" in big.stderr
    started = time.monotonic()
    slow = run(sandbox, workspace, "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(100)",
               timeout_s=3)
    assert slow.timed_out and time.monotonic() - started < 20
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen()
        blocked = run(sandbox, workspace, "import socket\ntry:\n    socket.create_connection(('172.17.0.1', "
                      f"{server.getsockname()[1]}), timeout=3)\n    print('connected')\nexcept OSError: print('no')")
        assert blocked.stdout == "no\n"
