"""History from before dltui started: a node's window fetched from Prometheus, replayed
through the rules, cached per window.

Everything here runs off the event loop (the HTTP in the client's worker thread, the replay in
another), each request bounded by ``timeout_s``: a slow or down Prometheus costs a line in the
chart's corner, never a frame. A fetch is a coroutine: cancelling it (another window chosen,
the chart closed) drops its answer."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from dltui.core.past_alerts import PastAlert, Replayed, replay
from dltui.core.state import Engine, NodeState
from dltui.transport.prometheus.client import Client

from .fetch import FetchedWindow, fetch

HISTORY_WINDOWS_S = (6 * 3600, 24 * 3600, 7 * 86400)  # beyond the 2 hours a run holds
FETCH_TIMEOUT_S = 5.0
CACHED_WINDOWS = 16


@dataclass
class PastWindow:
    fetched: FetchedWindow
    node: NodeState  # the window as a node's history, past alerts on its timeline
    alerts: list[PastAlert]
    elapsed_s: float  # fetch and replay, for the record

    @property
    def step_s(self) -> float:
        return self.fetched.plan.step_s


def normalised_url(url: str) -> str:
    """``prometheus:9090`` -> ``http://prometheus:9090`` (``host:port`` parses as a scheme)."""
    return url if "://" in url else "http://" + url


class HistorySource:
    """``[prometheus] url`` or ``--history-from URL``: windows of a node's past, on request.
    ``engine``: a fresh rule engine for each replay (None: history without past alerts)."""

    def __init__(
        self,
        url: str,
        engine: Callable[[], Engine | None] | None = None,
        timeout_s: float = FETCH_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
        client: Client | None = None,
    ) -> None:
        self.client = client or Client(normalised_url(url), timeout_s)
        self.url = self.client.url
        self.engine = engine or (lambda: None)
        self.clock = clock
        self._cache: OrderedDict[tuple, PastWindow] = OrderedDict()

    def cached(self, name: str, window_s: float, cells: int, end: float | None = None) -> PastWindow | None:
        """The window fetched earlier, while it is still the one a fetch now would give (its
        end within a step of ``end``)."""
        got = self._cache.get((name, window_s, cells))
        end = self.clock() if end is None else end
        if got is None or end - got.fetched.plan.end >= got.step_s:
            return None
        return got

    async def window(
        self, name: str, window_s: float, cells: int, end: float | None = None, hostname: str | None = None
    ) -> PastWindow:
        """The node's window of ``window_s`` ending at ``end`` (now), ``cells`` wide. Raises
        ``NoHistory`` or ``PrometheusError`` (in plain words)."""
        end = self.clock() if end is None else end
        hit = self.cached(name, window_s, cells, end)
        if hit is not None:
            return hit
        started = time.perf_counter()
        fetched = await fetch(self.client, name, window_s, end, cells, hostname)
        replayed = await asyncio.to_thread(self.replay, fetched)
        past = PastWindow(fetched, replayed.node, replayed.alerts, time.perf_counter() - started)
        key = (name, window_s, cells)
        self._cache[key] = past
        self._cache.move_to_end(key)
        while len(self._cache) > CACHED_WINDOWS:
            self._cache.popitem(last=False)
        return past

    def replay(self, fetched: FetchedWindow) -> Replayed:
        return replay(
            fetched.node, fetched.samples(), self.engine(), fetched.plan.points, interval_s=fetched.plan.step_s
        )

