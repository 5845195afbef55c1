"""Will the training come back after a crash, and does it keep crashing? ``unit_no_restart``: a
configured training unit whose ``Restart=`` is ``no``; ``container_no_restart``: a configured
training container whose restart policy is ``no``; ``container_flapping``: its RestartCount
rising (as ``unit_flapping`` reads NRestarts), critical when the last exit was an OOM kill.
The training guides say: systemd *or* Docker restart policies; a job
with neither dies with its first crash and stays dead until someone looks. Both warn once per
node, naming the unit or container and the line that fixes it."""

from __future__ import annotations

from collections import deque
from typing import TypedDict

from .. import format as fmt
from ..models import Sample
from ..timeline import CRITICAL, WARNING, Severity
from .base import CLEAR, NODE, Finding, Rule
from .memory import NodeMemory

WHY = "the job will not come back after a crash"


def unit_no_restart(sample: Sample, node: NodeMemory, p: NoRestartParams) -> object:
    units = [u for u in sample.units if u.load_state == "loaded" and u.error is None and u.restart_policy is not None]
    if not units:
        return None  # no unit, or a probe that does not read Restart=: nothing to judge
    bare = [u.name for u in units if u.restart_policy == "no"]
    if not bare:
        return CLEAR
    return Finding(
        WARNING,
        f"{', '.join(bare)}: Restart=no — {WHY}",
        "add Restart=on-failure (and RestartSec=10) to the unit's [Service] section "
        "(systemctl edit UNIT), then systemctl daemon-reload",
        evidence={"units": bare},
    )


def container_no_restart(sample: Sample, node: NodeMemory, p: NoRestartParams) -> object:
    known = [c for c in sample.containers if c.error is None and c.restart_policy is not None]
    if not known:
        return None
    bare = [c.name for c in known if c.restart_policy == "no"]
    if not bare:
        return CLEAR
    return Finding(
        WARNING,
        f"{', '.join(bare)}: restart policy no — {WHY}",
        "docker update --restart=on-failure:5 NAME (podman: recreate it with --restart=on-failure)",
        evidence={"containers": bare},
    )


def container_flapping(sample: Sample, node: NodeMemory, p: ContainerFlappingParams) -> object:
    """The engine's RestartCount rising by ≥ restarts within window_s (the unit rule's twin)."""
    history = node.rule_state.setdefault("container_restarts", {})
    worst = None
    seen = False
    for c in sample.containers:
        if c.restarts_total is None or c.error is not None:
            continue
        seen = True
        points = history.setdefault(c.name, deque())
        if points and c.restarts_total < points[-1][1]:
            points.clear()  # recreated: a new container's count, not a rise
        if not points or points[-1][1] != c.restarts_total:
            points.append((sample.time, c.restarts_total))
        while len(points) > 1 and points[1][0] <= sample.time - p["window_s"]:
            points.popleft()
        rises = c.restarts_total - points[0][1]
        if rises >= p["restarts"] and (worst is None or rises > worst[1]):
            worst = (c, rises)
    if not seen:
        return None
    if worst is None:
        return CLEAR
    c, rises = worst
    level: Severity = CRITICAL if rises >= p["critical_restarts"] or c.oom_killed else WARNING
    oom = ", last exit an OOM kill" if c.oom_killed else ""
    return Finding(
        level,
        f"{c.name} restarted {rises} times in {fmt.duration(p['window_s'])} "
        f"(RestartCount {c.restarts_total}, now {c.state}, last exit {c.exit_code}{oom})",
        "it is crash-looping: read docker logs NAME (the container pane follows them) and fix "
        "the cause" + (" (it ran out of memory: a smaller batch, or a higher --memory)" if c.oom_killed else ""),
        evidence={
            "container": c.name, "restarts": rises, "restarts_total": c.restarts_total, "oom_killed": c.oom_killed,
        },
    )


class ContainerFlappingParams(TypedDict):
    """``[rules.container_flapping]`` (its defaults in RULES below)."""

    restarts: float
    critical_restarts: float
    window_s: float
    clear_s: float
    enabled: bool


class NoRestartParams(TypedDict):
    """``[rules.unit_no_restart]`` / ``[rules.container_no_restart]`` (defaults in RULES)."""

    clear_s: float
    enabled: bool


RULES = (
    Rule("unit_no_restart", NODE, unit_no_restart, {"clear_s": 0},
         "a configured training unit with Restart=no: the job will not come back after a crash", slow=True),
    Rule("container_no_restart", NODE, container_no_restart, {"clear_s": 0},
         "a configured training container with restart policy no: the job will not come back after a crash",
         slow=True),
    Rule(
        "container_flapping",
        NODE,
        container_flapping,
        {"restarts": 3, "critical_restarts": 10, "window_s": 900, "clear_s": 1800},
        "a training container's RestartCount rising by ≥ restarts within window_s; critical from "
        "critical_restarts or when the last exit was an OOM kill",
        ascending=("restarts", "critical_restarts"),
    ),
)
