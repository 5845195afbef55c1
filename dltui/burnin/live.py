"""A run as it goes, for the dashboard: per node its phase, time left, the stressor's own
progress per GPU, per-GPU series over the whole run, and the verdict so far. Pure (no Textual).

The verdict so far judges the telemetry as the final verdict would, and the stressor from its
live progress (errors, a dead worker); the stressor's last word comes only at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dltui.core.models import GpuSample

from . import verdict as v
from .remote import NodeRunView

SERIES = (  # (key, title, GpuSample field, reference field drawn beside it)
    ("temp", "Temperature °C", "temperature_c", None),
    ("hbm", "HBM °C", "memory_temperature_c", None),
    ("margin", "Margin °C", "temperature_margin_c", None),
    ("power", "Power W (vs limit)", "power_w", "power_limit_w"),
    ("clock", "SM clock MHz (vs max)", "sm_clock_mhz", "sm_clock_max_mhz"),
    ("util", "Utilisation %", "utilization_percent", None),
)


@dataclass
class GpuLive:
    index: int
    progress: str  # the stressor's own words: Gflop/s, iterations, errors
    status: str  # verdict so far
    problems: list[str] = field(default_factory=list)


@dataclass
class NodeLive:
    node: str
    phase: str
    state: str
    time_left_s: float | None
    samples: int
    status: str  # verdict so far
    tool: str | None
    gpus: list[GpuLive] = field(default_factory=list)
    reason: str | None = None  # connection trouble, in words


def node_live_header(view: NodeRunView) -> dict[str, Any]:
    """The cheap part of a node's line: phase, state, load left, samples, connection."""
    s = view.status or {}
    left = None
    if s.get("load_ends") and s.get("phase") == "load":
        left = max(0.0, float(s["load_ends"]) - float(s.get("time") or 0.0))
    elif s.get("phase") == "preflight":
        left = float(s.get("duration_s") or 0)
    return {"phase": s.get("phase") or "starting", "state": s.get("state") or "?",
            "time_left_s": left, "samples": len(view.collector.samples), "reason": view.reason}


def node_live(view: NodeRunView, thresholds: dict[str, Any] | None = None) -> NodeLive:
    s = view.status or {}
    tools = s.get("tools") or {}
    run = v.NodeRun(
        view.node,
        {},
        {"phases": s.get("phases") or {}, "gpu": {"tool": None}},
        view.collector.samples,
        view.collector.events,
        view.collector.facts,
    )
    so_far = v.judge(run, v.settings(thresholds)) if run.samples else None
    progress = _progress(s.get("progress") or {})
    gpus = []
    for g in so_far.gpus if so_far else []:
        items = [i for i in g.items if i.check != "stressor" and i.status in (v.FAIL, v.WARN)]
        words, bad = progress.get(g.index, ("", None))
        if bad:
            items.append(v.Item("stressor", v.FAIL, bad))
        status = (
            v.worst([i.status for i in items])
            if items
            else (v.PASS if tools.get("gpu") else v.NOT_RUN)
        )
        gpus.append(
            GpuLive(
                g.index,
                words or ("no GPU stressor" if not tools.get("gpu") else ""),
                status,
                [f"{i.check}: {i.evidence}" for i in items],
            )
        )
    status = v.worst([g.status for g in gpus]) if gpus else v.NOT_RUN
    return NodeLive(view.node, status=status, tool=tools.get("gpu"), gpus=gpus,
                    **node_live_header(view))


def _progress(progress: dict[str, Any]) -> dict[int, tuple[str, str | None]]:
    """Per GPU: the stressor's progress in words and, if it already failed, why."""
    out: dict[int, tuple[str, str | None]] = {}
    burn = progress.get("gpu_burn")
    if burn:
        for g in burn.get("gpus") or []:
            gf = g.get("gflops_last")
            words = (
                f"{gf:,.0f} Gflop/s, {g['procd']} it, {g['errors']} err"
                if gf is not None
                else "starting"
            )
            bad = (
                "DIED!" if g.get("died") else (f"{g['errors']} errors" if g.get("errors") else None)
            )
            if g.get("final") == "FAULTY":
                bad = "FAULTY"
            out[int(g["index"])] = (words, bad)
    for key, g in (progress.get("matmul") or {}).items():
        tf = g.get("tflops") or []
        words = f"{tf[-1]:.0f} TFLOP/s, {g['iters']} it, {g['errors']} err" if tf else "starting"
        bad = f"{g['errors']} mismatches" if g.get("errors") else None
        out[int(key)] = (words, bad)
    return out


def gpu_series(view: NodeRunView, index: int, field_name: str,
               max_points: int = 400) -> tuple[list[float], list[float]]:
    """Minutes since the first sample, and the values of one GPU field (gaps left out);
    a long run is strided to ``max_points`` (a terminal chart is narrower than that)."""
    samples = view.collector.samples
    if not samples:
        return [], []
    t0 = samples[0].time
    step = max(1, len(samples) // max_points)
    xs, ys = [], []
    for s in samples[::step]:
        for g in s.gpus:
            if g.index == index:
                value = getattr(g, field_name)
                if value is not None:
                    xs.append((s.time - t0) / 60.0)
                    ys.append(float(value))
                break
    return xs, ys


def gpu_indexes(view: NodeRunView) -> list[int]:
    last: list[GpuSample] = view.collector.samples[-1].gpus if view.collector.samples else []
    return [g.index for g in last]
