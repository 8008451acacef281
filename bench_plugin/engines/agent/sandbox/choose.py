"""Picking the sandbox of a case: the strongest backend that works here, or the one the suite or user named.

``auto`` tries, in this order: bubblewrap (``bwrap``) when it runs a program here; Linux namespaces with
Landlock (``landlock``: no program to install, no root) when the kernel offers both; macOS Seatbelt
(``seatbelt``, ``sandbox-exec``) on a Mac; a container engine that answers and holds the image. A
backend named explicitly must work. When none does, the cases that need one are skipped with what was
tried and how to fix it: commands never run without isolation unless ``none`` was asked for.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench_plugin.core.errors import SandboxError, ToolFailure
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.bubblewrap import BubblewrapSandbox, bwrap_features
from bench_plugin.engines.agent.sandbox.container import ContainerSandbox, find_engine, has_image
from bench_plugin.engines.agent.sandbox.landlock import LandlockSandbox, landlock_abi
from bench_plugin.engines.agent.sandbox.launch import CommandResult
from bench_plugin.engines.agent.sandbox.seatbelt import SeatbeltSandbox
from bench_plugin.engines.agent.sandbox.unconfined import UnconfinedSandbox
from bench_plugin.suite.agent.spec import SandboxLimits, SandboxSpec

INSTALL_HINT = ("install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap), "
                "or let users make user namespaces on a kernel with Landlock (Linux 5.13+; "
                "sysctl kernel.unprivileged_userns_clone=1 kernel.apparmor_restrict_unprivileged_userns=0), "
                "or run a container engine with the image present (sandbox: {backend: container, image: ...}); "
                "to run agent commands without any isolation, ask for it: --bench-sandbox none")

# per process: bwrap executable -> its options and None when it runs a program, else why it does not
_BWRAP_PROBES: dict[str, tuple[frozenset[str], str | None]] = {}
_ENGINE_PROBE: list[tuple[str | None, str]] = []
_LANDLOCK_PROBE: list[str | None] = []  # None when it runs a program here, else why not
_SEATBELT_PROBE: list[str | None] = []


async def open_sandbox(spec: SandboxSpec) -> Sandbox:
    """The sandbox for a case's programs: the first of ``BACKENDS`` that ``spec`` allows and that works here.

    Raises:
        SandboxError: no backend that ``spec`` allows works here; the message says what was tried and the fix.
    """
    if spec.backend == "none":
        return UnconfinedSandbox(spec.limits)
    reasons: list[str] = []
    for name, opener in BACKENDS.items():
        if spec.backend not in ("auto", name):
            continue
        sandbox, reason = await opener(spec)
        if sandbox is not None:
            return sandbox
        if reason:  # a backend of another system (Seatbelt on Linux) says nothing under auto
            reasons.append(f"{name}: {reason}")
    raise SandboxError(f"{_wanted(spec)}, and it does not work here: {'; '.join(reasons)}", hint=INSTALL_HINT)


def _wanted(spec: SandboxSpec) -> str:
    if spec.backend == "auto":
        return "agent commands run in a sandbox"
    return f"agent commands run in the {spec.backend} sandbox the suite or --bench-sandbox asks for"


async def bubblewrap(limits: SandboxLimits) -> tuple[BubblewrapSandbox | None, str]:
    """A bubblewrap sandbox when ``bwrap`` runs a program here (tried once per process), else None and why."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bwrap is not installed"
    if bwrap not in _BWRAP_PROBES:
        features = await asyncio.to_thread(bwrap_features, bwrap)
        _BWRAP_PROBES[bwrap] = features, await _try(BubblewrapSandbox(SandboxLimits(), bwrap, features))
    features, reason = _BWRAP_PROBES[bwrap]
    if reason is not None:
        return None, reason
    return BubblewrapSandbox(limits, bwrap, features), ""


async def _bubblewrap(spec: SandboxSpec) -> tuple[Sandbox | None, str]:
    return await bubblewrap(spec.limits)


async def landlock(spec: SandboxSpec) -> tuple[Sandbox | None, str]:
    """Namespaces with Landlock when the kernel offers both and a program runs (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return None, _elsewhere(spec, "Linux only")
    if not _LANDLOCK_PROBE:
        _LANDLOCK_PROBE.append(await _try(LandlockSandbox(SandboxLimits())) if landlock_abi() else
                               "the kernel has no Landlock, or it is off (Linux 5.13+, lsm=landlock)")
    return _opened(_LANDLOCK_PROBE[0], LandlockSandbox(spec.limits))


async def seatbelt(spec: SandboxSpec) -> tuple[Sandbox | None, str]:
    """Seatbelt (macOS) when ``sandbox-exec`` runs a program here (tried once per process)."""
    if sys.platform != "darwin":
        return None, _elsewhere(spec, "macOS only")
    if not _SEATBELT_PROBE:
        found = shutil.which("sandbox-exec", path="/usr/bin")
        _SEATBELT_PROBE.append(await _try(SeatbeltSandbox(SandboxLimits())) if found else "sandbox-exec is missing")
    return _opened(_SEATBELT_PROBE[0], SeatbeltSandbox(spec.limits))


def _elsewhere(spec: SandboxSpec, only: str) -> str:
    """Why a backend of another system is not used: nothing under ``auto`` (it is not missing), else ``only``."""
    return "" if spec.backend == "auto" else only


def _opened(reason: str | None, sandbox: Sandbox) -> tuple[Sandbox | None, str]:
    """``sandbox`` when its probe found no reason against it, else None and the reason."""
    return (None, reason) if reason is not None else (sandbox, "")


async def container(spec: SandboxSpec) -> tuple[ContainerSandbox | None, str]:
    """A container sandbox when an engine answers (asked once per process) and has the image, else None and why."""
    if not _ENGINE_PROBE:
        _ENGINE_PROBE.append(await asyncio.to_thread(find_engine))
    engine, reason = _ENGINE_PROBE[0]
    if engine is None:
        return None, reason
    if not await asyncio.to_thread(has_image, engine, spec.image):
        return None, (f"the image {spec.image!r} is not present for {Path(engine).name} (images are never pulled: "
                      f"{Path(engine).name} pull {spec.image})")
    return ContainerSandbox(spec.limits, engine, spec.image), ""


async def _try(sandbox: Sandbox) -> str | None:
    """None when ``sandbox`` runs the interpreter and it writes in its workspace, else the error it gave."""
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-probe-") as folder:
        workspace = Path(folder).resolve()
        try:
            result = await sandbox.run(["python3", "-c", "open('probe', 'w').write('ok'); print('ok')"],
                                       workspace, timeout_s=30)
        except ToolFailure as exc:
            return str(exc)
    if result.exit_code == 0 and result.stdout.strip() == "ok":
        return None
    return f"{_PROGRAMS.get(sandbox.name, sandbox.name)} fails here: {_last_line(result)[:300]}"


def _last_line(result: CommandResult) -> str:
    """The last line the probe wrote (to stderr, else stdout), or its exit code when it wrote none."""
    return (result.stderr.strip() or result.stdout.strip() or f"exit code {result.exit_code}").splitlines()[-1]


_PROGRAMS = {"bubblewrap": "bwrap", "seatbelt": "sandbox-exec"}
BACKENDS: dict[str, Callable[[SandboxSpec], Awaitable[tuple[Sandbox | None, str]]]] = {
    "bubblewrap": _bubblewrap, "landlock": landlock, "seatbelt": seatbelt, "container": container,
}
"""The backends ``auto`` tries, in this order."""
