"""Processes on the node's GPUs: which job holds which GPU and how much of its memory."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .pane import Pane, waiting


class ProcessesPane(Pane):
    def __init__(self) -> None:
        super().__init__("GPU processes", id="processes")

    def draw(self, node: NodeState, now: float) -> Content:
        s = node.sample
        if s is None:
            return waiting(node)
        rows = [(g.index, p) for g in s.gpus for p in g.processes]
        if not rows:
            return Content.styled("no processes on the GPUs" if s.gpus else "no GPUs", "$foreground-muted")
        lines = [Content.styled(f"{'GPU':>3} {'PID':>8}  {'GPU MEM':>8}  NAME", "bold $foreground-muted")]
        for index, p in rows:
            text = Content(f"{index:>3} {p.pid:>8}  {fmt.mib(p.gpu_memory_mib):>8}  {p.name or fmt.NA}")
            if p.unit:  # the training unit's own process: what a restart of the unit would end
                text = Content.assemble(text, ("  ◆ " + p.unit, "$text-accent"))
            lines.append(text)
        return Content("\n").join(lines)
