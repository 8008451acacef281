"""Named implementations of one kind (provider types, engines, scorer types), open to other packages.

A registry knows three sources, in this order of precedence: what a project registers from its
``conftest.py`` (through the ``pytest_bench_*`` hooks of ``hookspecs.py``), the built-ins, and
what installed packages declare in an entry point group. Built-ins and entry points are named as
``"module:attribute"`` and imported only when a suite names them, so a broken third-party package
cannot slow down or break suites that do not use it (and a plain suite's run imports none of the others).

What a registry hands out comes from the module ``import`` gives now: an implementation whose module
has left ``sys.modules`` since (pytester restores ``sys.modules`` after every in-process run) is loaded
again, so that it is the same class as the one a late import of its module finds.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Generic, TypeVar

from bench_plugin.core.errors import UnknownName
from bench_plugin.core.hints import choices_hint

T = TypeVar("T")


@cache
def _group(group: str) -> Mapping[str, EntryPoint]:
    # metadata is scanned once per process: it is the slow part of entry points
    return {point.name: point for point in entry_points(group=group)}


def _import(reference: str) -> object:
    module, _, attribute = reference.partition(":")
    target: object = importlib.import_module(module)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def _module_of(reference: str) -> ModuleType | None:
    return sys.modules.get(reference.partition(":")[0])


def require_callable(value: object, shape: str) -> object:
    """``value`` itself, checked to be callable (the adapt step of registries of functions and classes).

    Raises:
        TypeError: ``"<shape>, got <type>"`` when it is not.
    """
    if not callable(value):
        raise TypeError(f"{shape}, got {type(value).__name__}")
    return value


class Registry(Generic[T]):
    """Implementations by name, built-ins first.

    Args:
        kind: what the names are, for messages (``"scorer type"``).
        group: the entry point group other packages fill (``"bench_plugin.scorers"``).
        builtins: name -> ``"module:attribute"``, imported when first asked for.
        adapt: turns what was imported into a ``T`` (instantiates a class, checks methods), or
            raises TypeError saying what is wrong with it.
        label: how messages introduce the list of valid names.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        builtins: Mapping[str, str],
        adapt: Callable[[object], T],
        *,
        registered: Mapping[str, T] | None = None,
        label: str = "choose from",
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins = dict(builtins)
        self._adapt = adapt
        self._registered: dict[str, T] = dict(registered or {})
        self._loaded: dict[str, tuple[T, ModuleType | None]] = {}  # name -> implementation, the module it came from
        self._label = label

    def with_registered(self, extra: Mapping[str, object]) -> Registry[T]:
        """A copy that also knows ``extra`` (a project's own, from its conftest.py); they win on a clash.

        Raises:
            TypeError: an entry of ``extra`` is not a usable ``T``.
        """
        adapted = {name: self._adapt(value) for name, value in extra.items()}
        copy = Registry(self.kind, self.group, self._builtins, self._adapt,
                        registered={**self._registered, **adapted}, label=self._label)
        copy._loaded = self._loaded  # built-ins and entry points load once per process
        return copy

    def names(self) -> list[str]:
        """Every name: built-ins in their documented order, then the others sorted."""
        extra = {*self._registered, *_group(self.group)} - set(self._builtins)
        return [*self._builtins, *sorted(extra)]

    def builtin(self, name: str) -> bool:
        """Whether ``name`` is this package's own implementation: not a project's (``conftest.py``) nor a package's."""
        return name in self._builtins and name not in self._registered

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (
            name in self._registered or name in self._builtins or name in _group(self.group)
        )

    def get(self, name: str) -> T:
        """The implementation named ``name``.

        Raises:
            UnknownName: no source knows the name (the message lists the choices), or an entry
                point failed to import or is not a usable implementation.
        """
        if name in self._registered:
            return self._registered[name]
        loaded = self._loaded.get(name)
        if loaded is None or (loaded[1] is not None and sys.modules.get(loaded[1].__name__) is not loaded[1]):
            loaded = self._loaded[name] = self._load(name)
        return loaded[0]

    def _load(self, name: str) -> tuple[T, ModuleType | None]:
        if name in self._builtins:
            reference = self._builtins[name]
            return self._adapt(_import(reference)), _module_of(reference)
        point = _group(self.group).get(name)
        if point is None:
            raise UnknownName(f"unknown {self.kind} {name!r}; {choices_hint(name, self.names(), label=self._label)}")
        try:
            return self._adapt(point.load()), _module_of(point.value)
        except Exception as exc:  # a third-party import can fail in any way; report it as a bad name
            raise UnknownName(f"{self.kind} {name!r} ({point.value}) failed to load: {exc!r}") from exc
