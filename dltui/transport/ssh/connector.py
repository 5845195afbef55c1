"""Opens one SSH hop (a jump host or a node) the way ssh(1) would.

Public: the fleet transport, the actions' commands and the burn-in all connect through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from dataclasses import dataclass

from dltui.core import status as st

from ..hostspec import Destination, HostSpecError
from . import known_hosts
from .client_keys import ClientKeys
from .config import HostSettings, SshConfig, SshConfigError
from .errors import DEFAULT_KEY_FILES, Failure, describe
from .library import asyncssh
from .options import SshOptions

BACKOFF_FIRST_S = 1.0
BACKOFF_CAP_S = 30.0
CLOSE_WAIT_S = 2.0  # how long a closing connection may take to say goodbye
# AES-GCM first: asyncssh's ChaCha20 builds cipher objects for every packet, which costs
# ~0.07 ms per sample through a jump (two layers); an SSH config's Ciphers still wins.
PREFERRED_CIPHERS = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr"



def backoff_s(attempt: int) -> float:
    """Delay before retry ``attempt`` (1, 2, …): doubling up to the cap, jittered so a fleet
    that lost its bastion does not reconnect in lockstep."""
    return min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


class Client(asyncssh.SSHClient):
    """Checks host keys through a ``HostKeyPolicy`` and remembers why its connection ended."""

    def __init__(self, policy: known_hosts.HostKeyPolicy | None):
        self.policy = policy
        self.closed = False
        self.lost: Exception | None = None

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self.policy is not None and self.policy.accept(host, addr, port, key)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc


@dataclass
class Hop:
    """One open SSH connection (a jump host or a node)."""

    settings: HostSettings
    conn: asyncssh.SSHClientConnection
    client: Client

    def loss(self) -> Failure:
        """Why this connection ended, as a failure."""
        return describe(self.client.lost or asyncssh.ConnectionLost("closed"), self.settings, None)

    async def close(self) -> None:
        self.conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.wait_closed(), CLOSE_WAIT_S)


class Connector:
    """Opens one SSH hop the way ssh(1) would: the SSH config, checked host keys, keys and agent,
    and never a password or passphrase prompt. Re-reads config, known_hosts and keys on any
    attempt after they changed, so a fix the operator makes is picked up by the next retry."""

    def __init__(self, options: SshOptions):
        self.options = options
        self.config = SshConfig(options)
        self.known_hosts = known_hosts.KnownHostsCache()
        self.keys = ClientKeys()

    def route(self, dest: Destination) -> tuple[Destination, ...]:
        try:
            return self.config.route(dest)
        except (SshConfigError, HostSpecError) as exc:
            raise Failure(st.UNREACHABLE, str(exc)) from exc

    async def open(self, dest: Destination, tunnel: asyncssh.SSHClientConnection | None) -> Hop:
        try:
            paths = self.config.paths_for(dest)
            hop = self.config.settings(dest)
        except SshConfigError as exc:
            raise Failure(st.UNREACHABLE, str(exc)) from exc
        known = policy = None
        if hop.known_hosts_files is not None:
            try:
                known = self.known_hosts.load(hop.known_hosts_files)
            except (OSError, ValueError) as exc:
                # Without a readable known_hosts no key can be verified: refuse, say which file.
                raise Failure(st.HOST_KEY_UNKNOWN, f"cannot read known_hosts: {exc}") from exc
            accept_into = hop.known_hosts_files[0] if self.options.accept_new_host_keys else None
            policy = known_hosts.HostKeyPolicy(known, accept_into)
        client = Client(policy)
        try:
            keys = self._client_keys(hop)  # raises as asyncssh's connect would have
            conn = await asyncssh.connect(
                dest.host,
                port=dest.port or (),
                username=dest.user or (),
                config=paths,
                tunnel=tunnel,  # None: the route has no jump (ProxyJump is resolved by route())
                client_factory=lambda: client,
                known_hosts=known,
                **keys,
                ignore_encrypted=True,  # a locked key without an agent: skip it, never prompt
                password_auth=False,
                kbdint_auth=False,
                connect_timeout=hop.connect_timeout_s,
                keepalive_interval=hop.keepalive_interval_s,
                keepalive_count_max=hop.keepalive_count,
                encryption_algs=hop.ciphers or PREFERRED_CIPHERS,
            )
        except Exception as exc:  # asyncssh, OSError, timeouts: all become a status
            raise describe(exc, hop, policy.offered if policy else None, self.options.identity) from exc
        return Hop(hop, conn, client)

    def _client_keys(self, hop: HostSettings) -> dict:
        """asyncssh's key arguments, the keys loaded here once (``client_keys``) rather than
        by every connect: the same files, certificates and IdentitiesOnly it would use."""
        files = self._key_files(hop)
        if files is None and hop.identities_only:
            # asyncssh would offer the agent the default keys' public halves: left to it
            return {"client_keys": ()}
        keys = self.keys.load(files, hop.certificate_files, hop.identities_only)
        if hop.identities_only:
            return {"client_keys": keys, "agent_identities": list(files or ())}
        return {"client_keys": keys}

    def _key_files(self, hop: HostSettings) -> tuple[str, ...] | None:
        """The private key files to try (None: ssh(1)'s defaults in ~/.ssh). ``-i`` keys come
        first and the config's (or the default) keys still follow, as in ssh(1)."""
        if not self.options.identity:
            return hop.identity_files or None
        files = list(self.options.identity) + list(hop.identity_files)
        if not hop.identity_files:
            files += [f"~/.ssh/{name}" for name in DEFAULT_KEY_FILES]
        return tuple(path for path in files if _is_file(path))


def _is_file(path: str) -> bool:
    return os.path.isfile(os.path.expanduser(path))
