"""How dltui writes a file on the operator's machine (the audit log, its own log, ``--record``,
the burn-in report), often as root, often in a folder others can write into (``/tmp``, a
shared report folder): the one place that opens them.

- A file or folder dltui makes is 0600 / 0700 whatever the umask: created with O_EXCL and
  O_NOFOLLOW (a name planted in its place, a link above all, makes the creation fail instead
  of writing through it), then chmodded (the umask can only take bits away).
- What is at the name already is written into only when it is the operator's own regular file,
  with one name (a hard link would write into the file it names) and writable by no one else.
  A symbolic link is never followed, whoever made it.
- The folder it is in must be the operator's or root's: another user's folder lets its owner
  swap what is in it at will. Files are opened relative to that folder's checked descriptor,
  so a link planted in place of the folder after the check is not followed either.

Anything refused raises ``UnsafePath``, an ``OSError`` whose text is one line: ``PATH: why``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

DIR_MODE = 0o700
FILE_MODE = 0o600
_NEW = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted at the name would block the open for writing until read
_EXISTING = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
LINK = "is a symbolic link; dltui does not write through links"


class UnsafePath(OSError):
    """An entry dltui refuses to write into; ``str()`` is ``PATH: why``."""

    def __init__(self, path: Path | str, why: str):
        super().__init__(why)
        self.strerror = why
        self.filename = str(path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _who(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def file_refusal(st: os.stat_result) -> str | None:
    """Why an existing entry (its lstat) must not be written into; None when it may."""
    if why := _foreign(st):
        return why
    if st.st_nlink != 1:
        return f"has {st.st_nlink} hard links; dltui writes only into a file with one name"
    if st.st_mode & _OTHERS_WRITE:
        return f"can be written by others (mode {st.st_mode & 0o7777:04o}); chmod 600 it or remove it"
    return None


def _foreign(st: os.stat_result) -> str | None:
    """Why an entry is not a file of the operator's own at all (a link, another user's)."""
    if stat.S_ISLNK(st.st_mode):
        return LINK
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file; dltui writes only into its own files"
    if st.st_uid != os.geteuid():
        return f"belongs to {_who(st.st_uid)}, not to you; dltui does not write into another user's file"
    return None


def _link_refusal(path: Path) -> str | None:
    """Why ``path`` must not be followed: a link of someone else's (looked at, not followed)."""
    link = path.lstat()
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.geteuid(), 0):
        return f"is a symbolic link of {_who(link.st_uid)}; dltui does not follow another user's link"
    return None


def _folder_refusal(path: Path, opened: os.stat_result | None = None) -> str | None:
    """Why files must not be made in the folder ``path`` (``opened``: what was opened there);
    None when they may: it is the operator's or root's, so is a link to it, and the name
    still leads to what was opened."""
    if why := _link_refusal(path):
        return why
    st = now = path.stat()
    if opened is not None:
        st = opened
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            return "changed while dltui opened it"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid not in (os.geteuid(), 0):
        return f"belongs to {_who(st.st_uid)}, not to you; dltui does not write into another user's folder"
    return None


def make_folders(path: Path) -> list[Path]:
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


def open_folder(path: Path) -> int:
    """A descriptor of the folder ``path``, checked to be the operator's or root's, to open
    files relative to. Raises OSError (``UnsafePath``)."""
    if why := _link_refusal(path):  # not even opened through
        raise UnsafePath(path, why)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except NotADirectoryError:
        raise UnsafePath(path, "is not a folder") from None
    try:  # checked once open: what is checked is what files are made in
        why = _folder_refusal(path, os.fstat(fd))
    except OSError:
        os.close(fd)
        raise
    if why:
        os.close(fd)
        raise UnsafePath(path, why)
    return fd


def check(path: Path) -> None:
    """Refuses now (``UnsafePath``) what ``open_private`` would refuse at ``path``, creating
    nothing: for a file that is opened only once there is something to write in it."""
    _check_nearest_folder(path)
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        if why := file_refusal(path.lstat()):
            raise UnsafePath(path, why)


def _check_nearest_folder(path: Path) -> None:
    """The folder ``path`` would be made in (the nearest that exists) refused now or never."""
    folder = next((f for f in path.parents if os.path.lexists(f)), None)
    if folder is not None and (why := _folder_refusal(folder)):
        raise UnsafePath(folder, why)


def open_private(path: Path, flags: int, *, durable: bool = False) -> int:
    """``os.open(path, flags)`` of the operator's own file, created 0600 (its folder 0700) when
    missing; what else is there is refused (``UnsafePath``). ``durable``: a file made here is
    in its folder for good once this returns (an fsync of the file keeps its data, not its
    name). ``O_TRUNC`` happens only once the file is known to be the operator's."""
    made = [] if os.path.lexists(path.parent) else make_folders(path.parent)
    folder = open_folder(path.parent)
    try:
        try:
            fd = os.open(path.name, (flags & ~os.O_TRUNC) | _NEW, FILE_MODE, dir_fd=folder)
        except FileExistsError:
            fd = _open_existing(folder, path, flags & ~os.O_TRUNC)
        else:
            _made(fd, folder, made, durable)
        if flags & os.O_TRUNC:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                os.close(fd)
                raise
        return fd
    finally:
        os.close(folder)


def _made(fd: int, folder: int, parents: list[Path], durable: bool) -> None:
    """A file just created: its mode set, its name (and its new folders') synced if asked."""
    try:
        os.fchmod(fd, FILE_MODE)
        if durable:
            os.fsync(folder)
            for parent in (f.parent for f in reversed(parents)):
                _fsync_dir(parent)
    except OSError:
        os.close(fd)
        raise


def _lstat_in(folder: int, name: str) -> os.stat_result:
    return os.stat(name, dir_fd=folder, follow_symlinks=False)


def _open_existing(folder: int, path: Path, flags: int) -> int:
    if why := file_refusal(_lstat_in(folder, path.name)):
        raise UnsafePath(path, why)
    try:
        fd = os.open(path.name, flags | _EXISTING, dir_fd=folder)
    except OSError:
        if stat.S_ISLNK(_lstat_in(folder, path.name).st_mode):  # planted since: O_NOFOLLOW's ELOOP
            raise UnsafePath(path, LINK) from None
        raise
    if why := file_refusal(os.fstat(fd)):  # swapped since the look
        os.close(fd)
        raise UnsafePath(path, why)
    return fd


def create_new(path: Path) -> int:
    """A new file at ``path``, 0600, opened for writing; never one that exists: a link or
    another user's file there is ``UnsafePath``, a file of the operator's FileExistsError."""
    folder = open_folder(path.parent)
    try:
        return _create_in(folder, path.name, path)
    finally:
        os.close(folder)


def _create_in(folder: int, name: str, shown: Path) -> int:
    try:
        fd = os.open(name, os.O_WRONLY | _NEW, FILE_MODE, dir_fd=folder)
    except FileExistsError:
        if why := _foreign(_lstat_in(folder, name)):
            raise UnsafePath(shown, why) from None
        raise
    _made(fd, folder, [], durable=False)
    return fd


def own_folder(path: Path) -> int:
    """A descriptor of the folder ``path``: made 0700 now, or an earlier one of the
    operator's own (a burn-in attached to again) that no one else can write into. A link or
    anything else there is ``UnsafePath``."""
    parent = open_folder(path.parent)
    try:
        try:
            os.mkdir(path.name, DIR_MODE, dir_fd=parent)
            made = True
        except FileExistsError:
            made = False
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_DIRECTORY | _EXISTING, dir_fd=parent)
        except OSError:
            link = stat.S_ISLNK(_lstat_in(parent, path.name).st_mode)
            raise UnsafePath(path, LINK if link else "is not a folder") from None
    finally:
        os.close(parent)
    if made and os.fstat(fd).st_uid == os.geteuid():  # the umask may have taken bits
        os.fchmod(fd, DIR_MODE)
    # checked even when just made: in a folder others write into, it may have been swapped
    if why := _own_folder_refusal(os.fstat(fd)):
        os.close(fd)
        raise UnsafePath(path, why)
    return fd


def check_own_folder(path: Path) -> None:
    """Refuses now (``UnsafePath``) what ``own_folder`` would refuse at ``path``, creating
    nothing: said before a long run rather than after it."""
    _check_nearest_folder(path)
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(path, LINK if stat.S_ISLNK(st.st_mode) else "is not a folder")
    if why := _own_folder_refusal(st):
        raise UnsafePath(path, why)


def _own_folder_refusal(st: os.stat_result) -> str | None:
    if st.st_uid != os.geteuid():
        return f"belongs to {_who(st.st_uid)}, not to you; dltui does not write into another user's folder"
    if st.st_mode & _OTHERS_WRITE:
        return f"can be written by others (mode {st.st_mode & 0o7777:04o}); dltui makes this folder itself"
    return None


@contextlib.contextmanager
def replacing(folder: int, name: str) -> Iterator[BinaryIO]:
    """A file written under a new random name in ``folder`` (0600) that takes the place of
    ``name`` once complete (rename replaces what was there, a link included, never writing
    through it); removed if the writing fails."""
    temp = f".{name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | _NEW, FILE_MODE, dir_fd=folder)
    os.fchmod(fd, FILE_MODE)
    try:
        with open(fd, "wb") as out:
            yield out
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
