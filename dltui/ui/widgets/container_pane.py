"""The training container(s) of a node, the unit pane's twin: state, restart policy, restart
count and how much it rose while this screen watched, OOMKilled, health, last exit, and the
``docker logs --tail`` followed while the node screen is open (ui/container_flows.py)."""

from __future__ import annotations

from textual.content import Content

from dltui.core.models import ContainerSample
from dltui.core.state import NodeState

from .pane import Pane

LOGS_SHOWN = 8
_STATE_STYLE = {
    "running": "$text-success",
    "restarting": "bold $text-warning",
    "exited": "bold $text-error",
    "dead": "bold $text-error",
}


class ContainerPane(Pane):
    def __init__(self) -> None:
        super().__init__("Training container", id="container")
        self.logs: list[str] = []
        self.logs_problem: str | None = None
        self.last_action: str | None = None
        self._first_count: dict[str, int] = {}  # restart count when this pane first saw it

    def show(self, node: NodeState, now: float) -> None:
        containers = node.sample.containers if node.sample else []
        self.display = bool(containers)  # nodes without configured containers show no pane
        if containers:
            super().show(node, now)

    def redraw(self) -> None:
        if self._shown is not None:
            self._drawn = None
            self.show(*self._shown)

    def _rises(self, c: ContainerSample) -> str:
        if c.restarts_total is None:
            return ""
        first = self._first_count.setdefault(c.name, c.restarts_total)
        if c.restarts_total < first:  # recreated: counting starts again
            first = self._first_count[c.name] = c.restarts_total
        rose = c.restarts_total - first
        return f" (+{rose} while watched)" if rose else ""

    def draw(self, node: NodeState, now: float) -> Content:
        lines: list[Content] = []
        for c in node.sample.containers if node.sample else []:
            if c.error:
                lines.append(Content.styled(f"{c.name}: {c.error}", "$foreground-muted"))
                continue
            health = f"  {c.health}" if c.health else ""
            lines.append(Content.assemble(
                (c.name, "bold"), "  ", (c.state or "?", _STATE_STYLE.get(c.state or "", "$foreground-muted")),
                (health, "bold $text-error" if c.health == "unhealthy" else "$foreground-muted"),
                ("  " + (c.image or ""), "$foreground-muted"),
            ))
            policy = c.restart_policy or "?"
            detail = [
                f"{c.engine or '?'}",
                f"restart policy {policy}",
                f"restarts {c.restarts_total if c.restarts_total is not None else '?'}{self._rises(c)}",
                f"last exit {c.exit_code}" if c.exit_code is not None else "",
                "OOMKilled" if c.oom_killed else "",
                f"since {c.started_at[:19]}" if c.started_at and c.state == "running" else "",
            ]
            style = "$text-warning" if policy == "no" or c.oom_killed else "$foreground-muted"
            lines.append(Content.styled("  " + "   ".join(d for d in detail if d), style))
        if self.last_action:
            lines.append(Content.styled(self.last_action, "$text-accent"))
        if self.logs_problem:
            lines.append(Content.styled(self.logs_problem, "$text-warning"))
        for line in self.logs[-LOGS_SHOWN:]:
            lines.append(Content(line))
        return Content("\n").join(lines)
