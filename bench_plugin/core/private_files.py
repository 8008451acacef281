"""Files and folders we write, never through a symbolic link we did not make: new files 0600, folders 0700.

A repository can commit ``bench-results/results.jsonl`` (or ``runs/NAME``, the cache's folder) as a
link; following it, a plain ``pytest`` would overwrite the link's target with records. Every file we
append to or rewrite in place (results.jsonl, journals, the cache) is opened here with ``O_NOFOLLOW``,
and every folder we write into is checked not to be a link; a link is refused with an ``OSError``
naming it. Files replaced whole go through ``write_atomically``, whose rename replaces a link rather
than writing through it. Results and the cache hold prompts and answers: readable by their owner only.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO, cast

LINK_REFUSED = "is a symbolic link bench_plugin did not make: it is not followed (remove it or write elsewhere)"
_OPEN_FLAGS = {
    "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "r+b": os.O_RDWR,
    "rb": os.O_RDONLY,
}
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def link_refused(path: Path) -> OSError:
    """The error that names a link we will not follow (``ELOOP``, as ``O_NOFOLLOW`` says it)."""
    return OSError(errno.ELOOP, LINK_REFUSED, str(path))


def refuse_links(*paths: Path) -> None:
    """Raise ``link_refused`` for the first of ``paths`` that is a symbolic link.

    Raises:
        OSError: ``ELOOP``, naming the link.
    """
    for path in paths:
        if path.is_symlink():
            raise link_refused(path)


def private_folder(path: Path) -> None:
    """Make ``path`` (and missing parents) with mode 0700, unless it is a link, which is refused.

    Raises:
        OSError: the folder cannot be made, or it is a symbolic link (``ELOOP``, naming it).
    """
    refuse_links(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    refuse_links(path)  # made in between by someone else


def open_private(path: Path, mode: str) -> BinaryIO:
    """``path`` opened unbuffered with ``mode`` (``wb``, ``ab``, ``r+b`` or ``rb``), never through a link; new: 0600.

    Raises:
        OSError: as ``open`` would, or ``ELOOP`` naming ``path`` when it is a symbolic link.
    """
    refuse_links(path)  # where O_NOFOLLOW does not exist (Windows)
    try:
        handle = os.open(path, _OPEN_FLAGS[mode] | _NO_FOLLOW, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise link_refused(path) from exc
        raise
    return cast(BinaryIO, os.fdopen(handle, mode, buffering=0))  # unbuffered binary: a raw file
