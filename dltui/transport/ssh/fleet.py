"""The SSH fleet: one connection per node, one shared connection per jump host, the probe
streamed over each node's connection.

A node's trouble is a status word with a reason (``errors``), never an exception, and the
node keeps retrying with jittered exponential backoff. Nodes behind the same jump route share
one connection to it, so a fleet of 64 behind a bastion costs the bastion one TCP connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

from dltui.core import status as st
from dltui.node import bundle

from ..base import Sink
from ..command import CommandResult, NodeCommands, TakesCommands, run_on_connection, unreachable
from ..protocol import MAX_LINE_BYTES, ProbeReader, ProtocolError
from .connector import BACKOFF_CAP_S, CLOSE_WAIT_S, Hop, backoff_s
from .errors import Failure, describe, probe_exit_reason
from .library import asyncssh
from .options import SshOptions
from .sessions import SessionRunner

# units to report, checkpoint glob, training containers (names or label=K=V)
ProbeExtras = tuple[tuple[str, ...], "str | None", tuple[str, ...]]

PINGS_PER_SILENCE = 3  # stdin pings per watchdog period: one lost or late ping is harmless
STDERR_KEPT_BYTES = 4096
# A loop turn's share of the bundle: one SSH data packet that, with its framing (< 64 bytes),
# still fits one 32 KiB packet of the jump's channel (OpenSSH's default packet size for both)
BUNDLE_CHUNK_BYTES = 32768 - 64
# Nodes whose first steps (the SSH config read for each, ~0.6 ms) run in one event-loop turn:
# 64 at once held the dashboard for ~40 ms; in groups they wait for the jump all the same.
STARTS_PER_TURN = 8


class _NodeLink:
    """One node: connect, stream the probe, and on any trouble report it and retry."""

    def __init__(
        self,
        name: str,
        sessions: SessionRunner,
        interval_s: float,
        python: str,
        probe: ProbeExtras = ((), None, ()),
        bundle_ready: asyncio.Future | None = None,
    ):
        self.name = name
        self.sessions = sessions
        self.silence_s = max(30.0, 10 * interval_s)  # the probe's stdin watchdog, and our patience
        self.probe_extras = probe
        self.python = python
        self.interval_s = interval_s
        # the probe's bundle, built in a thread (SshFleet.run): a session waits for it rather
        # than building it again on the event loop
        self.bundle_ready = bundle_ready
        self.chan: asyncssh.SSHClientChannel | None = None  # the probe's, while it streams
        self.ok_since: float | None = None  # when this session's probe said hello
        self.node: Hop | None = (
            None  # the open connection, for commands (actions) beside the probe
        )
        self.status_reason = "not connected yet"

    @property
    def command(self) -> str:
        """The probe's command line, the one place it is built: for the first connect and for
        every reconnect after an interval change alike (the units, the checkpoint glob and
        ``[probe] sysfs`` included)."""
        return bundle.ssh_command(
            self.interval_s,
            self.silence_s,
            self.python,
            *self.probe_extras,
            sysfs=self.sessions.options.sysfs,
        )

    def set_interval(self, interval_s: float) -> None:
        """Tell the running probe (on its stdin, beside the pings); a probe started later (a
        reconnect) gets it on its command line. The watchdog's period stays as it started."""
        self.interval_s = interval_s
        if self.chan is not None:
            try:
                self.chan.write(b"interval %r\n" % float(interval_s))
            except (asyncssh.Error, OSError):
                pass  # the session is ending: the next one starts with the new command line

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
                self.name, failure.status, st.with_retry(failure.reason, f"at {at} (attempt {attempt})")
            )
            await asyncio.sleep(delay)

    async def _session(self, sink: Sink) -> Failure:
        """One connection's life; returns why it ended."""
        opened = None
        try:
            opened = await self.sessions.open(self.name)
            self.node = opened.node
            return opened.blame(await self._stream(opened.node, sink))
        except Failure as failure:
            return opened.blame(failure) if opened else failure
        except (asyncssh.Error, OSError) as exc:  # opening the session or reading its stream
            if opened is None:
                return Failure(st.UNREACHABLE, f"{self.name}: {exc}")
            return opened.blame(self._lost(describe(exc, opened.node.settings, None)))
        finally:
            self.node = None
            if opened is not None:
                await opened.node.close()

    def _lost(self, failure: Failure) -> Failure:
        if self.ok_since is not None and failure.status == st.UNREACHABLE:
            return Failure(st.RECONNECTING, failure.reason)
        return failure

    async def _stream(self, node: Hop, sink: Sink) -> Failure:
        if self.bundle_ready is not None:
            await asyncio.shield(self.bundle_ready)  # one node giving up must not cancel it
        reader = ProbeReader(self.name, sink)
        chan, created = await node.conn.create_session(
            lambda: _ProbeSession(reader, self._said_hello), self.command, encoding=None
        )
        session = cast(_ProbeSession, created)
        await self._send_bundle(chan, session)
        self.chan = chan  # stdin's lines (pings, intervals) only after the whole bundle
        pinger = asyncio.create_task(self._ping(chan, reader))
        try:
            exc = await session.closed
        finally:
            self.chan = None
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

    async def _send_bundle(self, chan: asyncssh.SSHClientChannel, session: _ProbeSession) -> None:
        """The bundle in chunks with a loop turn between them, as the channel takes them: a
        fleet's 64 x 195 KB, each encrypted twice through a jump, written in one turn held the
        dashboard's frames. A probe that has already ended (no python3) stops the writing; its
        exit status says why."""
        data = bundle.payload()
        for start in range(0, len(data), BUNDLE_CHUNK_BYTES):
            await session.writable.wait()
            try:
                chan.write(data[start : start + BUNDLE_CHUNK_BYTES])
            except (asyncssh.Error, OSError):
                return
            await asyncio.sleep(0)

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
        self.writable = asyncio.Event()  # the channel's flow control (set: it takes more)
        self.writable.set()

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

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()  # a write waiting for room finds the channel gone instead
        if not self.closed.done():
            self.closed.set_result(exc)


class SshFleet(TakesCommands):
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

    def set_interval(self, interval_s: float) -> None:
        """Every node's probe samples at ``interval_s`` from its next tick (transport.base)."""
        self.interval_s = interval_s
        for link in self.links.values():
            link.set_interval(interval_s)

    def node_commands(self) -> NodeCommands:
        """The burn-in's commands on these same connections (no second pool beside them)."""
        from .commands import FleetCommands

        return FleetCommands(self)

    async def run_command(self, node: str, argv, timeout_s: float) -> CommandResult:
        """``argv`` on ``node`` as a new session on its probe's connection (see command.py)."""
        link = self.links.get(node)
        if link is None:
            return unreachable(argv, f"{node} is not connected")
        return await link.run_command(argv, timeout_s)

    async def run(self, sink: Sink) -> None:
        sessions = SessionRunner(self.options)
        extras = self.probe_extras or (lambda name: ((), None, ()))
        # The probe's bundle is built once (its sources read, amdsmi's docstrings stripped,
        # zlib -9 of 650 KB: ~0.3 s of CPU): in a thread while the connections are set up, not
        # on the event loop, where it held the dashboard's first frames.
        compressing = asyncio.ensure_future(asyncio.to_thread(bundle.prepare))
        links = [
            _NodeLink(n, sessions, self.interval_s, self.options.python, extras(n), compressing)
            for n in self.names
        ]
        self.links = {link.name: link for link in links}
        tasks: list[asyncio.Task] = []
        try:
            for i, link in enumerate(links):
                if i and i % STARTS_PER_TURN == 0:
                    await asyncio.sleep(0)  # the loop's turn: a frame may be painted between
                tasks.append(asyncio.create_task(link.run(sink), name=f"ssh {link.name}"))
            await asyncio.gather(*tasks)
        finally:
            compressing.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # each closes its node connection
            await sessions.close()
