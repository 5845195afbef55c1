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
from dltui.core.attribution import NO_JOB, process_holder, process_owner
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
        owners = [process_owner(p) for _, p in rows]
        holders = [process_holder(p, node.jobs, node.containers) for _, p in rows]
        names = [p.name or fmt.NA for _, p in rows]
        user_w, holder_w = column_widths(owners, holders, names, self.inner_width)
        columns = _cell("USER", user_w) + _cell("JOB / CONTAINER", holder_w)
        header = f"  {'GPU':>3} {'PID':>8}  {'GPU MEM':>8}  {columns}NAME"
        lines = [Content.styled(header, "bold $foreground-muted")]
        for i, (index, p) in enumerate(rows):
            holder = holders[i]
            text = Content.assemble(
                f"{index:>3} {p.pid:>8}  {fmt.mib(p.gpu_memory_mib):>8}  {_cell(owners[i], user_w)}",
                (_cell(holder, holder_w), "$text-muted" if holder == NO_JOB else ""),
                names[i],
            )
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


USER_W, HOLDER_W = 10, 24  # the most the USER and JOB / CONTAINER columns take
NAME_MIN_W = 24  # what NAME keeps in a narrow pane (a command, a URL): USER and JOB give way first
_LEFT_W = 2 + 3 + 1 + 8 + 2 + 8 + 2  # the cursor, GPU, PID and GPU MEM before USER


def column_widths(owners: list[str], holders: list[str], names: list[str], room: int) -> tuple[int, int]:
    """USER and JOB / CONTAINER widths: each as wide as its longest entry and its heading, at
    most ``USER_W``/``HOLDER_W``, 0 (heading too) when no process has one; then narrowed,
    JOB first, so NAME keeps up to ``NAME_MIN_W`` of the pane's ``room`` cells. (Fixed widths
    left a 160-column screen's half-width pane 9 cells of NAME: a process was unrecognisable.)"""
    user_w = min(USER_W, max(len("USER"), *map(len, owners))) if any(owners) else 0
    holder_w = min(HOLDER_W, max(len("JOB / CONTAINER"), *map(len, holders))) if any(holders) else 0
    need = min(NAME_MIN_W, max(map(len, names), default=0))
    over = _LEFT_W + (user_w and user_w + 1) + (holder_w and holder_w + 1) + need - room
    if over > 0 and holder_w:
        cut = min(over, holder_w - 8)  # "job 4821…" still tells jobs apart at a glance
        holder_w, over = holder_w - cut, over - cut
    if over > 0 and user_w:
        user_w -= min(over, user_w - 4)
    return user_w, holder_w


def _cell(text: str, width: int) -> str:
    """A column's cell and the space after it; nothing for a column not shown."""
    return fit(text, width) + " " if width else ""


def fit(text: str, width: int) -> str:
    """``text`` in exactly ``width`` cells: cut with an ellipsis when longer."""
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"
