"""The chart view: one GPU's history over 5 min / 30 min / 2 h, a node's GPUs overlaid, or
the fleet's hottest GPUs. Redrawn only when the picture can change: new samples that move the
window by at least one dot, another window, GPU or size."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from dltui.core.state import FleetState, NodeState

from .. import charts
from ..widgets.chart import PlotextChart
from ..widgets.footer import DltuiFooter

GPU, NODE, FLEET = "gpu", "node", "fleet"


class ChartScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("w", "next_window", "Window"),
        Binding("1", "window(0)", "5 min", show=False),
        Binding("2", "window(1)", "30 min", show=False),
        Binding("3", "window(2)", "2 h", show=False),
        Binding("right_square_bracket,n", "step_gpu(1)", "Next GPU"),
        Binding("left_square_bracket,p", "step_gpu(-1)", "Prev GPU"),
        Binding("o", "toggle_overlay", "All GPUs"),
    ]
    DEFAULT_CSS = """
    ChartScreen #chart-title { height: 1; padding: 0 1; background: $panel; }
    ChartScreen #charts { height: 1fr; }
    ChartScreen #chart-0 { height: 2fr; }  /* heat: three lines, the one most looked at */
    """

    def __init__(self, fleet: FleetState, node_name: str | None = None, gpu: int = 0) -> None:
        super().__init__()
        self.fleet = fleet
        self.node_name = node_name
        self.gpu = gpu
        self.view = FLEET if node_name is None else GPU
        self.window_index = 0
        self._drawn_key: tuple | None = None
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static(id="chart-title")
        with Vertical(id="charts"):
            for i in range(len(charts.GPU_CHARTS)):
                yield PlotextChart(id=f"chart-{i}")
        yield DltuiFooter()

    def on_mount(self) -> None:
        self._ready = True
        self.update_view(self.fleet.clock())

    def on_resize(self) -> None:
        self._drawn_key = None

    @property
    def window_s(self) -> int:
        return charts.WINDOWS_S[self.window_index]

    @property
    def node(self) -> NodeState | None:
        return self.fleet.nodes.get(self.node_name) if self.node_name else None

    def update_view(self, now: float) -> None:
        if not self._ready or not self.display:
            return
        node = self.node
        nodes = list(self.fleet)
        end = charts.end_of(node) if node else max((charts.end_of(n) for n in nodes), default=0.0)
        widgets = list(self.query(PlotextChart))
        width = widgets[0].size.width or 80
        dot_s = self.window_s / (2 * max(10, width))  # seconds a braille dot column covers
        key = (self.view, self.gpu, self.window_index, self.size, int(end / dot_s))
        if key == self._drawn_key:
            return
        self._drawn_key = key
        window_s, gpu = self.window_s, self.gpu
        builders: list
        if node is not None and self.view == GPU:
            builders = [
                lambda points, kind=kind: charts.gpu_chart(node, gpu, kind, window_s, end, points)
                for kind in charts.GPU_CHARTS
            ]
        elif node is not None:
            builders = [lambda points: charts.node_chart(node, window_s, end, points)]
        else:
            builders = [lambda points: charts.fleet_chart(nodes, window_s, end, points)]
        for i, widget in enumerate(widgets):
            widget.display = i < len(builders)
            if i < len(builders):
                widget.plot(builders[i])
        self._title()

    def _title(self) -> None:
        where = self.node_name or "fleet"
        what = {GPU: f"GPU{self.gpu}", NODE: "all GPUs", FLEET: "hottest GPU per node"}[self.view]
        windows = "  ".join(
            f"[{i + 1}] {charts.window_label(w)}" for i, w in enumerate(charts.WINDOWS_S)
        )
        self.query_one("#chart-title", Static).update(
            Content.assemble(
                (where, "bold $text-primary"),
                ("  · ", "$foreground-muted"),
                (what, "bold"),
                ("  · last ", "$foreground-muted"),
                (charts.window_label(self.window_s), "bold"),
                ("  · ", "$foreground-muted"),
                (windows, "$foreground-muted"),
                ("  · local time · red band on top: alert open", "$foreground-muted"),
            )
        )

    def _redraw(self) -> None:
        self._drawn_key = None
        self.update_view(self.fleet.clock())

    # -- actions ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("step_gpu", "toggle_overlay"):
            return self.node_name is not None
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_next_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(charts.WINDOWS_S)
        self._redraw()

    def action_window(self, index: int) -> None:
        self.window_index = index
        self._redraw()

    def action_step_gpu(self, step: int) -> None:
        node = self.node
        indexes = [g.index for g in node.sample.gpus] if node and node.sample else []
        if not indexes:
            return
        at = indexes.index(self.gpu) if self.gpu in indexes else 0
        self.gpu = indexes[(at + step) % len(indexes)]
        self.view = GPU
        self._redraw()

    def action_toggle_overlay(self) -> None:
        self.view = NODE if self.view == GPU else GPU
        self._redraw()
