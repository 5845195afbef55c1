"""One live connection per jump route, shared by every node behind it."""

from __future__ import annotations

import asyncio

from ..hostspec import Destination
from .connector import Connector, Hop
from .errors import Failure, via_jump


class JumpPool:
    """One live connection per jump route, shared by every node behind it. A route that is
    being opened is opened once; every node asking meanwhile awaits the same attempt."""

    def __init__(self, connector: Connector):
        self.connector = connector
        self.hops: dict[tuple[Destination, ...], Hop] = {}
        self.opening: dict[tuple[Destination, ...], asyncio.Task] = {}

    async def tunnel(self, route: tuple[Destination, ...]) -> Hop | None:
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

    async def _open(self, route: tuple[Destination, ...]) -> Hop:
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
