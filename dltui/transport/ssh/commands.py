"""The node-command contract over SSH (``transport.command``: ``Runner``, ``NodeCommands``):
every command a new session on the node's one connection.

- ``FleetCommands``: the dashboard's, on the connections its fleet already holds (the probe's);
  no second pool beside the fleet. A node whose connection is down answers unreachable, and the
  fleet reconnects it as it does for its probe.
- ``SshCommands``: without a dashboard (``dltui unit``, ``dltui burn-in``, benchmarks): one
  connection per node, opened on first use the way the dashboard opens it (SSH config, shared
  jump connection, checked host keys), reused for every later command (``SessionRunner``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

from ..command import (
    UNREACHABLE,
    CommandError,
    CommandResult,
    CommandStream,
    run_on_connection,
    shell_line,
    unreachable,
)
from ..hostspec import parse_destination
from .config import SshConfig
from .connector import Hop
from .errors import Failure, describe
from .library import asyncssh
from .options import SshOptions
from .sessions import SessionRunner


class _Link(Protocol):
    """One node of a fleet, as ``FleetCommands`` reads it (``fleet._NodeLink``)."""

    node: Hop | None  # its open connection, None while it is down
    status_reason: str


class _Fleet(Protocol):
    """A running SSH fleet, as ``FleetCommands`` reads it (``fleet.SshFleet``)."""

    names: list[str]
    options: SshOptions

    @property
    def links(self) -> Mapping[str, _Link]: ...


class _Stream:
    """``CommandStream`` over an asyncssh process."""

    def __init__(self, process: asyncssh.SSHClientProcess[Any]):
        self.process = process
        self.stdout = process.stdout

    @property
    def exit_status(self) -> int | None:
        return self.process.exit_status

    async def said(self) -> str:
        try:
            data = await asyncio.wait_for(self.process.stderr.read(), 1.0)
        except (asyncio.TimeoutError, asyncssh.Error, OSError):  # noqa: UP041 - 3.10
            return ""
        return bytes(data).decode(errors="replace").strip()


class _OnConnections:
    """``NodeCommands`` on whichever connection ``hop`` gives a node (raising ``CommandError``)."""

    options: SshOptions

    @property
    def python(self) -> str:
        return self.options.python

    async def hop(self, node: str) -> Hop:
        raise NotImplementedError

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
        try:
            hop = await self.hop(node)
        except CommandError as exc:
            return unreachable(argv, exc.reason)
        return await run_on_connection(hop.conn, argv, timeout_s, stdin=stdin, limit=limit, binary=binary)

    @asynccontextmanager
    async def stream(self, node: str, argv: Sequence[str]) -> AsyncIterator[CommandStream]:
        hop = await self.hop(node)
        try:
            process: asyncssh.SSHClientProcess[Any] = await hop.conn.create_process(shell_line(argv), encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise _lost(exc, hop) from None
        process.stdin.write_eof()  # nothing to say to it (close() would close the whole channel)
        try:
            yield _Stream(process)
        except (asyncssh.Error, OSError) as exc:
            raise _lost(exc, hop) from None
        finally:
            process.close()

    def address(self, node: str) -> str:
        return SshConfig(self.options).settings(parse_destination(node)).hostname

    async def reconnect(self, node: str) -> None:
        return None


def _lost(exc: BaseException, hop: Hop) -> CommandError:
    return CommandError(UNREACHABLE, describe(exc, hop.settings, None).reason)


class SshCommands(_OnConnections):
    """Without a dashboard: one connection per node, opened on first use, reused, reopened
    after ``reconnect``."""

    def __init__(self, options: SshOptions):
        self.options = options
        self.sessions = SessionRunner(options)

    async def hop(self, node: str) -> Hop:
        try:
            return await self.sessions.connection(node)
        except Failure as failure:
            raise CommandError(UNREACHABLE, failure.reason) from None

    async def connect(self, node: str) -> str | None:
        """None once connected to ``node``, else why not, in plain words."""
        try:
            await self.sessions.connection(node)
        except Failure as failure:
            return f"{failure.status}: {failure.reason}"
        return None

    def address(self, node: str) -> str:
        return self.sessions.hostname(node)

    async def reconnect(self, node: str) -> None:
        await self.sessions.drop(node)

    async def close(self) -> None:
        await self.sessions.close()


class FleetCommands(_OnConnections):
    """The dashboard's: on the connections of its running ``SshFleet`` (the probe's). Nothing to
    close: the fleet owns them; after a drop the fleet reconnects the node itself."""

    def __init__(self, fleet: _Fleet):
        self.fleet = fleet
        self.options = fleet.options
        self.names = tuple(fleet.names)

    async def hop(self, node: str) -> Hop:
        link = self.fleet.links.get(node)
        hop = link.node if link is not None else None
        if link is None or hop is None or hop.client.closed:
            why = link.status_reason if link is not None else "not connected yet"
            raise CommandError(UNREACHABLE, f"{node} is not connected ({why})")
        return hop

