"""Commands on nodes without a dashboard: ``dltui unit``, ``dltui signal``, benchmarks."""

from __future__ import annotations

import asyncio

from ..command import CommandResult, run_on_connection, unreachable
from ..hostspec import HostSpecError, parse_destination
from .connector import Connector, Hop
from .errors import Failure, via_jump
from .jump_pool import JumpPool
from .options import SshOptions


class SshCommands:
    """Commands on nodes without a dashboard (``dltui unit``, ``dltui signal``, benchmarks):
    one connection per node, opened on first use the way the dashboard opens it (SSH config,
    shared jump connection, checked host keys), reused for every later command."""

    def __init__(self, options: SshOptions):
        self.connector = Connector(options)
        self.jumps = JumpPool(self.connector)
        self.hops: dict[str, Hop] = {}
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
