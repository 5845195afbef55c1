"""The host CPU: total with a sparkline, the split, load, and one bar per core."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import NodeState

from .. import levels
from ..spark import bar
from .pane import Pane, labelled, metric_line, waiting


class CpuPane(Pane):
    def __init__(self) -> None:
        super().__init__("CPU", id="cpu")

    def draw(self, node: NodeState, now: float) -> Content:
        facts = node.facts
        if facts is not None and facts.cpu_count:
            self.set_border_text(title=f"CPU · {facts.cpu_count} cores")
        c = node.sample.cpu if node.sample else None
        if c is None:
            return waiting(node)
        width = self.inner_width - 14
        self.set_border_text(subtitle=self.span_label(node, width))
        total = self.spark(node, SeriesKey(Metric.CPU_TOTAL_PERCENT), width, 0, 100)
        lines = [
            metric_line("total", fmt.pct(c.total_percent), levels.OK, total),
            labelled(
                "user ", fmt.pct(c.user_percent), "  sys ", fmt.pct(c.system_percent),
                "  iowait ", fmt.pct(c.iowait_percent), "  steal ", fmt.pct(c.steal_percent),
            ),
            labelled("load ", f"{fmt.num(c.load_1, 1)} {fmt.num(c.load_5, 1)} {fmt.num(c.load_15, 1)}"),
        ]
        cores = sorted(c.cores, key=lambda core: core.index)
        rows = -(-len(cores) // self.inner_width) if cores else 0
        per_line = -(-len(cores) // rows) if rows else 1  # rows of equal length: 2 x 32, not 50 + 14
        for start in range(0, len(cores), per_line):
            lines.append(Content.assemble(*(_core(core.total_percent) for core in cores[start : start + per_line])))
        return Content("\n").join(lines)


def _core(percent: float | None) -> tuple[str, str]:
    if percent is None:
        return ("?", "$foreground-disabled")
    return (bar(percent), "$text-warning" if percent >= 90 else "$primary")
