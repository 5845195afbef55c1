"""The past alerts of a report (``dltui snapshot --since``, the burn-in's "before the run"):
per node, the alerts the rules find over a window of its Prometheus history, with their start
and end, or in plain words why there is none."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from dltui.core.past_alerts import PastAlert
from dltui.transport.prometheus.client import PrometheusError

from .fetch import NoHistory
from .plan import MAX_POINTS
from .source import HistorySource

BEFORE_THE_RUN_S = 7 * 86400  # the burn-in report's "before the run": the week before it began


@dataclass
class NodePast:
    name: str
    since: float
    until: float
    source: str | None = None  # which exporters' series answered
    step_s: float | None = None  # one point a step
    alerts: list[PastAlert] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As documented (docs/json-schema.md, "history"): the node's name is its key."""
        out = asdict(self)
        del out["name"]
        return out


async def pasts(
    history: HistorySource, nodes: list[tuple[str, str | None]], window_s: float, end: float | None = None
) -> list[NodePast]:
    """Each node's (name, reported host name) past over ``window_s`` up to ``end`` (now), at
    the finest step Prometheus gives for it; the nodes asked at once."""
    end = history.clock() if end is None else end

    async def one(name: str, hostname: str | None) -> NodePast:
        out = NodePast(name, end - window_s, end)
        try:
            past = await history.window(name, window_s, MAX_POINTS, end, hostname)
        except (NoHistory, PrometheusError) as exc:
            out.error = str(exc)
            return out
        out.source, out.step_s, out.alerts = past.fetched.source, past.step_s, past.alerts
        return out

    return list(await asyncio.gather(*(one(n, h) for n, h in nodes)))


def when(start: float, end: float | None) -> str:
    """``Thu 13:00–16:00`` (local time); ``Thu 23:00–Fri 01:00``; ``Thu 13:00–still open``."""
    a = time.localtime(start)
    first = time.strftime("%a %H:%M", a)
    if end is None:
        return f"{first}–still open"
    b = time.localtime(end)
    same_day = (a.tm_year, a.tm_yday) == (b.tm_year, b.tm_yday)
    return f"{first}–{time.strftime('%H:%M' if same_day else '%a %H:%M', b)}"


_LASTED = re.compile(r" for [0-9][0-9dhms ]*$")


def alert_line(a: PastAlert) -> str:
    """``GPU 0: core 93 °C ≥ 90 °C …, Thu 13:00–16:00 (gpu_temp_high, critical)``."""
    where = f"GPU {a.gpu}" if a.gpu is not None else "node"
    # what the rule found, without the advice, and without "for 1h07m": the span says how long
    words = _LASTED.sub("", re.split(r"; | — ", a.message, maxsplit=1)[0])
    return f"{where}: {words}, {when(a.start, a.end)} ({a.rule}, {a.severity})"


def render_text(found: list[NodePast], title: str = "Before this run") -> str:
    """The report's section: a heading, then per node its past alerts (or why none)."""
    if not found:
        return ""
    span = found[0].until - found[0].since
    days = f"{span / 86400:g} d" if span >= 86400 else f"{span / 3600:g} h"
    lines = [f"{title} (the last {days}, from Prometheus)"]
    for p in found:
        if p.error is not None:
            lines.append(f"  {p.name}: {p.error}")
            continue
        step = f", one point every {p.step_s:g} s" if p.step_s else ""
        if not p.alerts:
            lines.append(f"  {p.name}: no alert in that window ({p.source}{step})")
            continue
        lines.append(f"  {p.name}: {len(p.alerts)} alert{'s' if len(p.alerts) != 1 else ''} ({p.source}{step})")
        lines += [f"    {alert_line(a)}" for a in p.alerts]
    return "\n".join(lines) + "\n"
