"""Network interfaces: receive and transmit rates with a sparkline, link speed, errors; the
InfiniBand / RoCE HCA ports beside them (fabric_lines.py)."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import NodeState

from .fabric_lines import port_lines
from .pane import Pane, waiting


class NetworkPane(Pane):
    def __init__(self) -> None:
        super().__init__("Network", id="network")

    def draw(self, node: NodeState, now: float) -> Content:
        s = node.sample
        if s is None:
            return waiting(node)
        speeds = {n.name: n.speed_mbps for n in node.facts.nics} if node.facts else {}
        name_w = max((len(n.name) for n in s.networks), default=3)
        width = max(4, self.inner_width - name_w - 24)
        self.set_border_text(subtitle=f"rx: {self.span_label(node, width)}")
        lines = [
            Content.styled(f"{'nic':<{name_w}} {'rx/s':>7} {'tx/s':>7}  {'rx':<{width}}  link", "$foreground-muted")
        ]
        for n in s.networks:
            errors = sum(v for v in (n.rx_errors_total, n.tx_errors_total) if v)
            rx = SeriesKey(Metric.NETWORK_RX_BYTES_PER_S, n.name)
            lines.append(
                Content.assemble(
                    (n.name.ljust(name_w), "bold"),
                    fmt.size(n.rx_bytes_per_s).rjust(8),
                    fmt.size(n.tx_bytes_per_s).rjust(8),
                    "  ",
                    (
                        self.spark(node, rx, width, 0, _line_rate(speeds.get(n.name))),
                        "$primary",
                    ),
                    _speed(speeds.get(n.name)).rjust(6),
                    (f" {errors} errors" if errors else "", "$text-error"),
                )
            )
        if not s.networks:
            lines = [Content.styled("no interfaces reported", "$foreground-muted")]
        lines += port_lines(node, max(name_w, 6))
        return Content("\n").join(lines)


def _speed(mbps: int | None) -> str:
    if not mbps:
        return fmt.NA
    return f"{mbps // 1000}G" if mbps >= 1000 else f"{mbps}M"


def _line_rate(speed_mbps: int | None) -> float:
    """Bytes per second of the link, the sparkline's top (10 Gb/s when the speed is unknown)."""
    return (speed_mbps or 10_000) * 1_000_000 / 8
