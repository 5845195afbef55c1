"""A run as it goes, for the dashboard: per node its phase, time left, the stressor's own
progress per GPU, per-GPU series over the whole run, and the verdict so far. Pure (no Textual).

The verdict so far judges the telemetry as the final verdict would, and the stressor from its
live progress (errors, a dead worker); the stressor's last word comes only at the end, when
the run's verdict (judged from its outputs) replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import verdict as v
from .remote import NodeRunView

SERIES = (  # (key, title, unit, GpuSample field, reference field drawn beside it)
    ("temp", "Temperature", "°C", "temperature_c", None),
    ("hbm", "HBM temperature", "°C", "memory_temperature_c", None),
    ("margin", "Thermal margin", "°C", "temperature_margin_c", None),
    ("power", "Power vs limit", "W", "power_w", "power_limit_w"),
    ("clock", "SM clock vs max", "MHz", "sm_clock_mhz", "sm_clock_max_mhz"),
    ("util", "Utilisation", "%", "utilization_percent", None),
)


@dataclass
class GpuLive:
    index: int
    progress: str  # the stressor's own words: Gflop/s, iterations, errors
    status: v.VerdictStatus  # verdict so far
    problems: list[str] = field(default_factory=list)


@dataclass
class NodeLive:
    node: str
    phase: str
    state: str
    time_left_s: float | None
    samples: int
    status: v.VerdictStatus  # verdict so far
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
            "time_left_s": left, "samples": view.collector.count, "reason": view.reason}


def node_live(view: NodeRunView, thresholds: v.Thresholds = None) -> NodeLive:
    s = view.status or {}
    tools = s.get("tools") or {}
    if view.verdict is not None:
        return _judged(view, view.verdict, tools)
    run = v.NodeRun(
        view.node,
        {},
        {"phases": s.get("phases") or {}, "gpu": {"tool": None}},
        [],
        view.collector.events,
        view.collector.facts,
        fold=view.collector.fold,
    )
    so_far = v.judge(run, thresholds) if view.collector.count else None
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


def _judged(view: NodeRunView, final: v.NodeVerdict, tools: dict[str, Any]) -> NodeLive:
    """The run judged from its outputs: the final verdict, each GPU's problems in the words
    of its items (the stressor's own failure text among them)."""
    progress = _progress((view.status or {}).get("progress") or {})
    gpus = [
        GpuLive(
            g.index,
            progress.get(g.index, ("", None))[0],
            g.status,
            [f"{i.check}: {i.evidence}" for i in g.items if i.status != v.PASS],
        )
        for g in final.gpus
    ]
    return NodeLive(view.node, status=final.status, tool=tools.get("gpu"), gpus=gpus,
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


def gpu_series(view: NodeRunView, index: int, field_name: str) -> tuple[list[float], list[float]]:
    """Times (seconds since the epoch) and values of one GPU field over the whole run (gaps
    left out): the fold's bounded low/high envelope, so a spike stays visible."""
    env = view.collector.fold.envelopes.get(index)
    if env is None:
        return [], []
    points = env.points(field_name)
    return [t for t, _ in points], [float(v) for _, v in points]


def gpu_indexes(view: NodeRunView) -> list[int]:
    return list(view.collector.fold.last_indexes)
