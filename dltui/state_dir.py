"""dltui's state folder on the operator's machine: ``$XDG_STATE_HOME/dltui`` (by default
``~/.local/state/dltui``) holds the audit log, the GPU inventory and the burn-in spools.

It is private whatever the umask: a folder made here is 0700 and a file made here 0600 (the
mode is set after creating, since the umask can take bits away from the mode asked for). What
exists already is left as it is: an operator may have widened it on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "dltui"


def make_private_dir(path: Path) -> None:
    """Creates ``path`` and its missing parents, each 0700. Raises OSError."""
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made meanwhile by another process: its mode is its own
        os.chmod(folder, DIR_MODE)


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags)``, creating the file 0600 when it does not exist (its folder too,
    0700). Raises OSError."""
    make_private_dir(path.parent)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return os.open(path, flags)
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd
