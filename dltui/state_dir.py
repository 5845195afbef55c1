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


def make_private_dir(path: Path) -> list[Path]:
    """Creates ``path`` and its missing parents, each 0700; returns the folders it made, the
    outermost first. Raises OSError."""
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    made = []
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made meanwhile by another process: its mode is its own
        os.chmod(folder, DIR_MODE)
        made.append(folder)
    return made


def open_private(path: Path, flags: int, *, durable: bool = False) -> int:
    """``os.open(path, flags)``, creating the file 0600 when it does not exist (its folder too,
    0700). ``durable``: a file (or folder) made here is in its folder for good once this
    returns (the folders that name it are fsynced: an fsync of the file alone keeps its data,
    not its name, through a crash). Raises OSError."""
    made = make_private_dir(path.parent)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return os.open(path, flags)
    try:
        os.fchmod(fd, FILE_MODE)
        if durable:
            for folder in (path.parent, *(f.parent for f in reversed(made))):
                _fsync_dir(folder)
    except OSError:
        os.close(fd)
        raise
    return fd


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
