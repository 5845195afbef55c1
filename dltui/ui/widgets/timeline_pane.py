"""The node's timeline, newest first: alerts opened and closed, status changes, XIDs, facts."""

from __future__ import annotations

from itertools import islice

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .. import levels
from .pane import Pane

SHOWN = 12


class TimelinePane(Pane):
    def __init__(self) -> None:
        super().__init__("Timeline", id="timeline")

    def draw(self, node: NodeState, now: float) -> Content:
        if not node.timeline:
            return Content.styled("nothing has happened yet", "$foreground-muted")
        self.set_border_text(subtitle=f"{len(node.timeline)} entries" if len(node.timeline) > SHOWN else "")
        lines = []
        for e in islice(reversed(node.timeline), SHOWN):
            level = levels.severity(e.severity)
            where = f"GPU{e.gpu} " if e.gpu is not None else ""
            lines.append(
                Content.assemble(
                    (f"{fmt.duration(max(0.0, now - e.time)) + ' ago':>10} ", "$foreground-muted"),
                    (
                        f"{e.kind:<12} ",
                        levels.STYLE[level] if level in (levels.WARM, levels.HOT) else "$foreground-muted",
                    ),
                    (where, "bold"),
                    e.message,
                )
            )
        return Content("\n").join(lines)
