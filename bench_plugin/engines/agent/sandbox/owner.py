"""Who a sandboxed program runs as, and handing the workspace over to that user.

Run by root, a program would be exempt from the process limit (the kernel does not count root's
processes) and could read every file root can. So when pytest runs as root, each workspace gets a user
of its own, a number no account uses, which owns the workspace and nothing else. Run by anyone else,
programs keep the caller's user, inside a user namespace of their own.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

FIRST_UID = 0x7E000000
UID_COUNT = 1 << 24


def needs_own_user() -> bool:
    """Whether programs must switch to a user of their own: pytest runs as root."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def workspace_user(workspace: Path) -> int:
    """The user of a workspace's programs: the one that already owns it, else a new one.

    The number is drawn at random from a range no account uses, so two cases (even in two xdist
    workers) do not share one.
    """
    owner = workspace.stat().st_uid
    if FIRST_UID <= owner < FIRST_UID + UID_COUNT:
        return owner
    return FIRST_UID + secrets.randbelow(UID_COUNT)


def own_user(workspace: Path) -> int | None:
    """The user the workspace's programs switch to, handed the workspace; None when pytest is not root."""
    if not needs_own_user():
        return None
    uid = workspace_user(workspace)
    hand_over(workspace, uid)
    return uid


def hand_over(workspace: Path, uid: int) -> None:
    """Make ``uid`` the owner of what pytest's tools put in the workspace (the rest is its own already).

    Only entries owned by the caller change hands; links are not followed, and a file with more than one
    name is left alone (it could be a name for a file elsewhere).
    """
    me = os.geteuid()
    for folder, _, files in os.walk(workspace):  # links to folders are not walked into
        for path in (folder, *(os.path.join(folder, name) for name in files)):
            if _changes_hands(os.lstat(path), me):
                os.chown(path, uid, uid, follow_symlinks=False)


def _changes_hands(info: os.stat_result, me: int) -> bool:
    """An entry the caller owns that is a folder or a file with one name only."""
    return info.st_uid == me and (stat.S_ISDIR(info.st_mode) or info.st_nlink == 1)
