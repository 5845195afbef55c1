"""Host memory: used with a sparkline, what the kernel holds for caches, and swap."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import NodeState

from .. import levels
from .pane import Pane, labelled, metric_line, waiting


class MemoryPane(Pane):
    def __init__(self, *, thresholds: levels.Thresholds = levels.DEFAULT) -> None:
        super().__init__("Memory", id="memory")
        self.thresholds = thresholds

    def draw(self, node: NodeState, now: float) -> Content:
        m = node.sample.memory if node.sample else None
        if m is None:
            return waiting(node)
        width = self.inner_width - 14
        self.set_border_text(subtitle=self.span_label(node, width))
        used = 100.0 * m.used_bytes / m.total_bytes if m.used_bytes is not None and m.total_bytes else None
        if not m.swap_total_bytes:
            swap = Content.styled("no swap" if m.swap_total_bytes == 0 else "swap n/a", "$foreground-muted")
        else:
            swap = labelled("swap ", f"{fmt.size(m.swap_used_bytes)}/{fmt.size(m.swap_total_bytes)}")
        return Content("\n").join(
            [
                metric_line(
                    "used",
                    fmt.pct(used),
                    levels.memory(used, self.thresholds),
                    self.spark(node, SeriesKey(Metric.MEMORY_USED_PERCENT), width, 0, 100),
                ),
                Content.assemble(
                    f"{fmt.size(m.used_bytes)}/{fmt.size(m.total_bytes)}",
                    labelled("  available ", fmt.size(m.available_bytes)),
                ),
                labelled(
                    "cache ", fmt.size(m.cached_bytes), "  buffers ", fmt.size(m.buffers_bytes),
                    "  shm ", fmt.size(m.shmem_bytes),
                ),
                swap,
            ]
        )
