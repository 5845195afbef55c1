"""The transport: three queries per refresh (a fourth for the GPUs' facts on the first one,
every minute and when new GPUs appear), nodes delivered into the sink as their series appear,
and the command-line options that choose it."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.parse
from typing import Any

from dltui.core import status as st
from dltui.core.models import DriveSample, NodeEvent, NodeFacts

from ..base import Sink
from . import smartctl
from .client import Client, PrometheusError, freeze_long_lived, gc_paused
from .mapping import Fleet, GpuFactLabels, GpuKey, Targets, build, gpu_facts, host_of
from .queries import (
    FACTS_EVERY_S,
    GPU_FACTS_QUERY,
    REFRESH_QUERIES,
    SLOW_QUERIES,
    SelectorError,
    queries,
)

DELIVER_BATCH = 50  # nodes delivered between two turns of the event loop (~15 ms)


def natural_key(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


SOURCE_NOTE = (
    "Prometheus source: GPU utilisation arrives once per refresh ({every}), not sub-second: "
    "loader_starvation judges that coarser signal, and dips shorter than it can alias away"
)


class PrometheusTransport:
    """Reads the fleet from Prometheus every ``interval_s``; nodes appear as their series do."""

    def __init__(
        self,
        url: str,
        selector: str | None = None,
        interval_s: float = 5.0,
        client: Client | None = None,
    ):
        self.client = client or Client(url)
        self.queries = queries(selector)  # a bad --match fails here, before anything starts
        self.selector = selector
        self.interval_s = interval_s
        self.names: list[str] = []
        self._known: set[str] = set()
        self._facts: dict[str, NodeFacts] = {}
        self._down: dict[str, list[str]] = {}
        self._xid: dict[tuple[str, int], float | None] = {}
        self.refreshes = 0
        self.gpu_facts: dict[GpuKey, GpuFactLabels] = {}
        self.targets = Targets()  # which scrape targets are nodes', as far as seen (mapping.py)
        self._facts_at: float | None = None  # monotonic time of the last facts answer
        self.drives: dict[str, list[DriveSample]] = {}  # smartctl_exporter's, by host
        self.clock = time.monotonic

    async def refresh(self) -> Fleet:
        """The queries at once, mapped and made into samples in a worker thread.

        The collector stays paused from the queries to the mapped fleet: the answers' JSON
        (millions of objects at 2,000 nodes) is freed before it ever runs, instead of being
        scanned by it while alive (that scan cost as much as decoding)."""
        with gc_paused():
            return await self._refresh()

    async def _refresh(self) -> Fleet:
        due = self._facts_at is None or self.clock() - self._facts_at >= FACTS_EVERY_S
        keys = [*REFRESH_QUERIES, *(SLOW_QUERIES if due else ())]
        got = await asyncio.gather(*(self.client.query(self.queries[k]) for k in keys))
        answers = dict(zip(keys, got, strict=True))
        del got
        self.refreshes += 1
        fleet, facts, drives = await asyncio.to_thread(_build_and_free, answers, self.gpu_facts, self.targets)
        if due:
            self.gpu_facts, self._facts_at = facts, self.clock()
            self.drives = drives if drives is not None else self.drives
        fleet.set_drives(self.drives)
        if fleet.unknown_gpus(self.gpu_facts):  # GPUs that appeared since: their facts now
            self._learn_facts(await self.client.query(self.queries[GPU_FACTS_QUERY]))
            for key in fleet.unknown_gpus(self.gpu_facts):
                self.gpu_facts[key] = {}  # not in the answer: asked again with the others
            fleet.apply_facts(self.gpu_facts)
        await asyncio.to_thread(fleet.prepare)
        return fleet

    def _learn_facts(self, answer: dict[str, Any]) -> None:
        self.gpu_facts = gpu_facts(answer)
        self._facts_at = self.clock()

    async def run(self, sink: Sink) -> None:
        while True:
            started = time.monotonic()
            await self.update(sink)
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))

    async def update(self, sink: Sink) -> None:
        """One refresh into the sink. The collector stays paused from the queries to the last
        node delivered, so what the refresh only passes through (the answers, the mapping) is
        gone before it runs, and what it leaves in the state is frozen out of its passes
        (``freeze_long_lived``) instead of being scanned."""
        with gc_paused():
            try:
                fleet = await self.refresh()
            except PrometheusError as exc:
                self._unreachable(sink, str(exc))
                return
            await self.deliver_in_batches(fleet, sink)
            delivered = bool(fleet.nodes)
            del fleet
            if delivered:
                freeze_long_lived()

    async def deliver_in_batches(self, fleet: Fleet, sink: Sink) -> None:
        """Into the sink on the loop (the state is not thread-safe), a batch of nodes at a
        time so the screen keeps drawing while thousands of nodes arrive."""
        names = sorted(fleet.nodes, key=natural_key)
        if not names:
            self.deliver(fleet, sink)
        # One collector pause over the whole delivery rather than one per batch: each
        # re-enabling made it scan the young objects of every batch again.
        with gc_paused():
            for i in range(0, len(names), DELIVER_BATCH):
                self.deliver(fleet, sink, names[i : i + DELIVER_BATCH])
                await asyncio.sleep(0)

    def deliver(self, fleet: Fleet, sink: Sink, names: list[str] | None = None) -> None:
        if not fleet.nodes:
            self._unreachable(
                sink, f"no node_exporter or dcgm-exporter series match {self.selector or 'any job'}"
            )
            return
        for name in sorted(fleet.nodes, key=natural_key) if names is None else names:
            if name not in self._known:
                self._known.add(name)
                self.names.append(name)
            status, reason = fleet.status(name)
            sink.on_status(name, status, reason)
            if status != st.OK:
                continue
            facts = fleet.facts(name)
            if self._facts.get(name) != facts:
                first = name not in self._facts
                self._facts[name] = facts
                sink.on_hello(name, facts, self.interval_s)
                if first and facts.gpus:
                    every = f"one reading every {self.interval_s:g} s"
                    sink.on_event(
                        name, NodeEvent(fleet.time, "source-note", SOURCE_NOTE.format(every=every))
                    )
            self._targets(sink, name, fleet)
            sink.on_sample(name, fleet.sample(name))
            self._xids(sink, name, fleet)

    def _targets(self, sink: Sink, name: str, fleet: Fleet) -> None:
        down = fleet.down_targets(name)
        for inst in down:
            if inst not in self._down.get(name, ()):
                sink.on_event(
                    name,
                    NodeEvent(
                        fleet.time,
                        "target-down",
                        f"Prometheus cannot scrape {inst} (up == 0)",
                        severity="warning",
                    ),
                )
        self._down[name] = down

    def _xids(self, sink: Sink, name: str, fleet: Fleet) -> None:
        """dcgm-exporter's XID gauge holds the last XID a GPU raised: a new value is an XID."""
        for index, g in fleet.nodes[name].gpus.items():
            code = g.get("XID_ERRORS")
            key = (name, index)
            if code and code != self._xid.get(key):
                sink.on_event(
                    name,
                    NodeEvent(
                        fleet.time,
                        "xid",
                        f"XID {int(code)} (dcgm-exporter)",
                        gpu=index,
                        severity="warning",
                        data={"xid": int(code)},
                    ),
                )
            self._xid[key] = code

    def _unreachable(self, sink: Sink, reason: str) -> None:
        targets = self.names or [urllib.parse.urlsplit(self.client.url).netloc or self.client.url]
        for name in targets:
            sink.on_status(name, st.UNREACHABLE, reason)


def _build_and_free(
    answers: dict[str, dict[str, Any]], facts: dict[GpuKey, GpuFactLabels], targets: Targets
) -> tuple[Fleet, dict[GpuKey, GpuFactLabels], dict[str, list[DriveSample]] | None]:
    """``build`` (with the facts of the facts query's answer when it is among the answers,
    else ``facts``), the drives when their answer is there (else None), then the answers' JSON
    freed here, a slice at a time, while the collector is paused: freed at once on the loop,
    its millions of objects held the loop 50 ms."""
    drives = None
    if smartctl.QUERY in answers:
        drives = smartctl.drives_by_host(answers.pop(smartctl.QUERY), host_of)
    if GPU_FACTS_QUERY in answers:
        facts = gpu_facts(answers.pop(GPU_FACTS_QUERY))
    fleet = build(answers, None, facts, targets)
    for answer in answers.values():
        result = answer["result"]
        while result:
            del result[-2000:]
    answers.clear()
    return fleet, facts, drives


DEFAULT_REFRESH_S = 5.0  # without --interval: Prometheus scrapes every 15-60 s at most sites


def from_args(
    hosts: list[str], url: str | None, selector: str | None, interval_s: float | None
) -> list[PrometheusTransport]:
    """The transports for ``--prometheus`` (``interval_s`` None: the default refresh);
    ``SelectorError`` for a usage mistake."""
    if url is None:
        raise SelectorError("--match needs --prometheus URL")
    if hosts:
        raise SelectorError(
            "give nodes as HOST or --prometheus URL, not both (--match selects nodes there)"
        )
    if not urllib.parse.urlsplit(url).scheme:
        url = "http://" + url
    return [PrometheusTransport(url, selector, interval_s or DEFAULT_REFRESH_S)]
