"""Running one command on a node: the typed seam every action (and the burn-in) goes through.

A ``Runner`` takes an argv, sends it quoted (``shell_line``), and answers a ``CommandResult``;
it never raises for the node's trouble. Over SSH it is a new session on the node's existing
connection (no new handshake: ``SshFleet.run``, or ``SshCommands`` without a dashboard); here
it is a subprocess (``LocalRunner``). A hang is cut off after the timeout and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from dltui.core.text import clean

# The node's trouble, as one word, beside the command's own exit status.
UNREACHABLE = "unreachable"  # no live connection to the node
TIMED_OUT = "timeout"  # cut off after the timeout; the node may still be running it
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
    problem: str | None = None  # UNREACHABLE or TIMED_OUT
    reason: str | None = None  # plain words for ``problem``

    @property
    def ok(self) -> bool:
        return self.problem is None and self.exit_status == 0

    def first_error_line(self) -> str:
        """The node's first words of complaint, cleaned (``dltui.core.text``): they are shown."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                if line.strip():
                    return clean(line.strip())
        if self.reason:
            return self.reason
        return f"exit status {self.exit_status}"


class Runner(Protocol):
    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        """Run ``argv`` on ``node``; a hang is cut off after ``timeout_s``."""
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


async def run_on_connection(conn, argv: Sequence[str], timeout_s: float) -> CommandResult:
    """``argv`` as a new session on an open asyncssh connection (no new handshake)."""
    from .ssh.library import asyncssh

    started = time.monotonic()
    process = None

    async def run():
        nonlocal process
        process = await conn.create_process(
            shell_line(argv), stdin=asyncssh.DEVNULL, encoding="utf-8", errors="replace"
        )
        out = await asyncio.gather(read_tail(process.stdout), read_tail(process.stderr))
        return out, await process.wait(check=False)

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
    except (asyncssh.Error, OSError) as exc:
        return unreachable(argv, f"the connection failed: {exc}")
    finally:
        # Cut off or cancelled: close the channel, or the session stays open on the node
        # and a few such commands use up sshd's MaxSessions on the probe's connection.
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
        _text(out),
        _text(err),
        time.monotonic() - started,
        None if status is not None else UNREACHABLE,
        None
        if status is not None
        else "the session ended without an exit status (connection lost)",
    )


class FleetRunner:
    """Commands for any node of the dashboard, through the transport that serves it (the SSH
    fleet's live connections, this machine, the demo's simulation). A transport that cannot
    run commands (a replay) answers unreachable with the reason."""

    def __init__(self, transports: Sequence[object]):
        self.by_node = {name: t for t in transports for name in getattr(t, "names", ())}

    def can_run(self, node: str) -> bool:
        return hasattr(self.by_node.get(node), "run_command")

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        transport = self.by_node.get(node)
        if transport is None or not hasattr(transport, "run_command"):
            return unreachable(
                argv, f"{node}: this view cannot run commands (a recording, or an unknown node)"
            )
        return await transport.run_command(node, argv, timeout_s)
