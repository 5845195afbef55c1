"""Host key checks that can tell an unknown key from a changed one.

asyncssh refuses both with the same ``HostKeyNotVerifiable``. dltui hands asyncssh the parsed
known_hosts and a client whose ``validate_host_public_key`` (called only for a key that is
not trusted) asks ``HostKeyPolicy``: it records what the server offered, looks the host up,
and under ``--accept-new-host-keys`` trusts and records a key for a host that has none yet.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..file_stamp import file_stamp
from .library import asyncssh

UNKNOWN = "unknown"
CHANGED = "changed"


def load(files: tuple[str, ...]) -> asyncssh.SSHKnownHosts:
    """All entries of the files that exist; a missing file is an empty one, as for ssh(1)."""
    known = asyncssh.SSHKnownHosts()
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                known.load(f.read())
        except FileNotFoundError:
            continue
    return known


class KnownHostsCache:
    """known_hosts parsed again only when one of its files changes. Every node's connect asks
    for it, and a fleet's file lists every node: N connects x N entries otherwise. A key added
    under ``--accept-new-host-keys`` changes the file, so the next connect sees it."""

    def __init__(self):
        self._parsed: dict[tuple[str, ...], tuple[tuple, asyncssh.SSHKnownHosts]] = {}

    def load(self, files: tuple[str, ...]) -> asyncssh.SSHKnownHosts:
        stamp = tuple(file_stamp(path) for path in files)
        cached = self._parsed.get(files)
        if cached is None or cached[0] != stamp:
            cached = self._parsed[files] = (stamp, load(files))
        return cached[1]


def host_pattern(host: str, port: int) -> str:
    """How known_hosts names a host: ``[host]:port`` unless the port is 22."""
    return host if port == 22 else f"[{host}]:{port}"


def has_entry(known: asyncssh.SSHKnownHosts, host: str, addr: str, port: int) -> bool:
    host_keys, ca_keys, _revoked, x509_certs, _, x509_subjects, _ = known.match(
        host, addr, None if port == 22 else port
    )
    return bool(host_keys or ca_keys or x509_certs or x509_subjects)


def append(path: str, host: str, port: int, key: asyncssh.SSHKey) -> None:
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    line = f"{host_pattern(host, port)} {key.export_public_key('openssh').decode().strip()}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(line)


@dataclass
class OfferedKey:
    """The key a server offered that known_hosts did not trust."""

    host: str
    port: int
    key: asyncssh.SSHKey
    verdict: str  # UNKNOWN or CHANGED
    accepted: bool = False  # added to known_hosts under --accept-new-host-keys

    @property
    def fingerprint(self) -> str:
        return self.key.get_fingerprint("sha256")

    @property
    def key_type(self) -> str:
        return self.key.get_algorithm()


class HostKeyPolicy:
    """Decides on a key known_hosts does not trust, and records it for the error message."""

    def __init__(self, known: asyncssh.SSHKnownHosts, write_to: str | None):
        self.known = known
        self.write_to = write_to  # where to add a new key; None = never accept one
        self.offered: OfferedKey | None = None

    def accept(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        verdict = CHANGED if has_entry(self.known, host, addr, port) else UNKNOWN
        self.offered = OfferedKey(host, port, key, verdict)
        if verdict == UNKNOWN and self.write_to:
            append(self.write_to, host, port, key)
            self.offered.accepted = True
            return True
        return False
