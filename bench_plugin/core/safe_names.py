"""File names made from data (a suite's, task's or model's name): a fixed alphabet, a bounded length, no way out.

A results file is input (a colleague's, a CI artifact, a shard): its ``suite``, ``task`` and ``model``
fields must not pick where a report is written. ``"../../elsewhere/victim"`` or an absolute name would
write outside the output folder, 150 characters end in ENAMETOOLONG, a NUL in a ValueError, and ``NUL``
or ``CON`` name a device on Windows. Every file name a report builds from data goes through
``safe_file_name``; a name it had to change gets a short digest of the original, so two names that
differ only in what was replaced still get two files.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

MAX_NAME_CHARS = 120
"""The longest name given, suffix included: far under the 255 bytes of common file systems."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]@+=,]+")
_DIGEST_CHARS = 8
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def safe_file_name(name: str, suffix: str = "") -> str:
    """``name`` + ``suffix`` as one file name in a folder: nothing but ``A-Z a-z 0-9 _ . - [ ] @ + = ,``.

    A name already safe stays as it is; any other is cleaned (unsafe runs become ``_``, leading dots go, a
    device name gets a ``_``, a long one is cut) and ends in ``-`` and a digest of the original.

    Example:
        >>> safe_file_name("mt_bench", ".csv"), safe_file_name("../../victim", ".csv")
        ('mt_bench.csv', '_.._victim-e2c35920.csv')
    """
    cleaned = _UNSAFE.sub("_", name).lstrip(".")
    if cleaned.split(".")[0].lower() in _RESERVED:
        cleaned = f"_{cleaned}"
    if name and cleaned == name and len(name) + len(suffix) <= MAX_NAME_CHARS:
        return name + suffix
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    room = max(1, MAX_NAME_CHARS - len(suffix) - _DIGEST_CHARS - 1)
    return f"{cleaned[:room] or '_'}-{digest}{suffix}"


def output_file(folder: Path, name: str, suffix: str = "") -> Path:
    """``folder / safe_file_name(name, suffix)``: a file directly in ``folder``, whatever ``name`` holds."""
    return folder / safe_file_name(name, suffix)
