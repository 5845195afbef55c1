"""Where GPU panes would be on a node without them: says why (e.g. "no NVIDIA driver found")."""

from __future__ import annotations

from textual.content import Content

from dltui.core.state import NodeState

from .pane import Pane


class NoGpuPane(Pane):
    def __init__(self) -> None:
        super().__init__("GPUs", id="no-gpu")

    def draw(self, node: NodeState, now: float) -> Content:
        if node.facts is None:
            return Content.styled("waiting for the node's facts…", "$foreground-muted")
        return Content.assemble(
            (node.facts.gpu_note or "no GPUs on this node", "$text-warning"),
            ("  (host panes still report)", "$foreground-muted"),
        )
