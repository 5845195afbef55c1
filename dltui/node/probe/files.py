"""How the probe reads /proc and /sys: whole files with plain os.open/os.read, files kept open
and read again from their start, the mount table read again only when it changed, and statvfs
with a timeout for file systems served by someone else."""

from __future__ import annotations

import os
import select
import threading
from typing import Any

READ_CHUNK = 65536


def read_text(path: str) -> str:
    # os.open/os.read skip the buffered and text layers of open(): ~8 µs less per file, and
    # a sample reads a dozen files.
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def read_fd(fd: int) -> str:
    # surrogateescape: mount points and interface names are bytes, not always UTF-8; this
    # keeps them usable as paths again (os.statvfs) instead of failing to decode.
    return read_bytes(fd).decode("utf-8", "surrogateescape")


def read_bytes(fd: int) -> bytes:
    """From where ``fd`` stands to the end of the file."""
    chunks = []
    while True:
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def read_sys(path: str) -> str | None:
    """A one-value sysfs attribute, stripped; None where absent or unreadable."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class KeptOpen:
    """A /proc file kept open and read again from its start each time: a host sample reads
    eight of them every second, and opening one (a path walk through /proc) cost about as much
    as reading it. A failed read closes it; the next one opens it again.

    ``one_record``: the kernel writes the whole file as one seq_file record (single_open:
    stat, loadavg, meminfo, pressure), and a read copies all of it that fits, so a read shorter
    than its buffer was the end and the empty read that would confirm it is skipped. Files
    written record by record (diskstats, net/dev) come at most a page per read: read to the end.
    """

    def __init__(self, path: str, one_record: bool = False) -> None:
        self.path = path
        self.one_record = one_record
        self._fd: int | None = None

    def read(self) -> str:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        else:
            os.lseek(self._fd, 0, os.SEEK_SET)  # a seq_file starts over at offset 0
        try:
            data = os.read(self._fd, READ_CHUNK) if self.one_record else b""
            if len(data) == READ_CHUNK or not self.one_record:
                data += read_bytes(self._fd)
            return data.decode("utf-8", "surrogateescape")
        except OSError:
            self.close()
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class MountTable:
    """The mount table, read again only when the kernel says it changed.

    proc(5): an open /proc/<pid>/mounts signals a mount or unmount as POLLPRI. Polling it
    costs one syscall; reading and parsing the table every tick would cost ~30 µs here and
    milliseconds on a Kubernetes node with hundreds of mounts.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._poll = select.poll()

    def read_if_changed(self) -> str | None:
        """The table's text on the first call and after a change, else None."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
            self._poll.register(self._fd, select.POLLPRI)
        elif not self._poll.poll(0):
            return None
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            return read_fd(self._fd)
        except OSError:
            self.close()
            raise

    def close(self) -> None:
        if self._fd is not None:
            self._poll.unregister(self._fd)
            os.close(self._fd)
            self._fd = None


class BoundedStatvfs:
    """``os.statvfs`` that gives up after a timeout, for file systems served by someone else.

    A hung NFS server or FUSE daemon blocks statvfs in the kernel, possibly for ever. The call
    runs in a daemon thread; past the timeout it raises TimeoutError, and while that thread is
    still stuck later calls for the same path raise at once instead of piling up threads.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._stuck: dict[str, threading.Thread] = {}  # path -> thread still inside statvfs

    def __call__(self, path: str) -> os.statvfs_result:
        thread = self._stuck.get(path)
        if thread is not None:
            if thread.is_alive():
                raise TimeoutError("statvfs %s timed out" % path)
            del self._stuck[path]
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = os.statvfs(path)
            except OSError as exc:
                box["error"] = exc

        thread = threading.Thread(target=run, name="statvfs " + path, daemon=True)
        thread.start()
        thread.join(self.timeout_s)
        if thread.is_alive():
            self._stuck[path] = thread
            raise TimeoutError("statvfs %s timed out" % path)
        if "error" in box:
            raise box["error"]
        return box["result"]
