"""Capacity rules: GPU memory, host memory, file systems."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from .. import format as fmt
from ..models import GpuSample, NodeEvent, Sample
from ..timeline import CRITICAL, INFO, WARNING
from .base import CLEAR, GPU, HOLD, NODE, Finding, Rule
from .memory import GpuMemory, NodeMemory

_RATE_EVERY_S = 30.0  # how often a file system's free space is noted for its write rate


def gpu_memory_full(g: GpuSample, mem: GpuMemory, p: GpuMemoryFullParams) -> object:
    used = g.memory_used_percent
    if used is None:
        return None
    if used < p["threshold"]:
        return CLEAR if used < p["clear_below"] else HOLD
    return Finding(
        INFO,
        f"GPU memory {used:.0f} % used ({g.memory_used_mib:.0f} of {g.memory_total_mib:.0f} MiB)",
        "caching allocators hold memory on purpose: act only on out-of-memory errors",
        evidence={"memory_used_percent": round(used, 1)},
    )


def host_memory_low(sample: Sample, node: NodeMemory, p: HostMemoryLowParams) -> object:
    m, pr = sample.memory, sample.pressure
    stall = pr.memory_full_avg10_percent if pr is not None else None
    kills = _recent_oom_kills(node, sample.time - p["oom_window_s"])
    if m is None or m.available_bytes is None or not m.total_bytes:
        if stall is None and not kills:
            return None
        available = None
    else:
        available = 100.0 * m.available_bytes / m.total_bytes
    stalling = stall is not None and stall >= p["psi_full"]
    low = available is not None and available < p["available_below"]
    if not stalling and not low and not kills:
        clean = (available is None or available > p["clear_above"]) and not stalling
        return CLEAR if clean else HOLD
    parts = []
    if kills:
        last = kills[-1]
        ago = fmt.duration(max(0.0, sample.time - last.time))
        parts.append(
            (f"{len(kills)} OOM kills in {fmt.duration(p['oom_window_s'])}, the latest: " if len(kills) > 1 else "")
            + f"{last.message} ({ago} ago)"
        )
    if kills and not low and not stalling:  # the kill freed the memory: say so, briefly
        if available is not None:
            parts.append(f"{available:.0f} % of memory available again")
    else:
        if available is not None and m is not None:
            parts.append(
                f"{available:.1f} % of memory available "
                f"({fmt.size(m.available_bytes)} of {fmt.size(m.total_bytes)})"
            )
        if stall is not None:
            parts.append(f"memory pressure full avg10 {stall:.0f} %")
        if m is not None and m.swap_used_bytes:
            parts.append(f"swap {fmt.size(m.swap_used_bytes)} used")
    if kills:
        action = (
            "find what grew (DataLoader workers, pinned memory, "
            "/dev/shm); a cgroup kill is the job's or container's limit"
        )
    else:
        action = (
            "the OOM killer is near: fewer DataLoader workers or a smaller prefetch, or more RAM"
        )
    return Finding(
        CRITICAL if stalling or kills else WARNING,
        ", ".join(parts),
        action,
        evidence={
            "available_percent": None if available is None else round(available, 1),
            "memory_full_avg10_percent": stall,
            "oom_kills": len(kills),
        },
    )


_OOM_KILLS = "oom_kills"  # rule_state: the newest OOM kill events of the node
_OOM_KILLS_KEPT = 100  # host_memory_low looks back minutes


def record_oom_kill(node: NodeMemory, event: NodeEvent, gpu: int | None, p: HostMemoryLowParams) -> None:
    """Kept, to be judged with the node's memory on the next sample."""
    node.rule_state.setdefault(_OOM_KILLS, deque(maxlen=_OOM_KILLS_KEPT)).append(event)


def _recent_oom_kills(node: NodeMemory, since: float) -> list:
    """The OOM kills kept for this node (``record_oom_kill``) from ``since`` on."""
    kills = node.rule_state.get(_OOM_KILLS)
    return sorted((e for e in kills if e.time >= since), key=lambda e: e.time) if kills else []


def filesystem_full(sample: Sample, node: NodeMemory, p: FilesystemFullParams) -> object:
    """The worst file system of the node: percent used (blocks or inodes), or the time left
    at its write rate over the last ``rate_window_s``."""
    if not sample.filesystems:
        return None
    rates = _write_rates(sample, node, p)
    worst, level, clean, words = 0.0, -1, True, []
    for fs in sample.filesystems:
        used = max(
            (x for x in (fs.used_percent, fs.inodes_used_percent) if x is not None), default=None
        )
        if used is None:
            continue
        fs_level = 2 if used >= p["critical"] else 1 if used >= p["warning"] else -1
        what = f"{fs.mountpoint} {used:.0f} % used"
        if (
            fs.inodes_used_percent is not None
            and fs.inodes_used_percent == used
            and (fs.used_percent or 0) < used
        ):
            what = f"{fs.mountpoint} {used:.0f} % of inodes used"
        rate = rates.get(fs.mountpoint)
        if (
            rate
            and fs.available_bytes is not None
            and fs.available_bytes / rate < p["full_within_s"]
        ):
            fs_level = 2
            what += f", full in ~{fmt.duration(fs.available_bytes / rate)} at {fmt.rate(rate)}"
        if fs_level >= 1:
            words.append(what)
            level = max(level, fs_level)
        if used >= p["warning"] - p["hysteresis"]:
            clean = False
        worst = max(worst, used)
    if level < 1:
        return CLEAR if clean else HOLD
    shm = any(w.startswith("/dev/shm ") for w in words)
    action = "free space or grow the file system"
    if shm:
        action = (
            "DataLoader workers pass batches through /dev/shm and die with a bus error "
            "when it fills: raise the container's --shm-size or use fewer workers; "
            + action
        )
    return Finding(
        CRITICAL if level == 2 else WARNING,
        "; ".join(words),
        action,
        evidence={"worst_used_percent": worst},
    )


def _write_rates(sample: Sample, node: NodeMemory, p: FilesystemFullParams) -> dict[str, float]:
    """Bytes per second each file system is filling at, over up to ``rate_window_s``."""
    state = node.rule_state
    points: dict[str, deque] = state.setdefault("fs_free", {})
    note = node.now >= state.get("fs_note", 0.0)
    if note:
        state["fs_note"] = node.now + _RATE_EVERY_S
    rates = {}
    for fs in sample.filesystems:
        if fs.available_bytes is None:
            continue
        series = points.get(fs.mountpoint)
        if series is None:
            series = points[fs.mountpoint] = deque()
        if note:
            series.append((node.now, fs.available_bytes))
            while node.now - series[0][0] > p["rate_window_s"]:
                series.popleft()
        then, free_then = series[0] if series else (node.now, fs.available_bytes)
        span = node.now - then
        # The rate over (nearly) the whole window: one checkpoint burst is not a trend.
        if span >= p["rate_window_s"] - _RATE_EVERY_S and free_then > fs.available_bytes:
            rates[fs.mountpoint] = (free_then - fs.available_bytes) / span
    return rates



class GpuMemoryFullParams(TypedDict):
    """``[rules.gpu_memory_full]`` (its defaults in RULES below)."""

    threshold: float
    clear_below: float
    for_s: float
    enabled: bool


class HostMemoryLowParams(TypedDict):
    """``[rules.host_memory_low]`` (its defaults in RULES below)."""

    available_below: float
    clear_above: float
    psi_full: float
    oom_window_s: float
    for_s: float
    clear_s: float
    enabled: bool


class FilesystemFullParams(TypedDict):
    """``[rules.filesystem_full]`` (its defaults in RULES below)."""

    warning: float
    critical: float
    hysteresis: float
    full_within_s: float
    rate_window_s: float
    for_s: float
    clear_s: float
    enabled: bool


RULES = (
    Rule(
        "gpu_memory_full",
        GPU,
        gpu_memory_full,
        {"threshold": 97, "clear_below": 95, "for_s": 60},
        "GPU memory used % (info)",
        ascending=("clear_below", "threshold"),
        slow=True,
    ),
    Rule(
        "host_memory_low",
        NODE,
        host_memory_low,
        {
            "available_below": 5,
            "clear_above": 8,
            "psi_full": 5,
            "oom_window_s": 600,
            "for_s": 30,
            "clear_s": 60,
        },
        "MemAvailable below available_below % (warning), or PSI memory full "
        "avg10 ≥ psi_full or an OOM kill in the last oom_window_s (critical)",
        ascending=("available_below", "clear_above"),
        slow=True,
        consumes=("oom-kill",),
        on_event=record_oom_kill,
    ),
    Rule(
        "filesystem_full",
        NODE,
        filesystem_full,
        {
            "warning": 90,
            "critical": 95,
            "hysteresis": 2,
            "full_within_s": 3600,
            "rate_window_s": 600,
            "for_s": 60,
            "clear_s": 300,
        },
        "file system blocks or inodes used %, or full within full_within_s at the recent write rate",
        ascending=("warning", "critical"),
        slow=True,
    ),
)

_BY_ID = {rule.id: rule for rule in RULES}


class CapacityLimits(NamedTuple):
    """The levels host_memory_low and filesystem_full judge with, for the UI to colour by: a
    value turns red where the rule fires (host memory: MemAvailable under available_below)."""

    memory_warm_percent: float  # used, inside host_memory_low's clearing band
    memory_hot_percent: float  # used, where host_memory_low fires
    psi_memory_full_percent: float  # PSI memory full avg10 where host_memory_low is critical
    fs_warm_percent: float
    fs_hot_percent: float


def capacity_limits(params: Mapping[str, Mapping[str, Any]]) -> CapacityLimits:
    """From rule id -> parameter overrides; the rules' defaults fill what is not given."""
    memory = {**_BY_ID["host_memory_low"].defaults, **params.get("host_memory_low", {})}
    fs = {**_BY_ID["filesystem_full"].defaults, **params.get("filesystem_full", {})}
    return CapacityLimits(
        100.0 - memory["clear_above"],
        100.0 - memory["available_below"],
        float(memory["psi_full"]),
        float(fs["warning"]),
        float(fs["critical"]),
    )
