"""The fleet screen's top line: how many nodes are well, how many GPUs run hot, open alerts."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from dltui.core.state import NodeState

from .. import levels


class FleetSummary(Static):
    DEFAULT_CSS = """
    FleetSummary {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    """

    _drawn: Content | None = None

    def show(
        self,
        nodes: list[NodeState],
        shown: int,
        sort: str,
        filter_text: str,
        thresholds: levels.NodeThresholds,
    ) -> None:
        by_level = {levels.OK: 0, levels.WARM: 0, levels.HOT: 0}
        gpus = hot = idle = 0
        alerts = {levels.HOT: 0, levels.WARM: 0}
        for n in nodes:
            by_level[levels.status(n.status)] += 1
            for a in n.alerts.values():
                level = levels.severity(a.severity)
                if level in alerts:
                    alerts[level] += 1
            if n.sample is None:
                continue
            th = thresholds.of(n.name)
            for g in n.sample.gpus:
                gpus += 1
                hot += levels.temperature(g.temperature_c, g.temperature_margin_c, th) == levels.HOT
                idle += levels.utilization(g.utilization_percent, th) == levels.IDLE
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
        content = Content.assemble(*parts)
        if content != self._drawn:
            self._drawn = content
            self.update(content, layout=False)  # always one line
