"""The client's private keys, read once per fleet and again only when a key file changes.

Left to itself, asyncssh reads and parses every key file (and its ``.pub`` and ``-cert.pub``)
on every connect, in an executor thread. A fleet of 64 connecting at once then runs 64 such
threads beside the event loop, and the loop, which drops the GIL on every socket call, waits
for it each time (a dashboard frame took 0.5-0.8 s of wall clock for 50 ms of its own CPU).
Handing asyncssh the loaded keys leaves that thread little to do. Which files are read, and
how, is asyncssh's own code (``load_keypairs``, ``load_default_keypairs``), so the keys tried
are the ones it would have tried.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..file_stamp import file_stamp
from .library import asyncssh

KEY_SUFFIXES = ("", ".pub", "-cert.pub")  # what asyncssh reads beside a private key file

Keys = list  # of asyncssh.SSHKeyPair


def _ssh_dir() -> Path:
    return Path("~", ".ssh").expanduser()


def _default_stamp() -> tuple:
    """What tells a changed set of default keys: every ``~/.ssh/id_*`` file (a key added or
    removed changes the list, a key replaced its stamp)."""
    try:
        with os.scandir(_ssh_dir()) as entries:
            names = sorted(e.name for e in entries if e.name.startswith("id_"))
    except OSError:
        return ()
    return tuple((name, file_stamp(str(_ssh_dir() / name))) for name in names)


def _files_stamp(files: tuple[str, ...], certs: tuple[str, ...]) -> tuple:
    paths = [f + suffix for f in files for suffix in KEY_SUFFIXES] + list(certs)
    return tuple(file_stamp(os.path.expanduser(p)) for p in paths)


class ClientKeys:
    """Loaded keys per (key files, certificate files, IdentitiesOnly); ``files`` None means
    ssh(1)'s default keys in ``~/.ssh``."""

    def __init__(self):
        self._loaded: dict[tuple, tuple[tuple, Keys]] = {}

    def load(self, files: tuple[str, ...] | None, certs: tuple[str, ...], identities_only: bool) -> Keys:
        """Raises what asyncssh's loading raises (``OSError``, ``KeyImportError``), as a
        connect with the same arguments would."""
        key = (files, certs, identities_only)
        stamp = _default_stamp() if files is None else _files_stamp(files, certs)
        cached = self._loaded.get(key)
        if cached is None or cached[0] != stamp:
            if files is None:
                # not in asyncssh's __all__, but the very function its connect calls here
                keys = list(asyncssh.public_key.load_default_keypairs(None, list(certs)))
            else:
                # as asyncssh's connect: IdentitiesOnly skips keys with only a public half,
                # and a locked key without an agent is skipped, never prompted for
                keys = list(asyncssh.load_keypairs(list(files), None, list(certs), identities_only, True))
            cached = self._loaded[key] = (stamp, keys)
        return list(cached[1])
