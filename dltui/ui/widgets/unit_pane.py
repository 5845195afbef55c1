"""The training unit(s) of a node: state, restarts, since when, last exit, and the journal
tail (followed while the node screen is open; see actions/journal.py)."""

from __future__ import annotations

import time

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.state import NodeState
from dltui.core.units import known_units, started_at

from .pane import Pane

JOURNAL_SHOWN = 8
_STATE_STYLE = {
    "active": "$text-success",
    "failed": "bold $text-error",
    "activating": "$text-warning",
}


class UnitPane(Pane):
    def __init__(self) -> None:
        super().__init__("Training unit", id="unit")
        self.journal: list[str] = []
        self.journal_problem: str | None = None
        self.last_action: str | None = None  # the newest action's result on this node

    def show(self, node: NodeState, now: float) -> None:
        units = node.sample.units if node.sample else []
        self.display = bool(units)  # nodes without a configured unit show no pane
        if units:
            super().show(node, now)

    def redraw(self) -> None:
        """New journal lines or an action result: draw again with what was shown last."""
        if self._shown is not None:
            self._drawn = None
            self.show(*self._shown)

    def draw(self, node: NodeState, now: float) -> Content:
        sample = node.sample
        lines: list[Content] = []
        for u in sample.units if sample else []:
            if u.error:
                lines.append(Content.styled(f"{u.name}: {u.error}", "$foreground-muted"))
                continue
            if not known_units([u]):
                lines.append(
                    Content.styled(f"{u.name}: not-found on this node", "$foreground-muted")
                )
                continue
            state = f"{u.active_state}/{u.sub_state}"
            since = started_at(u, node.facts)
            when = ""
            if since is not None and sample is not None and u.active_state == "active":
                clock = time.strftime("%H:%M:%S", time.localtime(since))
                when = f"since {clock} ({fmt.duration(max(0.0, sample.time - since))})"
            exit_words = f"last exit {u.exec_main_status} ({u.result})" if u.result else ""
            lines.append(
                Content.assemble(
                    (u.name, "bold"),
                    "  ",
                    (state, _STATE_STYLE.get(u.active_state or "", "$foreground-muted")),
                    "  ",
                    (when, "$foreground-muted"),
                )
            )
            detail = [f"restarts {u.restarts_total}", f"MainPID {u.main_pid or '-'}", exit_words]
            if u.memory_current_bytes is not None:
                detail.append(f"mem {fmt.size(u.memory_current_bytes)}")
            lines.append(
                Content.styled("  " + "   ".join(d for d in detail if d), "$foreground-muted")
            )
        if self.last_action:
            lines.append(Content.styled(self.last_action, "$text-accent"))
        if self.journal_problem:
            lines.append(Content.styled(self.journal_problem, "$text-warning"))
        for line in self.journal[-JOURNAL_SHOWN:]:
            lines.append(Content(line))
        return Content("\n").join(lines)
