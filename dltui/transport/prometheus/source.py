"""The transport: three queries per refresh, nodes delivered into the sink as their series
appear, and the command-line options that choose it."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.parse
from typing import Any

from dltui.core import status as st
from dltui.core.models import NodeEvent, NodeFacts

from ..base import Sink
from .client import Client, PrometheusError, gc_paused
from .mapping import Fleet, build_paused
from .queries import SelectorError, queries

DELIVER_BATCH = 100  # nodes delivered between two turns of the event loop


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

    async def refresh(self) -> Fleet:
        """The three queries at once, mapped in a worker thread (0.5 s at 2,000 nodes)."""
        keys = list(self.queries)
        answers = await asyncio.gather(*(self.client.query(self.queries[k]) for k in keys))
        self.refreshes += 1
        return await asyncio.to_thread(build_paused, dict(zip(keys, answers, strict=True)))

    async def run(self, sink: Sink) -> None:
        while True:
            started = time.monotonic()
            try:
                fleet = await self.refresh()
            except PrometheusError as exc:
                self._unreachable(sink, str(exc))
            else:
                await self.deliver_in_batches(fleet, sink)
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))

    async def deliver_in_batches(self, fleet: Fleet, sink: Sink) -> None:
        """Into the sink on the loop (the state is not thread-safe), a batch of nodes at a
        time so the screen keeps drawing while thousands of nodes arrive."""
        names = sorted(fleet.nodes, key=natural_key)
        if not names:
            self.deliver(fleet, sink)
        for i in range(0, len(names), DELIVER_BATCH):
            with gc_paused():
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


def add_arguments(parser: Any) -> None:
    """``--prometheus URL`` and ``--match SELECTOR`` on a subcommand's parser."""
    group = parser.add_argument_group("reading nodes from Prometheus instead of SSH")
    group.add_argument(
        "--prometheus",
        metavar="URL",
        help="build the fleet from this Prometheus (node_exporter + dcgm-exporter series)",
    )
    group.add_argument(
        "--match",
        metavar="SELECTOR",
        help="only series matching these label matchers, e.g. '{job=~\"gpu.*\"}'",
    )


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
