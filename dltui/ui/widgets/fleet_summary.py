"""The fleet screen's top line: how many nodes are well, how many GPUs run hot, open alerts."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from dltui.core import status as st
from dltui.core.state import NodeState
from dltui.core.timeline import CRITICAL, WARNING

from .. import levels
from .pane import same


class FleetSummary(Static):
    DEFAULT_CSS = """
    FleetSummary {
        height: 1;
        padding: 0 1;
        background: $panel;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    _drawn: Content | None = None
    _counted: dict[str, tuple[int, tuple[str, int, int, int, int, int]]] | None = None

    def count(self, nodes: list[NodeState], now: float, thresholds: levels.NodeThresholds) -> None:
        """What each of ``nodes`` adds to the line, counted again only for a node that changed
        (its version moved): the fleet's cost is a dict look-up. ``show`` counts its nodes; a
        large fleet's redraw counts them a slice at a time beforehand, one event-loop turn
        each (screens/fleet.py), and ``show`` then finds them counted."""
        counted = self._counted if self._counted is not None else {}
        for n in nodes:
            # Going stale changes a node too: node_stale's alert opens on the same tick, at
            # the same limit (levels.is_stale), and moves the node's version.
            cached = counted.get(n.name)
            if cached is None or cached[0] != n.version:
                counted[n.name] = (n.version, _count(n, now, thresholds))
        self._counted = counted

    def show(
        self,
        nodes: list[NodeState],
        now: float,
        shown: int,
        sort: str,
        filter_text: str,
        thresholds: levels.NodeThresholds,
    ) -> None:
        by_level = {levels.OK: 0, levels.WARM: 0, levels.HOT: 0}
        gpus = hot = idle = 0
        intervals = set()  # what the nodes sample at: one value, or two while a change spreads
        alerts = {levels.HOT: 0, levels.WARM: 0}
        counted = self._counted if self._counted is not None else {}
        for n in nodes:
            if n.status == st.OK:  # a node without a probe samples at nothing
                intervals.add(n.interval_s)
            cached = counted.get(n.name)
            if cached is None or cached[0] != n.version:  # as ``count``, in the one loop
                cached = counted[n.name] = (n.version, _count(n, now, thresholds))
            level, critical, warning, n_gpus, n_hot, n_idle = cached[1]
            by_level[level] += 1
            alerts[levels.HOT] += critical
            alerts[levels.WARM] += warning
            gpus += n_gpus
            hot += n_hot
            idle += n_idle
        if len(counted) > 2 * len(nodes):  # nodes gone from the fleet
            names = {n.name for n in nodes}
            counted = {k: v for k, v in counted.items() if k in names}
        self._counted = counted
        parts: list = [("dltui", "bold $text-primary"), f"  {len(nodes)} nodes "]
        for level in (levels.OK, levels.WARM, levels.HOT):
            if by_level[level] or level == levels.OK:
                parts += [(f" {levels.STATUS_GLYPH[level]} {by_level[level]}", levels.STYLE[level])]
        parts += [("  · ", "$foreground-muted"), f"{gpus} GPUs"]
        if hot:
            parts += [(f" {hot} hot", levels.STYLE[levels.HOT])]
        if idle:
            parts += [(f" {idle} idle", levels.STYLE[levels.IDLE])]
        parts += [("  · alerts", "$foreground-muted")]
        for level in (levels.HOT, levels.WARM):
            parts += [
                (
                    f" {levels.ALERT_GLYPH[level]}{alerts[level]}",
                    levels.STYLE[level] if alerts[level] else "$foreground-muted",
                )
            ]
        parts += [("  · sort ", "$foreground-muted"), (sort, "bold")]
        if filter_text:
            parts += [
                ("  · filter ", "$foreground-muted"),
                (filter_text, "bold $text-accent"),
                (f" ({shown} of {len(nodes)})", "$foreground-muted"),
            ]
        if intervals:
            low, high = min(intervals), max(intervals)
            every = f"{low:g} s" if low == high else f"{low:g}–{high:g} s"
            parts += [("  · every ", "$foreground-muted"), (every, "bold")]
        content = Content.assemble(*parts)
        if self._drawn is None or not same(content, self._drawn):
            self._drawn = content
            self.update(content, layout=False)  # always one line


def _count(n: NodeState, now: float, thresholds: levels.NodeThresholds) -> tuple[str, int, int, int, int, int]:
    """What one node adds to the summary: status level, critical and warning alerts, GPUs, hot
    GPUs, idle GPUs. Every node of the fleet once a second: plain loops and counters, no lists."""
    critical = warning = 0
    for a in n.alerts.values():
        if a.severity == CRITICAL:
            critical += 1
        elif a.severity == WARNING:
            warning += 1
    gpus = n.sample.gpus if n.sample is not None else ()
    th = thresholds.of(n.name)
    hot, idle = levels.hot_and_idle(gpus, th)
    return (levels.node_status(n, now, th)[0], critical, warning, len(gpus), hot, idle)
