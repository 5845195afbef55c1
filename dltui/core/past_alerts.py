"""The alerts a node's past would have raised: the live rule engine run over fetched history.

A window fetched from Prometheus (``dltui.history``) becomes a stream of ``Sample`` objects,
one per step; ``replay`` feeds them, in order and on their own clock, into a fleet state of its
own with a fresh engine (the same rule functions, settings and timings as the live ones), so
"since when" is answered by the rules themselves, not a second copy of them. The replayed
``NodeState`` keeps the window as history and the alerts on its timeline, which is what the
charts draw. Pure: no I/O, no Textual.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from .models import NodeFacts, Sample
from .state import Engine, FleetState, NodeState
from .timeline import severity_rank


@dataclass(frozen=True)
class PastAlert:
    """An alert the rules raised over the window: open from ``start`` (when its condition
    began) to ``end`` (None: still open at the window's end)."""

    rule: str
    severity: str
    gpu: int | None
    message: str  # the words at its worst (its highest severity, first reached)
    start: float
    end: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Replayed:
    node: NodeState  # the window as history, alerts on its timeline (what a chart draws)
    alerts: list[PastAlert]


def replay(
    name: str,
    samples: Iterable[Sample],
    engine: Engine | None,
    capacity: int,
    facts: NodeFacts | None = None,
    interval_s: float = 1.0,
) -> Replayed:
    """``samples`` (oldest first) through ``engine`` on their own clock; ``capacity``: the most
    samples kept as history (the window's point count). ``engine`` None: history only."""
    now = [0.0]
    fleet = FleetState([name], engine=engine, clock=lambda: now[0], history_points=max(1, capacity))
    node = fleet.node(name)
    node.interval_s = interval_s
    if facts is not None:
        fleet.on_hello(name, facts, interval_s)
    opened: dict[tuple[str, int | None], list[Any]] = {}  # key -> [start, severity, message]
    alerts: list[PastAlert] = []
    keys: set[tuple[str, int | None]] = set()
    for sample in samples:
        now[0] = sample.time
        fleet.on_sample(name, sample)
        current = node.alerts
        if not current and not keys:
            continue
        for key, alert in current.items():
            seen = opened.get(key)
            if seen is None:
                opened[key] = [alert.since, alert.severity, alert.message]
            elif severity_rank(alert.severity) > severity_rank(seen[1]):
                seen[1], seen[2] = alert.severity, alert.message
        for key in keys - current.keys():
            start, severity, message = opened.pop(key)
            alerts.append(PastAlert(key[0], severity, key[1], message, start, sample.time))
        keys = set(current)
    for key, (start, severity, message) in opened.items():
        alerts.append(PastAlert(key[0], severity, key[1], message, start, None))
    alerts.sort(key=lambda a: (a.start, a.rule, -1 if a.gpu is None else a.gpu))
    return Replayed(node, alerts)
