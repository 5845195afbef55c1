"""What every transport offers and what it writes into.

A transport turns node names into calls on a ``Sink`` (``FleetState`` is the real one): a
status word with its reason, facts once per connection, a sample per tick, events. It runs
until cancelled and never raises for a node's trouble: trouble is a status.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.status import Status


class Sink(Protocol):
    def on_status(self, name: str, status: Status, reason: str | None = None) -> None: ...
    def on_hello(self, name: str, facts: NodeFacts, interval_s: float | None = None) -> None: ...
    def on_sample(self, name: str, sample: Sample) -> None: ...
    def on_event(self, name: str, event: NodeEvent) -> None: ...


class Transport(Protocol):
    names: list[str]
    """The nodes this transport serves, in display order."""

    async def run(self, sink: Sink) -> None:
        """Stream until cancelled."""


@runtime_checkable
class Retunable(Protocol):
    """A transport whose sampling interval can change while it runs (the dashboard's + / -)."""

    def set_interval(self, interval_s: float) -> None:
        """Sample every ``interval_s`` from the next tick on. Each node says when it took it,
        with an ``interval`` event (``FleetState`` then updates the node's interval)."""
