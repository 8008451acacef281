"""A suite reads files only in its folder or one the user allows, links resolved first: what it reads goes to models."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import jinja2
from jinja2.loaders import split_template_path

from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.core.utf8 import read_utf8

ALLOW_PATH_OPTION = "--bench-allow-path"
ALLOW_PATH_INI = "bench_allow_paths"


@dataclass(frozen=True)
class SuiteFolders:
    """The folders a suite may read from, resolved: its own folder, then those the user allows.

    A suite is data that someone else may have written, and what it reads is sent to a model: a
    dataset, a replay file, a prompt file, an ``{% include %}`` or a workspace copy must not reach
    ``/etc/passwd`` or ``~/.ssh`` through an absolute path, ``..`` or a symbolic link. The suite's
    folder is the folder that holds the suite file (nothing above it, even in a bundle of suites);
    the user allows more with ``--bench-allow-path DIR`` or the ini option ``bench_allow_paths``.
    Every reader asks ``confine``, which resolves the path (symbolic links included) before it
    compares. Build it with ``SuiteFolders.of`` so that every folder is resolved once.

    Attributes:
        root: the folder of the suite file, resolved.
        allowed: the folders (or single files) given with ``--bench-allow-path`` or ``bench_allow_paths``.
    """

    root: Path
    allowed: tuple[Path, ...] = ()

    @classmethod
    def of(cls, root: Path, allowed: Iterable[Path] = ()) -> SuiteFolders:
        """The folders of a suite whose file is in ``root``, with the user's ``allowed`` ones (resolved here)."""
        return cls(root.resolve(), tuple(dict.fromkeys(Path(p).resolve() for p in allowed)))

    def contains(self, path: Path) -> bool:
        """Whether the resolved ``path`` is one of the folders or lies inside one."""
        return any(path.is_relative_to(folder) for folder in (self.root, *self.allowed))

    def confine(
        self,
        name: str | Path,
        *,
        base: Path | None = None,
        what: str = "",
        error: type[SuiteError] = CaseError,
        path: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> Path:
        """The file or folder ``name`` (relative to ``base``, default the suite's folder), resolved.

        Args:
            name: the path as the suite wrote it: relative, absolute, with ``..`` or through links.
            base: the folder a relative ``name`` starts from (the suite's folder, or ``data_dir``).
            what: what the path is, for the message ("template file"); empty when the key says it.
            error: the class raised: ``CaseError`` when only some cases need the file, else ``SuiteError``.
            path: the suite file as messages show it.
            key: the key path that names the file (``tasks[0].dataset``).
            line: the 0-based line of that key.

        Returns:
            The resolved path, inside the suite's folder or a folder the user allows.

        Raises:
            SuiteError: (``error``) when the path leads elsewhere, with a hint naming the option that allows it.
        """
        target = (base if base is not None else self.root) / name
        shown = f"{what} {name}" if what else str(name)
        return self._checked(shown, target, error, path=path, key=key, line=line)

    def confine_tree(
        self,
        folder: Path,
        *,
        shown: str,
        error: type[SuiteError] = CaseError,
        path: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        """Check each symbolic link under ``folder`` (a resolved folder to be copied whole).

        A copy follows links, so a link inside a copied folder reads what it points to: each must stay
        inside the folders too, and a link back to a folder above it (a loop) is refused.

        Raises:
            SuiteError: (``error``) at the first link that leads outside, or loops.
        """
        for current, dirs, files in os.walk(folder, followlinks=True):
            here = Path(current).resolve()
            for entry in sorted([*dirs, *files]):
                link = Path(current, entry)
                if not link.is_symlink():
                    continue
                inner = f"{shown}/{link.relative_to(folder).as_posix()}"
                resolved = self._checked(inner, link, error, path=path, key=key, line=line)
                if resolved.is_dir() and here.is_relative_to(resolved):
                    raise error(f"{inner} is a link back to a folder that holds it ({resolved}): a copy would "
                                "never end", path=path, line=line, key=key)

    def _checked(
        self, shown: str, target: Path, error: type[SuiteError], *, path: str | None, key: str | None, line: int | None
    ) -> Path:
        try:
            resolved = target.resolve()
        except (OSError, RuntimeError) as exc:  # a loop of symbolic links (RuntimeError before Python 3.13)
            raise error(f"{shown} cannot be resolved: {exc}", path=path, line=line, key=key) from exc
        if self.contains(resolved):
            return resolved
        raise error(self._outside(shown, target, resolved), path=path, line=line, key=key, hint=allow_hint(resolved))

    def _outside(self, shown: str, target: Path, resolved: Path) -> str:
        """The message for ``shown``, which resolves to ``resolved`` outside every folder."""
        where = f"the suite's folder ({self.root})"
        if self.allowed:
            where += f" and the folders allowed by {ALLOW_PATH_OPTION}"
        if self.contains(Path(os.path.normpath(target))):
            return f"{shown} leads outside {where} through a symbolic link, to {resolved}"
        return f"{shown} is outside {where}"


def allow_hint(resolved: Path) -> str:
    """How to allow ``resolved``: its folder (the path itself when it is one) with ``--bench-allow-path``."""
    folder = resolved if resolved.is_dir() else resolved.parent
    return (f"if you trust this suite with {folder}, allow it with {ALLOW_PATH_OPTION} {folder} "
            f"(or list it under the ini option {ALLOW_PATH_INI})")


class SuiteTemplateLoader(jinja2.BaseLoader):
    """Template files (``prompt_file``...) and ``{% include %}`` names, looked up in the suite's folder.

    Like jinja2's ``FileSystemLoader`` (names with ``..`` are not found), and then confined: a name
    that leads out through a symbolic link raises ``CaseError``, which the renderer places at the key.
    """

    def __init__(self, folders: SuiteFolders) -> None:
        self.folders = folders

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        """The text of ``template``, its file name, and a check that the file did not change.

        Raises:
            jinja2.TemplateNotFound: no such file under the suite's folder (or a name with ``..``).
            CaseError: the name leads outside the folders the suite may read.
        """
        pieces = split_template_path(template)
        file = self.folders.confine("/".join(pieces), what="template file")
        if not file.is_file():
            raise jinja2.TemplateNotFound(template)
        try:
            source = read_utf8(file, "/".join(pieces))
            mtime = file.stat().st_mtime
        except OSError as exc:
            raise jinja2.TemplateNotFound(template) from exc

        def uptodate() -> bool:
            try:
                return file.stat().st_mtime == mtime
            except OSError:
                return False

        return source, str(self.folders.root.joinpath(*pieces)), uptodate
