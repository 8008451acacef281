"""Where a ``python`` scorer's function comes from: a file or module in the suite's folder, imported once.

``function: checks.py:is_polite`` names a file (relative to the suite's folder); ``function:
checks:is_polite`` or ``helpers.text:is_polite`` names a module found in the suite's folder (then in
the folders ``--bench-allow-path`` allows). Only code there can be named: a suite is data and may
come from anyone, so YAML alone must not reach ``os:system``; code from elsewhere (an installed
package) is registered in Python instead (``pytest_bench_scorer_types`` in ``conftest.py``). The
file runs with your privileges when it is imported, at collection, like a ``conftest.py``.

A file is imported under a name of its own (``bench_scorer_<hash>_<stem>``), so two suites' ``checks.py``
never clash; a module is imported by its name with its folder first on ``sys.path`` (so it may import
its neighbours), and must not clash with a module of that name imported from elsewhere.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import keyword
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_plugin.core.errors import CaseError
from bench_plugin.core.hints import did_you_mean
from bench_plugin.suite.paths import SuiteFolders, SuiteTemplateLoader
from bench_plugin.suite.spec import CaseSpec

ScorerFunction = Callable[..., Any]
FUNCTION_SHAPE = "a function def NAME(output, context) (or def NAME(output)), maybe async"


@dataclass(frozen=True)
class FunctionRef:
    """``module:attribute`` as a suite wrote it, checked for shape (nothing is imported yet).

    ``file`` is True for the ``path/to/file.py:name`` form.
    """

    text: str
    module: str
    attribute: str
    file: bool

    @classmethod
    def parse(cls, text: Any) -> FunctionRef:
        """Check the shape of a ``function:`` option.

        Raises:
            ValueError: not ``module:function`` or ``file.py:function``.
        """
        if not isinstance(text, str):
            raise ValueError(f"function must be text such as 'checks.py:is_polite', got {text!r}")
        module, _, attribute = text.rpartition(":")
        is_file = module.endswith(".py")
        if not (_is_attribute_path(attribute) and (is_file or _is_module_name(module))):
            raise ValueError(f"function must be 'module:function' or 'file.py:function' (e.g. 'checks.py:is_polite'), "
                             f"got {text!r}")
        return cls(text, module, attribute, is_file)


def _is_attribute_path(text: str) -> bool:
    """``name`` or ``Class.name``: identifiers that are not keywords."""
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in text.split("."))


def _is_module_name(text: str) -> bool:
    """``checks`` or ``helpers.text`` (an empty name is none)."""
    return all(part.isidentifier() for part in text.split("."))


# (folders, reference) -> the function, or the message and hint of why it could not be had; a suite's
# 500 cases share one scorer, and a broken file is reported for each case without importing it again
_LOADED: dict[tuple[SuiteFolders, str], ScorerFunction | tuple[str, str | None]] = {}


def suite_folders(case: CaseSpec) -> SuiteFolders:
    """The folders the case's suite may read (its own and those the user allows)."""
    loader = case.templates.env.loader if case.templates is not None else None
    if isinstance(loader, SuiteTemplateLoader):
        return loader.folders
    return SuiteFolders.of(case.suite_dir or Path.cwd())


def load_function(ref: FunctionRef, case: CaseSpec, *, key: str, line: int | None) -> ScorerFunction:
    """The function ``ref`` names, for the suite of ``case``, imported once per suite folder.

    Raises:
        CaseError: at ``key``: a file outside the suite's folder, no such file or module, an import
            that fails (the error and where it was raised), no such function, not a function.
    """
    folders = suite_folders(case)
    found = _LOADED.get((folders, ref.text))
    if found is None:
        try:
            found = _import_function(ref, folders)
        except _NotLoaded as exc:
            found = (exc.message, exc.hint)
        _LOADED[(folders, ref.text)] = found
    if isinstance(found, tuple):
        message, hint = found
        raise CaseError(message, path=case.path, line=line, key=key, hint=hint)
    return found


class _NotLoaded(Exception):
    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


_REGISTER_HINT = ("code outside the suite's folder is registered in Python: return it from "
                  "pytest_bench_scorer_types() in a conftest.py (see the guide, 'python')")


def _import_function(ref: FunctionRef, folders: SuiteFolders) -> ScorerFunction:
    module = _import_file(ref, folders) if ref.file else _import_module(ref, folders)
    target: Any = module
    for part in ref.attribute.split("."):
        target = _attribute(target, part, ref.module)
    try:
        check_signature(target, ref.text)
    except ValueError as exc:
        raise _NotLoaded(str(exc)) from exc
    return target  # type: ignore[no-any-return]


def _attribute(owner: Any, name: str, module: str) -> Any:
    """``owner.name``; raises ``_NotLoaded`` with a did-you-mean when it has no such name."""
    if hasattr(owner, name):
        return getattr(owner, name)
    names = [found for found in vars(owner) if not found.startswith("_")] if hasattr(owner, "__dict__") else []
    guess = did_you_mean(name, names)
    raise _NotLoaded(f"{module} has no {name!r}" + (f"; {guess}" if guess else ""))


def check_signature(function: object, name: str) -> int:
    """How many arguments to pass ``function``: 2 (output, context) when it takes them, else 1 (output).

    Raises:
        ValueError: not callable (or a class), or takes neither form.
    """
    if not callable(function) or isinstance(function, type):
        raise ValueError(f"{name} is a {type(function).__name__}, not {FUNCTION_SHAPE}")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: assume the usual form
        return 2
    for count in (2, 1):
        if _takes(signature, count):
            return count
    raise ValueError(f"{name}({', '.join(signature.parameters)}) cannot be called as (output, context) or (output): "
                     f"expected {FUNCTION_SHAPE}")


def _takes(signature: inspect.Signature, count: int) -> bool:
    """Whether a function of this signature can be called with ``count`` positional arguments."""
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def _import_file(ref: FunctionRef, folders: SuiteFolders) -> ModuleType:
    file = _confined(folders, ref.module, "python scorer file")
    if not file.is_file():
        raise _NotLoaded(f"python scorer file {ref.module} does not exist in the suite's folder ({folders.root})")
    name = _module_name(file)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise _NotLoaded(f"python scorer file {ref.module} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _first_on_path(file.parent):
            spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[name]
        raise _import_failed(ref.module, exc) from exc
    return module


def _module_name(file: Path) -> str:
    """The name a scorer file is imported under: its own, so that two suites' ``checks.py`` never clash."""
    digest = hashlib.sha1(str(file).encode(), usedforsecurity=False).hexdigest()[:10]
    return f"bench_scorer_{digest}_{file.stem}"


def _confined(folders: SuiteFolders, path: str | Path, what: str) -> Path:
    """``path`` resolved inside the suite's folders; raises ``_NotLoaded`` when it is outside."""
    try:
        return folders.confine(path, what=what)
    except CaseError as exc:
        raise _NotLoaded(exc.message, exc.hint) from exc


def _import_module(ref: FunctionRef, folders: SuiteFolders) -> ModuleType:
    parts = ref.module.split(".")
    bases = [folders.root, *(folder for folder in folders.allowed if folder.is_dir())]
    for base in bases:
        found = _module_file(base, parts)
        if found is not None:
            return _import_by_name(ref.module, base, _confined(folders, found, f"module {ref.module}"))
    where = f"the suite's folder ({folders.root})" + (" or the folders allowed by --bench-allow-path"
                                                       if folders.allowed else "")
    raise _NotLoaded(f"no module {ref.module} in {where}: a python scorer's module must sit there", _REGISTER_HINT)


def _module_file(base: Path, parts: list[str]) -> Path | None:
    """The module's file under ``base`` (``a/b.py``, else the package ``a/b/__init__.py``), or None."""
    candidates = (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py"))
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def _import_by_name(name: str, base: Path, expected: Path) -> ModuleType:
    already = sys.modules.get(name)
    if already is None:
        try:
            with _first_on_path(base):
                already = importlib.import_module(name)
        except BaseException as exc:
            sys.modules.pop(name, None)
            raise _import_failed(name, exc) from exc
    origin = getattr(already, "__file__", None)
    if origin is None or Path(origin).resolve() != expected:
        raise _NotLoaded(
            f"module {name} is already imported from {origin or 'a built-in'}, not from {expected}",
            f"rename {expected.name}, or name the file instead: function: '{expected.name}:...'",
        )
    return already


@contextmanager
def _first_on_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while a scorer's module is imported (so it may import its neighbours)."""
    entry = str(folder)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        if entry in sys.path:
            sys.path.remove(entry)


def _import_failed(name: str, exc: BaseException) -> BaseException:
    """The ``_NotLoaded`` for an import that failed, naming the error and the line of the user's code.

    Ctrl-C is itself: it stops the run, not the case.
    """
    if isinstance(exc, KeyboardInterrupt):
        return exc
    detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return _NotLoaded(f"importing {name} failed: {type(exc).__name__}: {detail}{_failed_at(exc)}")


def _failed_at(exc: BaseException) -> str:
    """`` (file.py, line 3)``: the line of a syntax error, else the innermost frame outside importlib."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({Path(exc.filename).name}, line {exc.lineno})"
    own = [frame for frame in traceback.extract_tb(exc.__traceback__) if "importlib" not in frame.filename]
    return f" ({Path(own[-1].filename).name}, line {own[-1].lineno})" if own else ""
