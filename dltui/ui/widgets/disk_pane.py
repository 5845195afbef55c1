"""Block devices (rates, busy time, latency), file systems (how full) and drive health (SMART)."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import NodeState

from .. import levels
from .drive_rows import drive_lines
from .pane import Pane, waiting

FS_BAR = 10


class DiskPane(Pane):
    def __init__(self, *, thresholds: levels.Thresholds = levels.DEFAULT) -> None:
        super().__init__("Disks", id="disks")
        self.thresholds = thresholds

    def draw(self, node: NodeState, now: float) -> Content:
        s = node.sample
        if s is None:
            return waiting(node)
        name_w = max((len(d.name) for d in s.disks), default=6)
        width = max(4, self.inner_width - name_w - 34)
        self.set_border_text(subtitle=f"busy: {self.span_label(node, width)}")
        lines = [
            Content.styled(
                f"{'device':<{name_w}} {'read/s':>7} {'write/s':>7} {'busy':>5} {'':<{width}} {'await':>7}",
                "$foreground-muted",
            )
        ]
        for d in s.disks:
            busy_level = levels.disk_busy(d.busy_percent)
            lines.append(
                Content.assemble(
                    (d.name.ljust(name_w), "bold"),
                    fmt.size(d.read_bytes_per_s).rjust(8),
                    fmt.size(d.write_bytes_per_s).rjust(8),
                    (fmt.pct(d.busy_percent).rjust(6), _alarm(busy_level)),
                    " ",
                    (self.spark(node, SeriesKey(Metric.DISK_BUSY_PERCENT, d.name), width, 0, 100), "$primary"),
                    fmt.num(d.await_ms, 1, "ms").rjust(8),
                )
            )
        if not s.disks:
            lines = [Content.styled("no block devices reported", "$foreground-muted")]
        mount_w = max((len(f.mountpoint) for f in s.filesystems), default=4)
        for f in s.filesystems:
            level = levels.filesystem(f.used_percent, self.thresholds)
            filled = round((f.used_percent or 0) / 100 * FS_BAR)
            lines.append(
                Content.assemble(
                    (f.mountpoint.ljust(mount_w + 1), "bold"),
                    ("█" * filled, levels.STYLE[level] if level != levels.NA else "$foreground-disabled"),
                    ("░" * (FS_BAR - filled), "$foreground-disabled"),
                    (fmt.pct(f.used_percent).rjust(5), _alarm(level)),
                    (" of ", "$foreground-muted"),
                    fmt.size(f.total_bytes),
                    (f"  {f.fstype or ''}", "$foreground-muted"),
                )
            )
        lines += drive_lines(node, now)
        return Content("\n").join(lines)


def _alarm(level: str) -> str:
    return levels.STYLE[level] if level in (levels.WARM, levels.HOT) else ""
