"""Deep-frozen mappings and lists, so that specs are immutable and hashable all the way down.

``FrozenDict`` and ``FrozenList`` subclass ``dict`` and ``list`` (and refuse every change) rather than
being a ``Mapping`` and a ``tuple``: the values they hold reach suite templates, JSON records and
scorer options, where ``{{ x }}`` must still print ``['a', 'b']``, ``json.dumps`` must write the same
bytes, and ``isinstance(value, list)`` checks of scorer options must still hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, SupportsIndex, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is frozen: build a new value instead of changing this one")


class FrozenDict(dict[K, V]):
    """A ``dict`` that cannot change and can be hashed; its values are frozen too.

    Equal to a plain ``dict`` with the same items, printed and serialised like one. ``dict(value)``
    or ``{**value}`` gives a mutable copy.

    Example:
        >>> options = FrozenDict({"value": ["a", "b"]})
        >>> options, hash(options) == hash(FrozenDict({"value": ["a", "b"]}))
        ({'value': ['a', 'b']}, True)
    """

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = (), /, **kwargs: V) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        super().__init__(((key, freeze(value)) for key, value in pairs), **{k: freeze(v) for k, v in kwargs.items()})

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy and pickle rebuild through __init__ (the default would call __setitem__)
        return (type(self), (dict(self),))

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse


class FrozenList(list[T]):
    """A ``list`` that cannot change and can be hashed; its items are frozen too.

    Equal to a plain ``list`` with the same items, printed and serialised like one.
    """

    def __init__(self, items: Iterable[T] = (), /) -> None:
        super().__init__(freeze(item) for item in items)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> NoReturn:
        _refuse(self)

    def __delitem__(self, index: SupportsIndex | slice) -> NoReturn:
        _refuse(self)

    def __iadd__(self, other: Iterable[T]) -> NoReturn:  # type: ignore[override,misc]
        _refuse(self)

    def __imul__(self, count: SupportsIndex) -> NoReturn:
        _refuse(self)

    append = _refuse
    extend = _refuse
    insert = _refuse
    remove = _refuse
    pop = _refuse
    clear = _refuse
    sort = _refuse
    reverse = _refuse


def freeze(value: Any) -> Any:
    """``value`` with every mapping made a FrozenDict and every list a FrozenList, recursively.

    Tuples keep their type with their items frozen, sets become frozensets; anything else (text,
    numbers, frozen dataclasses) is returned as it is. Frozen values are returned unchanged, so
    freezing again costs nothing.
    """
    if isinstance(value, (FrozenDict, FrozenList, str, int, float, type(None))):
        return value
    if isinstance(value, Mapping):
        return FrozenDict(value)
    if isinstance(value, list):
        return FrozenList(value)
    if type(value) is tuple:
        return tuple(freeze(item) for item in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A plain-builtins copy of ``value``: FrozenDicts become dicts and FrozenLists lists, recursively.

    What crosses a process boundary (xdist sends only exact builtins) goes through this.
    """
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    if type(value) is tuple:
        return tuple(thaw(item) for item in value)
    return value


def freeze_fields(spec: object, *names: str) -> None:
    """Freeze the named fields of a frozen dataclass, from its ``__post_init__``.

    Callers may pass plain dicts and lists; the spec keeps frozen copies, so it is hashable.
    """
    for name in names:
        object.__setattr__(spec, name, freeze(getattr(spec, name)))


def type_name(value: Any) -> str:
    """The name of ``value``'s type as the person who wrote it knows it: a FrozenDict is a dict.

    For messages such as ``expected a string, got list``.
    """
    if isinstance(value, FrozenDict):
        return "dict"
    if isinstance(value, FrozenList):
        return "list"
    return type(value).__name__
