"""Processes on the node's GPUs: which job holds which GPU and how much of its memory.

Focused (Tab, or a click), it is a list to pick from, as in nvtop and nvitop: ``j``/``k`` or
the arrows move the cursor, and the node screen's ``K`` signals the process under it. The
cursor follows its PID across samples; when that process is gone it stays on the same row.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.content import Content

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .pane import Pane, waiting


class ProcessesPane(Pane):
    BINDINGS = [
        Binding("down,j", "move(1)", "Next process", show=False),
        Binding("up,k", "move(-1)", "Previous process", show=False),
    ]

    def __init__(self) -> None:
        super().__init__("GPU processes", id="processes")
        self.pids: list[int] = []  # in the order drawn
        self.picked: int | None = None  # the PID under the cursor
        self._row = 0

    @property
    def selected_pid(self) -> int | None:
        """The process ``K`` acts on: the one under the cursor while the pane has the focus."""
        return self.picked if self.has_focus else None

    def draw(self, node: NodeState, now: float) -> Content:
        s = node.sample
        if s is None:
            self.pids = []
            return waiting(node)
        rows = [(g.index, p) for g in s.gpus for p in g.processes]
        self.pids = [p.pid for _, p in rows]
        if not rows:
            self.picked = None
            return Content.styled("no processes on the GPUs" if s.gpus else "no GPUs", "$foreground-muted")
        if self.picked in self.pids:
            self._row = self.pids.index(self.picked)
        self._row = min(self._row, len(rows) - 1)
        self.picked = self.pids[self._row]
        lines = [Content.styled(f"  {'GPU':>3} {'PID':>8}  {'GPU MEM':>8}  NAME", "bold $foreground-muted")]
        for i, (index, p) in enumerate(rows):
            text = Content(f"{index:>3} {p.pid:>8}  {fmt.mib(p.gpu_memory_mib):>8}  {p.name or fmt.NA}")
            if p.unit:  # the training unit's own process: what a restart of the unit would end
                text = Content.assemble(text, ("  ◆ " + p.unit, "$text-accent"))
            if i == self._row and self.has_focus:
                text = Content.assemble(("▶ ", "bold $text-accent"), text.stylize("reverse"))
            else:
                text = Content.assemble("  ", text)
            lines.append(text)
        return Content("\n").join(lines)

    def action_move(self, step: int) -> None:
        if not self.pids:
            return
        self._row = max(0, min(self._row + step, len(self.pids) - 1))
        self.picked = self.pids[self._row]
        self._redraw()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and 1 <= offset.y <= len(self.pids):  # below the header line
            self._row = offset.y - 1
            self.picked = self.pids[self._row]
            self._redraw()

    def on_focus(self, event: events.Focus) -> None:
        self._redraw()  # the cursor shows only while the pane has the focus

    def on_blur(self, event: events.Blur) -> None:
        self._redraw()

    def _redraw(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)
