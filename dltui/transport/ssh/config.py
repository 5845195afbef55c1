"""What the SSH config says about a destination, read the way ssh(1) reads it.

asyncssh applies the config itself on every connect; dltui also reads it here because it opens
jump hosts itself (to share one connection per jump) and checks host keys itself (to tell an
unknown key from a changed one). The parser is asyncssh's, so both always agree.
"""

from __future__ import annotations

import getpass
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..file_stamp import file_stamp
from ..hostspec import Destination, parse_jumps
from .config_slice import ConfigSlicer
from .library import SSHClientConfig
from .options import SshOptions

DEFAULT_PORT = 22
MAX_JUMP_DEPTH = 8  # a ProxyJump loop in the config stops here instead of recursing forever


class SshConfigError(Exception):
    """The SSH config cannot be used (unreadable, unparsable, a ProxyJump loop)."""


@dataclass(frozen=True)
class HostSettings:
    dest: Destination
    hostname: str
    port: int
    user: str
    proxy_jump: str | None
    known_hosts_files: tuple[str, ...] | None  # None: checking disabled (UserKnownHostsFile none)
    identity_files: tuple[str, ...]
    certificate_files: tuple[str, ...]  # CertificateFile
    identities_only: bool  # IdentitiesOnly
    ciphers: str | None  # the config's Ciphers, when it sets them
    connect_timeout_s: float
    keepalive_interval_s: float
    keepalive_count: int

    @property
    def address(self) -> str:
        """``host:port`` for messages."""
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{host}:{self.port}"


class SshConfig:
    """The SSH config (``-F FILE``, else ``~/.ssh/config``) as ssh(1) reads it.

    Each destination is parsed once and again only when the file changes, and what is parsed
    (here and by asyncssh on connect) is the config cut down to the destination's lines
    (``config_slice``): a fleet of N nodes in one config would otherwise cost N x N line
    reads. (A change in a file pulled in by ``Include`` alone is not noticed.)
    """

    def __init__(self, options: SshOptions):
        self.options = options
        self._parsed: dict[Destination, tuple[tuple, HostSettings]] = {}
        self._slicer: tuple[tuple, ConfigSlicer] | None = None
        # the slicers of the last edits, kept: a connect in flight may still read their slices
        self._retired: deque[ConfigSlicer] = deque(maxlen=2)

    def paths(self) -> list[str]:
        if self.options.ssh_config:
            path = os.path.expanduser(self.options.ssh_config)
            if not os.access(path, os.R_OK):
                raise SshConfigError(f"cannot read SSH config {self.options.ssh_config}")
            return [path]
        default = Path("~", ".ssh", "config").expanduser()
        return [str(default)] if os.access(default, os.R_OK) else []

    def paths_for(self, dest: Destination) -> list[str]:
        """The config files to parse for ``dest``: the config cut down to its lines."""
        paths = self.paths()
        return [self._slicer_for(paths).path_for(dest.host)] if paths else []

    def settings(self, dest: Destination) -> HostSettings:
        paths = self.paths()
        stamp = _stamp(paths)
        cached = self._parsed.get(dest)
        if cached is None or cached[0] != stamp:
            cached = self._parsed[dest] = (stamp, self._parse(self.paths_for(dest), dest))
        return cached[1]

    def _slicer_for(self, paths: list[str]) -> ConfigSlicer:
        stamp = _stamp(paths)
        if self._slicer is None or self._slicer[0] != stamp:
            try:
                slicer = ConfigSlicer(paths[0])
            except (OSError, UnicodeDecodeError) as exc:
                raise SshConfigError(f"cannot read SSH config: {exc}") from exc
            if self._slicer is not None:
                self._retired.append(self._slicer[1])
            self._slicer = (stamp, slicer)
        return self._slicer[1]

    def route(self, dest: Destination) -> tuple[Destination, ...]:
        """The jump hosts in front of ``dest``, first hop first, as ssh(1) would chain them.

        ``-J`` replaces the destination's own ProxyJump. The first hop is itself reached
        through *its* ProxyJump, as ``ssh -W`` would; later hops go through the one before.
        """
        hops: tuple[Destination, ...] = ()
        jump = self.options.jump
        for _ in range(MAX_JUMP_DEPTH):
            spec = jump if jump is not None else self.settings(dest).proxy_jump
            if not spec:
                return hops
            chain = parse_jumps(spec)
            hops = chain + hops
            dest, jump = chain[0], None
        raise SshConfigError(f"ProxyJump chain longer than {MAX_JUMP_DEPTH} hops (a loop in the SSH config?)")

    def _parse(self, paths: list[str], dest: Destination) -> HostSettings:
        options = self.options
        try:
            cfg: dict[str, Any] = SSHClientConfig.load(  # type: ignore[assignment]  # its options
                None, paths, False, False, False, getpass.getuser(), dest.user or (), dest.host, dest.port or ()
            )
        except (OSError, KeyError, ValueError) as exc:  # ConfigParseError is a ValueError
            message = self._slicer[1].real_path_in(str(exc)) if self._slicer else str(exc)
            raise SshConfigError(f"SSH config: {message}") from exc
        user_files = cfg.get("UserKnownHostsFile")
        if options.known_hosts:
            known: tuple[str, ...] | None = (options.known_hosts,)
        elif user_files == []:
            known = None
        else:
            known = tuple(user_files or (str(Path("~", ".ssh", "known_hosts")),))
            known += tuple(cfg.get("GlobalKnownHostsFile") or ())
        return HostSettings(
            dest=dest,
            hostname=cfg.get("Hostname", dest.host),
            port=cfg.get("Port", DEFAULT_PORT),
            user=cfg.get("User") or getpass.getuser(),
            proxy_jump=cfg.get("ProxyJump"),
            known_hosts_files=None if known is None else tuple(os.path.expanduser(f) for f in known),
            identity_files=tuple(os.path.expanduser(f) for f in cfg.get("IdentityFile") or ()),
            certificate_files=tuple(os.path.expanduser(f) for f in cfg.get("CertificateFile") or ()),
            identities_only=bool(cfg.get("IdentitiesOnly")),
            ciphers=cfg.get("Ciphers"),
            connect_timeout_s=float(cfg.get("ConnectTimeout", options.connect_timeout_s)),
            keepalive_interval_s=float(cfg.get("ServerAliveInterval", options.keepalive_interval_s)),
            keepalive_count=int(cfg.get("ServerAliveCountMax", options.keepalive_count)),
        )


def _stamp(paths: list[str]) -> tuple:
    """What tells a changed config file from the one parsed before."""
    try:
        stamp = tuple((path, file_stamp(path)) for path in paths)
    except OSError as exc:
        raise SshConfigError(f"cannot read SSH config: {exc}") from exc
    for path, found in stamp:
        if found is None:
            raise SshConfigError(f"cannot read SSH config: {path}: no such file")
    return stamp
