"""The SSH fleet: one connection per node, one shared connection per jump host, the probe
streamed over each node's connection.

A node's trouble is a status word with a reason (``ssh_errors``), never an exception, and the
node keeps retrying with jittered exponential backoff. Nodes behind the same jump route share
one connection to it, so a fleet of 64 behind a bastion costs the bastion one TCP connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import asyncssh

from dltui.core import status as st
from dltui.probe import bundle

from . import known_hosts
from .base import Sink
from .command import CommandResult, run_on_connection, unreachable
from .hostspec import Destination, HostSpecError, parse_destination
from .protocol import ProbeReader, ProtocolError
from .ssh_config import HostSettings, SshConfig, SshConfigError
from .ssh_errors import DEFAULT_KEY_FILES, Failure, describe, probe_exit_reason, via_jump
from .ssh_options import SshOptions

ProbeExtras = tuple[tuple[str, ...], "str | None"]  # units to report, checkpoint glob

BACKOFF_FIRST_S = 1.0
BACKOFF_CAP_S = 30.0
PINGS_PER_SILENCE = 3  # stdin pings per watchdog period: one lost or late ping is harmless
CLOSE_WAIT_S = 2.0  # how long a closing connection may take to say goodbye
STDERR_KEPT_BYTES = 4096
MAX_LINE_BYTES = 1 << 20  # longer than any hello or keyframe; beyond it a line is garbage
# AES-GCM first: asyncssh's ChaCha20 builds cipher objects for every packet, which costs
# ~0.07 ms per sample through a jump (two layers); an SSH config's Ciphers still wins.
PREFERRED_CIPHERS = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr"


def backoff_s(attempt: int) -> float:
    """Delay before retry ``attempt`` (1, 2, …): doubling up to the cap, jittered so a fleet
    that lost its bastion does not reconnect in lockstep."""
    return min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


class _Client(asyncssh.SSHClient):
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
class _Hop:
    """One open SSH connection (a jump host or a node)."""

    settings: HostSettings
    conn: asyncssh.SSHClientConnection
    client: _Client

    def loss(self) -> Failure:
        """Why this connection ended, as a failure."""
        return describe(self.client.lost or asyncssh.ConnectionLost("closed"), self.settings, None)

    async def close(self) -> None:
        self.conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.wait_closed(), CLOSE_WAIT_S)


class _Connector:
    """Opens one SSH hop the way ssh(1) would: the SSH config, checked host keys, keys and agent,
    and never a password or passphrase prompt. Re-reads config and known_hosts on every
    attempt, so a fix the operator makes is picked up by the next retry."""

    def __init__(self, options: SshOptions):
        self.options = options
        self.config = SshConfig(options)
        self.known_hosts = known_hosts.KnownHostsCache()

    def route(self, dest: Destination) -> tuple[Destination, ...]:
        try:
            return self.config.route(dest)
        except (SshConfigError, HostSpecError) as exc:
            raise Failure(st.UNREACHABLE, str(exc)) from exc

    async def open(self, dest: Destination, tunnel: asyncssh.SSHClientConnection | None) -> _Hop:
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
        client = _Client(policy)
        try:
            conn = await asyncssh.connect(
                dest.host,
                port=dest.port or (),
                username=dest.user or (),
                config=paths,
                tunnel=tunnel,  # None: the route has no jump (ProxyJump is resolved by route())
                client_factory=lambda: client,
                known_hosts=known,
                client_keys=self._client_keys(hop),
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
        return _Hop(hop, conn, client)

    def _client_keys(self, hop: HostSettings) -> list[str] | tuple:
        """``-i`` keys come first and the config's (or the default) keys still follow, as in
        ssh(1); without ``-i`` asyncssh's own defaults already do exactly that."""
        if not self.options.identity:
            return ()
        files = list(self.options.identity) + list(hop.identity_files)
        if not hop.identity_files:
            files += [f"~/.ssh/{name}" for name in DEFAULT_KEY_FILES]
        return [path for path in files if _is_file(path)]


class _JumpPool:
    """One live connection per jump route, shared by every node behind it. A route that is
    being opened is opened once; every node asking meanwhile awaits the same attempt."""

    def __init__(self, connector: _Connector):
        self.connector = connector
        self.hops: dict[tuple[Destination, ...], _Hop] = {}
        self.opening: dict[tuple[Destination, ...], asyncio.Task] = {}

    async def tunnel(self, route: tuple[Destination, ...]) -> _Hop | None:
        if not route:
            return None
        hop = self.hops.get(route)
        if hop is not None and not hop.client.closed:
            return hop
        task = self.opening.get(route)
        if task is None:
            task = self.opening[route] = asyncio.create_task(self._open(route))
            task.add_done_callback(lambda t: self._opened(route, t))
        return await asyncio.shield(task)  # a node giving up must not cancel the others' jump

    def _opened(self, route: tuple[Destination, ...], task: asyncio.Task) -> None:
        del self.opening[route]
        if not task.cancelled():
            task.exception()  # retrieved: every waiter may have been cancelled

    async def _open(self, route: tuple[Destination, ...]) -> _Hop:
        before = await self.tunnel(route[:-1])
        try:
            hop = await self.connector.open(route[-1], before.conn if before else None)
        except Failure as failure:
            raise via_jump(route[-1].text, failure) from None
        self.hops[route] = hop
        return hop

    async def close(self) -> None:
        for task in list(self.opening.values()):
            task.cancel()
        await asyncio.gather(*(hop.close() for hop in reversed(list(self.hops.values()))))
        self.hops.clear()


class _NodeLink:
    """One node: connect, stream the probe, and on any trouble report it and retry."""

    def __init__(
        self,
        name: str,
        connector: _Connector,
        jumps: _JumpPool,
        interval_s: float,
        python: str,
        probe: ProbeExtras = ((), None),
    ):
        self.name = name
        self.connector = connector
        self.jumps = jumps
        self.silence_s = max(30.0, 10 * interval_s)  # the probe's stdin watchdog, and our patience
        self.command = bundle.ssh_command(
            interval_s, self.silence_s, python, *probe, sysfs=connector.options.sysfs
        )
        self.python = python
        self.ok_since: float | None = None  # when this session's probe said hello
        self.node: _Hop | None = (
            None  # the open connection, for commands (actions) beside the probe
        )
        self.status_reason = "not connected yet"

    async def run_command(self, argv, timeout_s: float) -> CommandResult:
        """A new session on this node's live connection; no new handshake."""
        node = self.node
        if node is None or node.client.closed:
            return unreachable(argv, f"{self.name} is not connected ({self.status_reason})")
        return await run_on_connection(node.conn, argv, timeout_s)

    async def run(self, sink: Sink) -> None:
        sink.on_status(self.name, st.CONNECTING)
        attempt = 0
        while True:
            self.ok_since = None
            try:
                failure = await self._session(sink)
            except Exception as exc:  # noqa: BLE001 - a bug here must cost one node, not the fleet
                failure = Failure(
                    st.PROBE_FAILED, f"internal error in dltui: {type(exc).__name__}: {exc}"
                )
            # backoff restarts only after a session that lasted: a flapping node keeps backing off
            lasted = self.ok_since is not None and time.monotonic() - self.ok_since >= BACKOFF_CAP_S
            attempt = 1 if lasted else attempt + 1
            delay = backoff_s(attempt)
            at = time.strftime("%H:%M:%S", time.localtime(time.time() + delay))
            self.status_reason = f"{failure.status}: {failure.reason}"
            sink.on_status(
                self.name, failure.status, f"{failure.reason}; retrying at {at} (attempt {attempt})"
            )
            await asyncio.sleep(delay)

    async def _session(self, sink: Sink) -> Failure:
        """One connection's life; returns why it ended."""
        jump = node = None
        try:
            dest = parse_destination(self.name)
            jump = await self.jumps.tunnel(self.connector.route(dest))
            node = self.node = await self.connector.open(dest, jump.conn if jump else None)
            return self._blame(await self._stream(node, sink), jump)
        except HostSpecError as exc:
            return Failure(st.UNREACHABLE, str(exc))
        except Failure as failure:
            return self._blame(failure, jump)
        except (asyncssh.Error, OSError) as exc:  # opening the session or reading its stream
            if node is None:
                return self._blame(Failure(st.UNREACHABLE, f"{self.name}: {exc}"), jump)
            return self._blame(self._lost(describe(exc, node.settings, None)), jump)
        finally:
            self.node = None
            if node is not None:
                await node.close()

    def _blame(self, failure: Failure, jump: _Hop | None) -> Failure:
        """A node behind a jump that died is unreachable because of the jump."""
        if jump is not None and jump.client.closed:
            return via_jump(jump.settings.dest.text, jump.loss())
        return failure

    def _lost(self, failure: Failure) -> Failure:
        if self.ok_since is not None and failure.status == st.UNREACHABLE:
            return Failure(st.RECONNECTING, failure.reason)
        return failure

    async def _stream(self, node: _Hop, sink: Sink) -> Failure:
        reader = ProbeReader(self.name, sink)
        chan, created = await node.conn.create_session(
            lambda: _ProbeSession(reader, self._said_hello), self.command, encoding=None
        )
        session = cast(_ProbeSession, created)
        chan.write(bundle.payload())
        pinger = asyncio.create_task(self._ping(chan, reader))
        try:
            exc = await session.closed
        finally:
            pinger.cancel()
        if session.bug is not None:
            raise session.bug
        if session.protocol_error is not None:
            return Failure(st.PROBE_FAILED, str(session.protocol_error))
        if pinger.done() and not pinger.cancelled() and pinger.result():
            return Failure(
                st.PROBE_FAILED, f"the probe sent nothing for {self.silence_s:g} s; restarting it"
            )
        status, signal = chan.get_exit_status(), chan.get_exit_signal()
        if status is None and signal is None:
            return self._lost(describe(exc, node.settings, None) if exc else node.loss())
        return Failure(
            st.PROBE_FAILED, probe_exit_reason(self.python, status, signal, session.stderr)
        )

    def _said_hello(self, sink: Sink) -> None:
        self.ok_since = time.monotonic()
        sink.on_status(self.name, st.OK)

    async def _ping(self, chan: asyncssh.SSHClientChannel, reader: ProbeReader) -> bool:
        """Keep the probe's watchdog fed; close the session if the probe goes silent.
        Returns True when it closed a silent probe.

        Pings fall on multiples of the period in loop time, so the whole fleet's go out in one
        event-loop turn: each is four small SSH packets through a jump (asyncssh puts an
        IGNORE packet before every packet), cheap together and costly one by one."""
        loop = asyncio.get_running_loop()
        every = self.silence_s / PINGS_PER_SILENCE
        seen, quiet_since = -1, loop.time()
        while True:
            await asyncio.sleep(every - loop.time() % every)
            try:
                chan.write(b"\n")
            except (asyncssh.Error, OSError):
                return False
            lines = reader.samples + reader.malformed + reader.hello_seen
            if lines != seen:
                seen, quiet_since = lines, loop.time()
            elif loop.time() - quiet_since > self.silence_s:
                chan.close()
                return True


class _ProbeSession(asyncssh.SSHClientSession):
    """The probe's channel, read by callback: each line reaches the reader in the event-loop
    turn its packet arrived in, with no stream buffer and no task to wake per line (this runs
    once per node per sample). ``closed`` resolves when the channel is gone, with the
    connection's error if it was lost."""

    def __init__(self, reader: ProbeReader, on_hello):
        self.reader = reader
        self.on_hello = on_hello
        self.hello_said = False
        self.partial = b""
        self.stderr = b""
        self.protocol_error: ProtocolError | None = None
        self.bug: Exception | None = None  # raised by the sink or the rules: reported, not hidden
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self.chan: asyncssh.SSHClientChannel | None = None

    def connection_made(self, chan: asyncssh.SSHClientChannel) -> None:
        self.chan = chan

    def _close(self) -> None:
        if self.chan is not None:
            self.chan.close()

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.stderr = (self.stderr + data)[-STDERR_KEPT_BYTES:]
            return
        if self.partial:
            data = self.partial + data
        *lines, self.partial = data.split(b"\n")
        if len(self.partial) > MAX_LINE_BYTES:  # no newline in sight: a runaway line
            lines.append(self.partial[:200])
            self.partial = b""
        reader = self.reader
        try:
            for line in lines:
                reader.feed(line)
                if not self.hello_said and reader.hello_seen:
                    self.hello_said = True
                    self.on_hello(reader.sink)
        except ProtocolError as exc:
            self.protocol_error = exc
            self._close()
        except Exception as exc:  # noqa: BLE001 - surfaces in _stream, costs this node only
            self.bug = exc
            self._close()

    def eof_received(self) -> bool:
        # The probe closed its stdout: its last line even without a newline, then a moment
        # for its exit status before we close.
        if self.partial:
            self.data_received(b"\n", None)
        asyncio.get_running_loop().call_later(CLOSE_WAIT_S, self._close)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(exc)


class SshFleet:
    """Every remote node, over SSH (see the module docstring)."""

    def __init__(
        self,
        hosts: list[str],
        interval_s: float,
        options: SshOptions,
        probe_extras: Callable[[str], ProbeExtras] | None = None,
    ):
        self.names = list(hosts)
        self.interval_s = interval_s
        self.options = options
        self.probe_extras = probe_extras  # node name -> (units, checkpoint glob) for its probe
        self.links: dict[str, _NodeLink] = {}

    async def run_command(self, node: str, argv, timeout_s: float) -> CommandResult:
        """``argv`` on ``node`` as a new session on its probe's connection (see command.py)."""
        link = self.links.get(node)
        if link is None:
            return unreachable(argv, f"{node} is not connected")
        return await link.run_command(argv, timeout_s)

    async def run(self, sink: Sink) -> None:
        connector = _Connector(self.options)
        jumps = _JumpPool(connector)
        extras = self.probe_extras or (lambda name: ((), None))
        links = [
            _NodeLink(n, connector, jumps, self.interval_s, self.options.python, extras(n))
            for n in self.names
        ]
        self.links = {link.name: link for link in links}
        tasks = [asyncio.create_task(link.run(sink), name=f"ssh {link.name}") for link in links]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # each closes its node connection
            await jumps.close()


class SshCommands:
    """Commands on nodes without a dashboard (``dltui unit``, ``dltui signal``, benchmarks):
    one connection per node, opened on first use the way the dashboard opens it (SSH config,
    shared jump connection, checked host keys), reused for every later command."""

    def __init__(self, options: SshOptions):
        self.connector = _Connector(options)
        self.jumps = _JumpPool(self.connector)
        self.hops: dict[str, _Hop] = {}
        self.failures: dict[str, str] = {}

    async def connect(self, node: str) -> str | None:
        """None when connected, else the reason in plain words."""
        hop = self.hops.get(node)
        if hop is not None and not hop.client.closed:
            return None
        jump = None
        try:
            dest = parse_destination(node)
            jump = await self.jumps.tunnel(self.connector.route(dest))
            self.hops[node] = await self.connector.open(dest, jump.conn if jump else None)
            return None
        except HostSpecError as exc:
            return str(exc)
        except Failure as exc:
            failure = exc  # a lost jump host is the better reason
            if jump is not None and jump.client.closed:
                failure = via_jump(jump.settings.dest.text, jump.loss())
            return f"{failure.status}: {failure.reason}"

    async def run_command(self, node: str, argv, timeout_s: float) -> CommandResult:
        problem = await self.connect(node)
        if problem is not None:
            return unreachable(argv, problem)
        return await run_on_connection(self.hops[node].conn, argv, timeout_s)

    async def close(self) -> None:
        await asyncio.gather(*(hop.close() for hop in self.hops.values()))
        self.hops.clear()
        await self.jumps.close()


def _is_file(path: str) -> bool:
    return os.path.isfile(os.path.expanduser(path))
