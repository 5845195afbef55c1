"""Running a command on a node: the one typed seam every action, the burn-in, the drive and
stack reads and the scheduler lookups go through.

A ``Runner`` takes an argv, sends it quoted (``shell_line``), and answers a ``CommandResult``;
it never raises for the node's trouble: that is the result's ``problem`` (``UNREACHABLE``,
``TIMED_OUT``, ``REFUSED``), which ``CommandResult.check`` turns into the contract's one error,
``CommandError``, for a caller that cannot go on without an answer. Over SSH it is a new
session on the node's existing connection (no new handshake: the dashboard's fleet, or
``ssh.commands.SshCommands`` without a dashboard); here it is a subprocess (``LocalRunner``). A
hang is cut off after the timeout and reported.

``NodeCommands`` is the same contract with what the burn-in needs besides: bytes on stdin, a
whole stdout capped at a size (else refused), bytes out, a command read as it runs
(``stream``), the node's address for a peer, and a reconnect after a drop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from dltui.core.text import clean

from .base import Transport

# The node's trouble, as one word, beside the command's own exit status.
UNREACHABLE = "unreachable"  # no live connection to the node
TIMED_OUT = "timeout"  # cut off after the timeout; the node may still be running it
REFUSED = "refused"  # it answered more than asked for (``limit``), or what no reader can take
OUTPUT_KEPT = 256 * 1024  # per stream: a journal tail, never a whole journal
READ_CHUNK = 64 * 1024


def shell_line(argv: Sequence[str]) -> str:
    """The command line as the remote shell receives it (what a confirm dialog shows)."""
    return " ".join(shlex.quote(a) for a in argv)


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_status: int | None  # None: it did not run to completion (see problem)
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    problem: str | None = None  # UNREACHABLE, TIMED_OUT or REFUSED
    reason: str | None = None  # plain words for ``problem``
    data: bytes = b""  # stdout as bytes, asked for with ``binary=True`` (then ``stdout`` is "")

    @property
    def ok(self) -> bool:
        return self.problem is None and self.exit_status == 0

    def check(self) -> CommandResult:
        """This result, once it ran: the node's trouble (``problem``) raised as ``CommandError``."""
        if self.problem is not None:
            raise CommandError(self.problem, self.reason or self.problem)
        return self

    def first_error_line(self) -> str:
        """The node's first words of complaint, cleaned (``dltui.core.text``): they are shown."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                if line.strip():
                    return clean(line.strip())
        if self.reason:
            return self.reason
        return f"exit status {self.exit_status}"


class CommandError(Exception):
    """The contract's one error: the node's trouble (``problem``: ``UNREACHABLE``, ``TIMED_OUT``
    or ``REFUSED``) in plain words (``reason``), for a caller that cannot go on without an
    answer (``CommandResult.check``, a ``NodeCommands.stream``)."""

    def __init__(self, problem: str, reason: str):
        super().__init__(reason)
        self.problem = problem
        self.reason = reason


class Runner(Protocol):
    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        """Run ``argv`` on ``node``; a hang is cut off after ``timeout_s``."""
        ...


class CommandStream(Protocol):
    """A command read as it runs (``NodeCommands.stream``): its stdout as it comes, then how it
    ended."""

    stdout: Any  # read(n) -> bytes, b"" at its end (asyncio's and asyncssh's readers)

    @property
    def exit_status(self) -> int | None: ...

    async def said(self) -> str:
        """What it wrote on stderr, once it ended ("" when nothing came within a second)."""
        ...


class NodeCommands(Runner, Protocol):
    """The contract with what the burn-in needs besides one argv and its result; over SSH, on
    the node's existing connection (``transport.ssh.commands``)."""

    @property
    def python(self) -> str:
        """The nodes' interpreter, for code shipped to them (``SshOptions.python``)."""
        ...

    async def run_command(
        self,
        node: str,
        argv: Sequence[str],
        timeout_s: float,
        *,
        stdin: bytes | None = None,
        limit: int | None = None,
        binary: bool = False,
    ) -> CommandResult:
        """As ``Runner.run_command``; ``stdin``: bytes sent, then end of file; ``limit``: the
        most stdout taken, whole (more: ``REFUSED``, not a byte more read); ``binary``: stdout
        as bytes (``CommandResult.data``)."""
        ...

    def stream(self, node: str, argv: Sequence[str]) -> AbstractAsyncContextManager[CommandStream]:
        """``argv`` started, read while it runs; raises ``CommandError`` for the node's trouble,
        when it starts or while it is read."""
        ...

    def address(self, node: str) -> str:
        """The address another node reaches ``node`` at (the SSH config's HostName)."""
        ...

    async def reconnect(self, node: str) -> None:
        """After a drop: the next command goes over a new connection (or the one its owner,
        the dashboard's fleet, reopens)."""
        ...


class LocalRunner:
    """This machine: a subprocess with no shell (the argv is already exact)."""

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        started = time.monotonic()
        env = dict(os.environ, LC_ALL="C", SYSTEMD_PAGER="cat", PAGER="cat")
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return CommandResult(
                tuple(argv), 127, "", f"{argv[0]}: {exc.strerror}", time.monotonic() - started
            )
        assert proc.stdout is not None and proc.stderr is not None  # PIPE above

        async def run() -> tuple[bytes, bytes]:
            out = await asyncio.gather(read_tail(proc.stdout), read_tail(proc.stderr))
            await proc.wait()
            return out[0], out[1]

        try:
            out, err = await asyncio.wait_for(run(), timeout_s)
        except asyncio.TimeoutError:  # noqa: UP041 - not the builtin's alias before Python 3.11
            _kill_group(proc.pid)
            await proc.wait()
            return timed_out(argv, timeout_s, time.monotonic() - started)
        return CommandResult(
            tuple(argv), proc.returncode, _text(out), _text(err), time.monotonic() - started
        )


class ClosingRunner(Runner, Protocol):
    async def close(self) -> None:
        """Its connections closed."""
        ...


class HostCommands:
    """``dltui unit`` / ``signal``: this machine for ``local_names``, ``remote()`` for the rest
    (``ssh.commands.SshCommands``: one connection per node, opened on first use and reused),
    made for the first remote node: a command on this machine never imports asyncssh."""

    def __init__(self, local_names: Collection[str], remote: Callable[[], ClosingRunner]):
        self.local_names = local_names
        self.local = LocalRunner()
        self.make_remote = remote
        self.remote: ClosingRunner | None = None

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        if node in self.local_names:
            return await self.local.run_command(node, argv, timeout_s)
        if self.remote is None:
            self.remote = self.make_remote()
        return await self.remote.run_command(node, argv, timeout_s)

    async def close(self) -> None:
        if self.remote is not None:
            await self.remote.close()


def timed_out(argv: Sequence[str], timeout_s: float, duration_s: float) -> CommandResult:
    return CommandResult(
        tuple(argv),
        None,
        duration_s=duration_s,
        problem=TIMED_OUT,
        reason=f"no answer within {timeout_s:g} s: cut off (the node may still be running it)",
    )


def unreachable(argv: Sequence[str], reason: str) -> CommandResult:
    return CommandResult(tuple(argv), None, problem=UNREACHABLE, reason=reason)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, 9)  # its own session: the command and anything it started
    except ProcessLookupError:
        pass


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        data = data[-OUTPUT_KEPT:].decode("utf-8", "replace")
    return data[-OUTPUT_KEPT:]


async def read_tail(stream, keep: int = OUTPUT_KEPT):
    """Everything ``stream`` says until its end, of which only the last ``keep`` bytes (or
    characters) are held while it is read: a node printing without end costs this much memory,
    never more (``stream.read(n)`` of asyncio or asyncssh; SSH flow control holds the rest)."""
    parts: list = []
    held = 0
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            break
        parts.append(chunk)
        held += len(chunk)
        if held > 2 * keep:  # join now and then, not per chunk
            parts = [chunk[:0].join(parts)[-keep:]]
            held = len(parts[0])
    return parts[0][:0].join(parts)[-keep:] if parts else None


async def read_at_most(stream, limit: int):
    """Everything ``stream`` says until its end, or None as soon as it has said more than
    ``limit`` bytes (or characters): what is read is never more than that and one chunk."""
    parts: list = []
    held = 0
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            return chunk[:0].join(parts) if parts else chunk
        held += len(chunk)
        if held > limit:
            return None
        parts.append(chunk)


class _TooMuch(Exception):
    """stdout passed ``limit``: the session is closed, not a byte more read."""


async def run_on_connection(
    conn,
    argv: Sequence[str],
    timeout_s: float,
    *,
    stdin: bytes | None = None,
    limit: int | None = None,
    binary: bool = False,
) -> CommandResult:
    """``argv`` as a new session on an open asyncssh connection (no new handshake); the
    options as ``NodeCommands.run_command`` takes them."""
    from .ssh.library import asyncssh

    started = time.monotonic()
    process = None

    async def run():
        nonlocal process
        process = await conn.create_process(
            shell_line(argv), encoding=None, **({"stdin": asyncssh.DEVNULL} if stdin is None else {})
        )
        if stdin is not None:
            process.stdin.write(stdin)
            process.stdin.write_eof()
        # stderr beside stdout, not after it: a node that fills stderr must not stall stdout
        errors = asyncio.ensure_future(read_tail(process.stderr))
        try:
            out = await (read_tail(process.stdout) if limit is None else read_at_most(process.stdout, limit))
            if out is None and limit is not None:  # read_tail's None is silence, not too much
                raise _TooMuch
            err = await errors
        finally:
            errors.cancel()
        return (out, err), await process.wait(check=False)

    done = None
    # asyncio.wait, not wait_for: before Python 3.12, wait_for drops a cancellation (Ctrl-C)
    # that arrives as the command ends, and the action would go on as if never stopped.
    task = asyncio.ensure_future(run())
    try:
        finished, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not finished:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, asyncssh.Error, OSError):
                await task
            return timed_out(argv, timeout_s, time.monotonic() - started)
        done = task.result()
    except asyncio.CancelledError:
        task.cancel()
        raise
    except _TooMuch:
        return CommandResult(
            tuple(argv), None, duration_s=time.monotonic() - started, problem=REFUSED,
            reason=f"answered with more than {limit} bytes: refused",
        )
    except (asyncssh.Error, OSError) as exc:
        return unreachable(argv, f"the connection failed: {exc}")
    finally:
        # Cut off, refused or cancelled: close the channel, or the session stays open on the
        # node and a few such commands use up sshd's MaxSessions on the probe's connection.
        if done is None and process is not None:
            process.close()
    assert done is not None  # set, or returned above
    (out, err), ended = done
    status = ended.exit_status
    if status is None and ended.exit_signal:
        status = 128 + 15
    return CommandResult(
        tuple(argv),
        status,
        "" if binary else _text(out),
        _text(err),
        time.monotonic() - started,
        None if status is not None else UNREACHABLE,
        None
        if status is not None
        else "the session ended without an exit status (connection lost)",
        bytes(out or b"") if binary else b"",
    )


class TakesCommands:
    """A transport whose nodes take commands says so by this base (the SSH fleet, this machine,
    the demo's simulation): ``FleetRunner`` sends them there. One without it (a replay, a
    Prometheus fleet) cannot, and a command for its nodes is answered unreachable."""

    names: list[str]

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        raise NotImplementedError

    def node_commands(self) -> NodeCommands | None:
        """The whole contract (``NodeCommands``: the burn-in's) on this transport's nodes and
        connections; None where it has none (this machine in process, the demo)."""
        return None


class FleetRunner:
    """Commands for any node of the dashboard, through the transport that serves it (the SSH
    fleet's live connections, this machine, the demo's simulation). A transport that cannot
    run commands (a replay) answers unreachable with the reason."""

    def __init__(self, transports: Sequence[Transport]):
        self.by_node: dict[str, TakesCommands | None] = {
            name: t if isinstance(t, TakesCommands) else None for t in transports for name in t.names
        }

    def can_run(self, node: str) -> bool:
        return self.by_node.get(node) is not None

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        transport = self.by_node.get(node)
        if transport is None:
            return unreachable(
                argv, f"{node}: this view cannot run commands (a recording, or an unknown node)"
            )
        return await transport.run_command(node, argv, timeout_s)
