"""Pressure stall information (PSI) with sparklines, and tasks stuck in uninterruptible sleep."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import NodeState

from .. import levels
from .pane import Pane, metric_line, waiting


class PressurePane(Pane):
    def __init__(self, *, thresholds: levels.Thresholds = levels.DEFAULT) -> None:
        super().__init__("Pressure (PSI avg10)", id="pressure")
        self.thresholds = thresholds

    def draw(self, node: NodeState, now: float) -> Content:
        s = node.sample
        if s is None:
            return waiting(node)
        width = self.inner_width - 26
        self.set_border_text(subtitle=self.span_label(node, width))
        lines = []
        p = s.pressure
        if p is None:
            lines.append(Content.styled("n/a: this kernel reports no PSI", "$foreground-muted"))
        else:
            for label, some, full, key in (
                ("cpu", p.cpu_some_avg10_percent, p.cpu_full_avg10_percent, Metric.PRESSURE_CPU_SOME_AVG10_PERCENT),
                ("io", p.io_some_avg10_percent, p.io_full_avg10_percent, Metric.PRESSURE_IO_SOME_AVG10_PERCENT),
                (
                    "memory",
                    p.memory_some_avg10_percent,
                    p.memory_full_avg10_percent,
                    Metric.PRESSURE_MEMORY_SOME_AVG10_PERCENT,
                ),
            ):
                level = levels.pressure(label, some, full, self.thresholds)
                line = metric_line(label, fmt.num(some, 1, "%"), level, self.spark(node, SeriesKey(key), width, 0, 100))
                lines.append(Content.assemble(line, ("  full ", "$foreground-muted"), fmt.num(full, 1, "%").rjust(5)))
        t = s.tasks
        if t is not None:
            d_level = levels.WARM if t.d_state_processes else levels.OK
            lines.append(
                Content.assemble(
                    ("D-state ", "$foreground-muted"),
                    (fmt.num(t.d_state_processes), levels.STYLE[d_level] if t.d_state_processes else ""),
                    ("  blocked on I/O ", "$foreground-muted"),
                    fmt.num(t.blocked_io),
                    ("  running ", "$foreground-muted"),
                    fmt.num(t.running),
                )
            )
        return Content("\n").join(lines)
