"""Which file system a burn-in's ``--disk`` folder is on: its type, its source and an identity
that every node mounting the same file system reports alike, so the operator's side can tell
a node's own drive from a storage system the nodes share (whose fio figures measure that
system, not the node). Stdlib only, Python 3.8.
"""

from __future__ import annotations

import os
from typing import Any

# File systems served over the network (or a cluster's own): fio on them measures the storage
# system and the path to it, never the node's drive.
NETWORK_FS = (
    "nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "fuse.ceph-fuse",
    "glusterfs", "fuse.glusterfs", "fuse.sshfs", "9p", "orangefs", "weka", "wekafs",
)
MOUNTINFO = "/proc/self/mountinfo"
BY_UUID = "/dev/disk/by-uuid"
# Types whose statfs f_fsid is derived from the file system's UUID (the same wherever it is
# mounted, different for every file system). XFS and others derive it from the device number,
# which two nodes with the same disk layout share: no identity from them without a UUID.
_FSID_FROM_UUID = ("ext2", "ext3", "ext4", "btrfs")


def file_system(path: str, mountinfo: str = MOUNTINFO, by_uuid: str = BY_UUID) -> dict[str, Any]:
    """{"type", "source", "mount", "id"} of the file system holding ``path``; "id" is None
    when nothing tells this file system apart from another node's."""
    found = _mount_of(os.path.realpath(path), mountinfo)
    if found is None:
        return {"type": None, "source": None, "mount": None, "id": None}
    mount, fstype, source = found
    return {"type": fstype, "source": source, "mount": mount, "id": _identity(path, fstype, source, by_uuid)}


def _mount_of(path: str, mountinfo: str) -> tuple[str, str, str] | None:
    """(mount point, type, source) of the deepest mount holding ``path``."""
    best = None
    try:
        with open(mountinfo) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 2:
            continue
        mount = _unescape(fields[4])
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) >= len(best[0])):
            best = (mount, rest[0], _unescape(rest[1]))
    return best


def _identity(path: str, fstype: str, source: str, by_uuid: str) -> str | None:
    if fstype in NETWORK_FS or ":" in source or source.startswith("//"):
        return "%s:%s" % (fstype, source)  # server:/export, //server/share, gpfs0: alike everywhere
    uuid = _uuid_of(source, by_uuid)
    if uuid:
        return "uuid:" + uuid
    if fstype in _FSID_FROM_UUID:
        try:
            return "fsid:%x" % os.statvfs(path).f_fsid
        except (OSError, AttributeError):
            return None
    return None


def _uuid_of(source: str, by_uuid: str) -> str | None:
    if not source.startswith("/dev/"):
        return None
    device = os.path.realpath(source)
    try:
        names = os.listdir(by_uuid)
    except OSError:
        return None
    for name in names:
        if os.path.realpath(os.path.join(by_uuid, name)) == device:
            return name
    return None


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text
