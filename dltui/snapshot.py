"""``dltui snapshot``: watch the nodes for a few seconds, then report once and exit.

Exit codes follow the Nagios plugin convention: 0 ok, 1 warning, 2 critical, 3 unknown
(a node unreachable or silent).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dltui import report_text, stopping
from dltui.core import status as st
from dltui.core.scheduler import view_dict
from dltui.core.state import FleetState
from dltui.core.timeline import alert_order, severity_rank
from dltui.report_text import node_status

if TYPE_CHECKING:
    from dltui.history import HistorySource
    from dltui.history.past import NodePast
    from dltui.transport.base import Sink, Transport

SCHEMA_VERSION = 1
TIMELINE_IN_REPORT = 50
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL, EXIT_UNKNOWN = 0, 1, 2, 3


def main(
    fleet: FleetState,
    transports: Sequence[Transport],
    seconds: float,
    as_json: bool,
    sink: Sink | None = None,
    history: HistorySource | None = None,
    since_s: float | None = None,
) -> int:
    """Watch, print the report (text or JSON) and answer the exit code; interrupted (Ctrl-C,
    SIGTERM, SIGHUP): connections closed, nothing printed, UNKNOWN. With ``history`` and
    ``since_s`` (``--since``), each node's past alerts over that window too: reported beside
    the live verdict, never part of the exit code (that judges the nodes as they are now)."""
    found: list[NodePast] = []
    try:
        stopping.run(watch(fleet, transports, seconds, sink=sink))
        if history is not None and since_s is not None:
            from dltui.history.past import pasts

            nodes = [(n.name, n.facts.hostname if n.facts else None) for n in fleet]
            found = stopping.run(pasts(history, nodes, since_s))
    except KeyboardInterrupt:
        return EXIT_UNKNOWN
    if as_json:
        doc = report(fleet)
        by_name = {p.name: p for p in found}
        for node in doc["nodes"] if found else ():
            past = by_name.get(node["name"])
            node["history"] = past.to_dict() if past is not None else None
        print(json.dumps(doc, indent=2, sort_keys=False))
    else:
        print(report_text.render(fleet), end="")
        if found:
            from dltui.history.past import render_text

            print("\n" + render_text(found), end="")
    return exit_code(fleet)


# Every node is watched for the whole window from its first sample, however late it came (a
# loaded or distant machine takes seconds to connect and start its probe): a short snapshot
# must not report a slow node as silent, nor judge it on a fraction of the window it claims.
# This much longer at most; nodes already down are not waited for.
WAIT_MORE_S = 10.0


async def watch(
    fleet: FleetState, transports: Sequence[Transport], seconds: float, sink: Sink | None = None
) -> None:
    """Run the transports until every node has been watched ``seconds`` from its first sample
    (and has two samples, which rates need), or is down; at most ``WAIT_MORE_S`` past the
    window. ``sink`` wraps the fleet (e.g. a Recorder)."""
    tasks = [asyncio.create_task(t.run(sink or fleet)) for t in transports]
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline, latest = started + seconds, started + seconds + WAIT_MORE_S
        first: dict[str, float] = {}  # loop time of each node's first sample
        while loop.time() < deadline or (loop.time() < latest and _waiting_for(fleet, first, seconds, loop.time())):
            left = deadline - loop.time()
            await asyncio.sleep(min(0.1, left) if left > 0 else 0.1)
            fleet.tick()
            for node in fleet:
                if node.sample is not None and node.name not in first:
                    first[node.name] = loop.time()
            for task in tasks:  # a transport bug must surface, not hang the snapshot
                if task.done() and not task.cancelled():
                    error = task.exception()
                    if error is not None:
                        raise error
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    fleet.tick()


def _waiting_for(fleet: FleetState, first: dict[str, float], seconds: float, now: float) -> bool:
    """Whether a node is still connecting, or connected and not yet watched long enough."""
    for node in fleet:
        if node.status == st.CONNECTING:
            return True
        if node.status == st.OK and (
            len(node.history.time) < 2 or now - first.get(node.name, now) < seconds
        ):
            return True
    return False


def exit_code(fleet: FleetState) -> int:
    worst = -1
    for node in fleet:
        status, _ = node_status(node)
        if status != st.OK:
            return EXIT_UNKNOWN
        for alert in node.alerts.values():
            worst = max(worst, severity_rank(alert.severity))
    return {2: EXIT_CRITICAL, 1: EXIT_WARNING}.get(worst, EXIT_OK)


def report(fleet: FleetState) -> dict[str, Any]:
    nodes = []
    for node in fleet:
        status, reason = node_status(node)
        nodes.append(
            {
                "name": node.name,
                "status": status,
                "error": reason if status != st.OK else None,
                "age_s": _round(node.age(fleet.clock())),
                "facts": node.facts.to_dict() if node.facts else None,
                "sample": node.sample.to_dict() if node.sample else None,
                "alerts": [a.to_dict() for a in sorted(node.alerts.values(), key=alert_order)],
                "timeline": [e.to_dict() for e in list(node.timeline)[-TIMELINE_IN_REPORT:]],
                "malformed_lines": node.malformed_lines,
                # what the GPU processes' Slurm jobs and containers are (docs/snapshot-json.md)
                "jobs": [dataclasses.asdict(j) for _, j in sorted(node.jobs.items())],
                "containers": [dataclasses.asdict(c) for _, c in sorted(node.containers.items())],
                # Slurm's / Kubernetes' view of the node, read once at the snapshot's start
                "scheduler": view_dict(node.scheduler),
                "rules_na": {
                    "node" if gpu is None else str(gpu): sorted(ids)
                    for gpu, ids in sorted(node.rules_na.items(), key=_gpu_order)
                    if ids
                },
            }
        )
    return {"version": SCHEMA_VERSION, "nodes": nodes}


def to_json(fleet: FleetState) -> str:
    return json.dumps(report(fleet), indent=2, sort_keys=False)


def _gpu_order(item):
    return -1 if item[0] is None else item[0]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
