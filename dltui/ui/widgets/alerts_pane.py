"""Open alerts, worst first: what is wrong, where, since when."""

from __future__ import annotations

from textual.content import Content

from dltui.core.state import NodeState
from dltui.core.timeline import severity_rank

from .. import levels
from .pane import Pane


class AlertsPane(Pane):
    DEFAULT_CSS = """
    AlertsPane {
        max-height: 14;
        text-wrap: wrap;  /* the message is the advice: never cut it */
    }
    """

    def __init__(self) -> None:
        super().__init__("Alerts", id="alerts")

    def draw(self, node: NodeState, now: float) -> Content:
        alerts = sorted(
            node.alerts.values(), key=lambda a: (-severity_rank(a.severity), a.gpu if a.gpu is not None else -1)
        )
        self.border_title = f"Alerts · {len(alerts)} open" if alerts else "Alerts"
        if not alerts:
            return Content.styled("no open alerts", "$foreground-muted")
        lines = []
        for a in alerts:
            level = levels.severity(a.severity)
            where = f"GPU{a.gpu} " if a.gpu is not None else ""
            lines.append(
                Content.assemble(
                    (f"{levels.ALERT_GLYPH.get(level, 'i')} {a.severity:<8}", levels.STYLE[level]),
                    (f" {where}", "bold"),
                    a.message,  # the message says since when, the evidence and what to do
                )
            )
        return Content("\n").join(lines)
