"""This machine, in process: the probe's own collector on Linux, psutil elsewhere."""

from __future__ import annotations

import asyncio
import sys
import time

from dltui.core import status as st
from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.node.probe.main import until_next_tick
from dltui.node.schema import interval_event

from .base import Sink
from .command import CommandResult, LocalRunner, TakesCommands

LOCAL_NAMES = ("localhost", "local", "127.0.0.1", "::1")


def make_collector(
    interval_s: float,
    units: tuple[str, ...] = (),
    checkpoint: str | None = None,
    sysfs: str = "/sys",
    containers: tuple[str, ...] = (),
):
    """The probe's own collector, as ``--unit`` / ``--checkpoint`` / ``--container`` configure it
    over SSH (the same code reads the training containers here: ``probe/containers.py``)."""
    if sys.platform.startswith("linux"):
        from dltui.node.probe.collect import Collector

        return Collector(interval_s, sys_dir=sysfs, units=units, checkpoint=checkpoint, containers=containers)
    from .psutil_collector import PsutilCollector

    return PsutilCollector(interval_s)


class LocalTransport(TakesCommands):
    """One node, this machine. Blocking reads run in a thread so the UI never waits."""

    def __init__(
        self,
        interval_s: float = 1.0,
        name: str = "localhost",
        units: tuple[str, ...] = (),
        checkpoint: str | None = None,
        sysfs: str = "/sys",
        containers: tuple[str, ...] = (),
    ):
        self.interval_s = interval_s
        self.names = [name]
        self.units = units
        self.checkpoint = checkpoint
        self.sysfs = sysfs  # [probe] sysfs: this machine's sysfs, mounted elsewhere in a container
        self.containers = containers  # [groups.NAME] containers: the training containers to read
        self.runner = LocalRunner()
        self._interval_told: float | None = None  # a new interval, said at the next tick

    async def run_command(self, node: str, argv, timeout_s: float) -> CommandResult:
        """This machine: a subprocess, no shell (command.py)."""
        return await self.runner.run_command(node, argv, timeout_s)

    def set_interval(self, interval_s: float) -> None:
        """From the next tick on (as the probe over SSH does); said on the timeline then."""
        self.interval_s = self._interval_told = interval_s

    async def run(self, sink: Sink) -> None:
        name = self.names[0]
        sink.on_status(name, st.CONNECTING)
        collector = await asyncio.to_thread(
            make_collector, self.interval_s, self.units, self.checkpoint, self.sysfs, self.containers
        )
        try:
            facts = await asyncio.to_thread(collector.facts)
            sink.on_hello(name, NodeFacts.from_dict(facts), self.interval_s)
            sink.on_status(name, st.OK)
            while True:
                started = time.time()
                # events() opens the kernel log a few seconds in (subprocess, journalctl): in
                # the worker thread with the sample, so the UI's loop never waits on it
                raw, events = await asyncio.to_thread(
                    lambda: (collector.sample(), collector.events())
                )
                sink.on_sample(name, Sample.from_dict(raw))
                for event in events:
                    sink.on_event(name, NodeEvent.from_dict(event))
                for source, message in collector.problems.drain():
                    sink.on_event(
                        name,
                        NodeEvent(
                            time.time(), "probe-error", f"{source}: {message}", severity="warning"
                        ),
                    )
                if self._interval_told is not None:
                    collector.set_interval(self._interval_told)
                    sink.on_event(name, NodeEvent.from_dict(interval_event(time.time(), self._interval_told)))
                    self._interval_told = None
                await asyncio.sleep(
                    until_next_tick(time.time(), self.interval_s, started)
                )  # the probe's ticks
        finally:
            await asyncio.to_thread(collector.close)
