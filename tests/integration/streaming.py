"""Run an ``SshFleet`` into a real ``FleetState`` inside a test and wait for what it reports.

Waits poll the state (no fixed sleeps); their limits only stop a broken test from hanging,
they assert nothing about speed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Callable

import psutil

from dltui.core.rules import build_engine
from dltui.core.state import FleetState
from dltui.transport.ssh.fleet import ProbeExtras, SshFleet
from dltui.transport.ssh.options import SshOptions

WAIT_LIMIT_S = 30.0


def tcp_connections_to(port: int) -> int:
    """This process's established TCP connections to ``port``."""
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


class RecordingFleet(FleetState):
    """FleetState (with the real rules engine) that also keeps every status report, in order."""

    def __init__(self, names):
        super().__init__(names, engine=build_engine())
        self.statuses: list[tuple[str, str, str | None]] = []
        self.hellos: dict[str, int] = {name: 0 for name in names}

    def on_status(self, name, status, reason=None):
        self.statuses.append((name, status, reason))
        super().on_status(name, status, reason)

    def on_hello(self, name, facts, interval_s=None):
        self.hellos[name] = self.hellos.get(name, 0) + 1
        super().on_hello(name, facts, interval_s)

    def samples(self, name: str) -> int:
        return len(self.nodes[name].history.time)

    def seen(self, name: str, status: str) -> list[str | None]:
        """Reasons of every ``status`` report for ``name``."""
        return [r for n, s, r in self.statuses if n == name and s == status]

    def describe(self) -> str:
        return "; ".join(f"{n.name}={n.status} ({n.reason}) samples={self.samples(n.name)}" for n in self)


class Streaming:
    """``async with Streaming(hosts, options) as s:`` runs the fleet until the block ends."""

    def __init__(
        self,
        hosts: list[str],
        options: SshOptions | None = None,
        interval_s: float = 0.2,
        probe: ProbeExtras | None = None,
    ):
        extras = (lambda name: probe) if probe is not None else None
        self.fleet = SshFleet(hosts, interval_s, options or SshOptions(), extras)
        self.state = RecordingFleet(hosts)
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> "Streaming":
        self.task = asyncio.create_task(self.fleet.run(self.state))
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None

    async def until(self, condition: Callable[[RecordingFleet], bool], what: str, limit_s: float = WAIT_LIMIT_S) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        while not condition(self.state):
            self.state.tick()  # the redraw tick: the rules judged on time (node_unreachable)
            if self.task is not None and self.task.done():
                self.task.result()  # a transport that crashed: show its exception
                raise AssertionError(f"the fleet stopped before {what}: {self.state.describe()}")
            if loop.time() > deadline:
                raise AssertionError(f"gave up waiting for {what}: {self.state.describe()}")
            await asyncio.sleep(0.02)

    async def until_samples(self, names: list[str], count: int) -> None:
        """Until every named node has ``count`` more samples than now."""
        start = {n: self.state.samples(n) for n in names}
        await self.until(lambda s: all(s.samples(n) >= start[n] + count for n in names), f"{count} samples from {names}")
