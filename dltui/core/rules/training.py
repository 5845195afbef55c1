"""The training unit and its checkpoints (configured per node group, probe/units.py):
``unit_failed``, ``unit_flapping``, ``checkpoint_stale``; and the checkpoint writes that the
starvation detector must not mistake for a starving loader."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TypedDict

from .. import format as fmt
from ..models import Sample
from ..timeline import CRITICAL, WARNING, Severity
from .base import CLEAR, NODE, Finding, Rule
from .memory import NodeMemory

_WRITES_KEPT = 32  # checkpoint mtimes remembered per node: minutes of history at any rate


def unit_failed(sample: Sample, node: NodeMemory, p: UnitFailedParams) -> object:
    units = [u for u in sample.units if u.load_state not in (None, "not-found") and u.error is None]
    if not units:
        return None  # no configured unit on this node (or no systemd): nothing to judge
    failed = [u for u in units if u.active_state == "failed"]
    if not failed:
        return CLEAR
    words = "; ".join(
        f"{u.name} failed (Result={u.result}"
        + (f", exit status {u.exec_main_status}" if u.exec_main_status else "")
        + ")"
        for u in failed
    )
    return Finding(
        CRITICAL,
        words,
        "read its journal (unit pane, or dltui unit logs UNIT NODE), "
        "fix the cause, then restart it",
        evidence={"units": [u.name for u in failed], "result": failed[0].result},
        lasting=True,
    )


def unit_flapping(sample: Sample, node: NodeMemory, p: UnitFlappingParams) -> object:
    """NRestarts (automatic restarts only) rising by ≥ restarts within window_s."""
    history = node.rule_state.setdefault("unit_restarts", {})
    worst = None
    seen = False
    for u in sample.units:
        if u.restarts_total is None:
            continue
        seen = True
        points = history.get(u.name)
        if points is None:
            points = history[u.name] = deque()
        if points and u.restarts_total < points[-1][1]:
            points.clear()  # a reset (the unit was reloaded or the node rebooted): not a rise
        if not points or points[-1][1] != u.restarts_total:
            points.append((sample.time, u.restarts_total))
        while len(points) > 1 and points[1][0] <= sample.time - p["window_s"]:
            points.popleft()  # keep one point at or before the window's start as the base
        rises = u.restarts_total - points[0][1]  # since the window's start, or since first seen
        if rises >= p["restarts"] and (worst is None or rises > worst[1]):
            worst = (u, rises)
    if not seen:
        return None
    if worst is None:
        return CLEAR
    u, rises = worst
    # systemd gave up on it (start-limit-hit): it will not come back by itself
    level: Severity = (
        CRITICAL
        if rises >= p["critical_restarts"] or u.result == "start-limit-hit"
        else WARNING
    )
    return Finding(
        level,
        f"{u.name} restarted itself {rises} times in {fmt.duration(p['window_s'])} "
        f"(NRestarts {u.restarts_total}, "
        f"now {u.active_state}/{u.sub_state})",
        "it is crash-looping: read the journal of its last run "
        "and fix the cause before restarting by hand",
        evidence={"unit": u.name, "restarts": rises, "restarts_total": u.restarts_total},
    )


def checkpoint_stale(sample: Sample, node: NodeMemory, p: CheckpointStaleParams) -> object:
    ck = sample.checkpoint
    if ck is None or ck.newest_mtime is None:
        return None  # no glob configured here, or nothing matches yet
    active = [u for u in sample.units if u.active_state == "active"]
    if not active:
        return CLEAR  # no job running: an old checkpoint is expected
    age = sample.time - ck.newest_mtime
    if age <= p["warning_ratio"] * p["expected_s"]:
        return CLEAR
    return Finding(
        CRITICAL if age > p["critical_ratio"] * p["expected_s"] else WARNING,
        f"newest checkpoint {ck.newest_path} is {fmt.duration(age)} old "
        f"while {active[0].name} is active",
        "the job may be hung or no longer saving: check its log and the checkpoint file system",
        evidence={"age_s": round(age), "path": ck.newest_path, "glob": ck.glob},
        lasting=False,
        immediate=True,
    )


def checkpoint_writes(node: NodeMemory) -> list[float]:
    """The checkpoint mtimes this node has shown, oldest first (node clock). Each new value of
    the newest mtime is one observed write."""
    writes = node.rule_state.get("checkpoint_writes")
    if writes is None:
        writes = node.rule_state["checkpoint_writes"] = deque(maxlen=_WRITES_KEPT)
    ck = node.sample.checkpoint if node.sample is not None else None
    if (
        ck is not None
        and ck.newest_mtime is not None
        and (not writes or writes[-1] != ck.newest_mtime)
    ):
        writes.append(ck.newest_mtime)
    return list(writes)


def outside_checkpoint_writes(
    values: Iterable[float],
    period_s: float,
    newest_time: float,
    writes: list[float],
    before_s: float,
    after_s: float,
) -> list[float]:
    """``values`` (evenly spaced, the newest at ``newest_time``) without the readings that fall
    in [write - before_s, write + after_s] of any checkpoint write: a job pausing its GPUs to
    save is not a starving loader."""
    values = list(values)
    n = len(values)
    first = newest_time - (n - 1) * period_s
    spans = [
        (w - before_s, w + after_s)
        for w in writes
        if w + after_s >= first and w - before_s <= newest_time
    ]
    if not spans:
        return values
    out = []
    for i, v in enumerate(values):
        t = first + i * period_s
        if not any(lo <= t <= hi for lo, hi in spans):
            out.append(v)
    return out



class UnitFailedParams(TypedDict):
    """``[rules.unit_failed]`` (its defaults in RULES below)."""

    clear_s: float
    enabled: bool


class UnitFlappingParams(TypedDict):
    """``[rules.unit_flapping]`` (its defaults in RULES below)."""

    restarts: float
    critical_restarts: float
    window_s: float
    clear_s: float
    enabled: bool


class CheckpointStaleParams(TypedDict):
    """``[rules.checkpoint_stale]`` (its defaults in RULES below)."""

    expected_s: float
    warning_ratio: float
    critical_ratio: float
    for_s: float
    clear_s: float
    enabled: bool


RULES = (
    Rule(
        "unit_failed",
        NODE,
        unit_failed,
        {"clear_s": 0},
        "a configured systemd unit is in state failed",
    ),
    Rule(
        "unit_flapping",
        NODE,
        unit_flapping,
        {"restarts": 3, "critical_restarts": 10, "window_s": 900, "clear_s": 1800},
        "NRestarts (automatic restarts) rising by ≥ restarts within window_s",
        ascending=("restarts", "critical_restarts"),
    ),
    Rule(
        "checkpoint_stale",
        NODE,
        checkpoint_stale,
        {
            "expected_s": 3600,
            "warning_ratio": 2.0,
            "critical_ratio": 4.0,
            "for_s": 60,
            "clear_s": 0,
        },
        "newest file matching the group's checkpoint glob older than "
        "warning_ratio (critical_ratio) × expected_s "
        "while the unit is active",
        ascending=("warning_ratio", "critical_ratio"),
    ),
)
