"""The session runner: the one place that opens a node's connection — through its jump
route's shared connection — and blames a jump that died for the node's trouble.

Used by the fleet transport (each node's probe connection, ``fleet``) and by the commands
without a dashboard (``commands.SshCommands``: the CLI's actions and burn-in). A connection for
one-off commands is opened on first use, reused, and reopened after a drop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from dltui.core import status as st

from ..command import CommandResult, run_on_connection, unreachable
from ..hostspec import HostSpecError, parse_destination
from .connector import Connector, Hop
from .errors import Failure, via_jump
from .jump_pool import JumpPool
from .options import SshOptions


def blame(failure: Failure, jump: Hop | None) -> Failure:
    """A node behind a jump that died is unreachable because of the jump: that is the reason."""
    if jump is not None and jump.client.closed:
        return via_jump(jump.settings.dest.text, jump.loss())
    return failure


@dataclass
class Opened:
    """A node's connection and the jump connection it goes through (None: direct)."""

    node: Hop
    jump: Hop | None

    def blame(self, failure: Failure) -> Failure:
        return blame(failure, self.jump)


class SessionRunner:
    def __init__(self, options: SshOptions):
        self.options = options
        self.connector = Connector(options)
        self.jumps = JumpPool(self.connector)
        self.hops: dict[str, Hop] = {}  # one-off commands' connections, per node

    async def open(self, name: str) -> Opened:
        """A new connection to node ``name`` (as ssh(1) takes it). Raises ``Failure``: a bad
        name, the node's trouble, or the trouble of the jump it goes through."""
        jump = None
        try:
            dest = parse_destination(name)
            jump = await self.jumps.tunnel(self.connector.route(dest))
            node = await self.connector.open(dest, jump.conn if jump else None)
        except HostSpecError as exc:
            raise Failure(st.UNREACHABLE, str(exc)) from None
        except Failure as failure:
            raise blame(failure, jump) from None
        return Opened(node, jump)

    async def connection(self, name: str) -> Hop:
        """The node's connection for one-off commands: opened on first use, then reused until
        it drops. Raises ``Failure``."""
        hop = self.hops.get(name)
        if hop is not None and not hop.client.closed:
            return hop
        hop = self.hops[name] = (await self.open(name)).node
        return hop

    async def run(self, name: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        """``argv`` as a new session on the node's connection; its trouble as the result."""
        try:
            hop = await self.connection(name)
        except Failure as failure:
            return unreachable(argv, f"{failure.status}: {failure.reason}")
        return await run_on_connection(hop.conn, argv, timeout_s)

    def hostname(self, name: str) -> str:
        """The address the SSH config gives a node (for a peer to reach it)."""
        return self.connector.config.settings(parse_destination(name)).hostname

    async def drop(self, name: str) -> None:
        hop = self.hops.pop(name, None)
        if hop is not None:
            await hop.close()

    async def close(self) -> None:
        await asyncio.gather(*(hop.close() for hop in self.hops.values()))
        self.hops.clear()
        await self.jumps.close()
