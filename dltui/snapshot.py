"""``dltui snapshot``: watch the nodes for a few seconds, then report once and exit.

Exit codes follow the Nagios plugin convention: 0 ok, 1 warning, 2 critical, 3 unknown
(a node unreachable or silent).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from dltui.core import status as st
from dltui.core.state import FleetState, NodeState
from dltui.core.timeline import alert_order, severity_rank

SCHEMA_VERSION = 1
TIMELINE_IN_REPORT = 50
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL, EXIT_UNKNOWN = 0, 1, 2, 3


# A node still connecting when the window ends (a loaded or distant machine takes seconds to
# connect and start its probe), or connected but short of the two samples rates need, is
# waited for this much longer: a short snapshot must not report a slow node as silent, nor a
# 1 s snapshot at 1 Hz its CPU as n/a. Nodes already down are not waited for.
WAIT_MORE_S = 10.0


async def watch(fleet: FleetState, transports: list, seconds: float, sink=None) -> None:
    """Run the transports for ``seconds`` (and up to ``WAIT_MORE_S`` more for nodes still
    connecting or short of two samples); ``sink`` wraps the fleet (e.g. a Recorder)."""
    tasks = [asyncio.create_task(t.run(sink or fleet)) for t in transports]
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        latest = deadline + WAIT_MORE_S
        while loop.time() < deadline or (loop.time() < latest and _waiting_for(fleet)):
            left = deadline - loop.time()
            await asyncio.sleep(min(0.1, left) if left > 0 else 0.1)
            fleet.tick()
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


def _waiting_for(fleet: FleetState) -> bool:
    return any(
        node.status == st.CONNECTING or (node.status == st.OK and len(node.history.time) < 2)
        for node in fleet
    )


def node_status(node: NodeState) -> tuple[str, str | None]:
    """The status to report: a node that never sent a sample is not ``ok``; a down node's
    reason without the transport's retry plan (the snapshot stops trying when it ends)."""
    if node.status == st.OK and node.sample is None:
        return st.TIMEOUT, "connected, but no sample arrived in the snapshot window"
    return node.status, st.without_retry(node.reason)


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
