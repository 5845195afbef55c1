"""The chart view: one GPU's history over 5 min / 30 min / 2 h, a node's GPUs overlaid, or
the fleet's hottest GPUs; with a history source (``[prometheus] url``, ``--history-from``),
6 h / 24 h / 7 d too, the past fetched from Prometheus and joined to the live history.
Redrawn only when the picture can change: new samples that move the window by at least one
dot, another window, GPU or size, or a fetched past arriving."""

from __future__ import annotations

import asyncio
import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from dltui.core.state import FleetState, NodeState
from dltui.history import HISTORY_WINDOWS_S, HistorySource, NoHistory, PastWindow
from dltui.transport.prometheus.client import PrometheusError

from .. import charts, history_charts
from ..widgets.chart import PlotextChart
from ..widgets.footer import DltuiFooter

GPU, NODE, FLEET = "gpu", "node", "fleet"
FLEET_PASTS = 8  # the fleet chart's lines: the past of as many nodes is fetched
RETRY_S = 30.0  # a window Prometheus could not give is asked for again after this long


class ChartScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("w", "next_window", "Window"),
        Binding("1", "window(0)", "5 min", show=False),
        Binding("2", "window(1)", "30 min", show=False),
        Binding("3", "window(2)", "2 h", show=False),
        Binding("4", "window(3)", "6 h", show=False),
        Binding("5", "window(4)", "24 h", show=False),
        Binding("6", "window(5)", "7 d", show=False),
        Binding("right_square_bracket,n", "step_gpu(1)", "Next GPU"),
        Binding("left_square_bracket,p", "step_gpu(-1)", "Prev GPU"),
        Binding("o", "toggle_overlay", "All GPUs"),
    ]
    DEFAULT_CSS = """
    ChartScreen #chart-title { height: 1; padding: 0 1; background: $panel; }
    ChartScreen #history-note { height: 1; padding: 0 1; text-align: right; color: $text-warning; }
    ChartScreen #charts { height: 1fr; }
    ChartScreen #chart-0 { height: 2fr; }  /* heat: three lines, the one most looked at */
    """

    def __init__(
        self,
        fleet: FleetState,
        node_name: str | None = None,
        gpu: int = 0,
        *,
        history: HistorySource | None = None,
        window_s: int | None = None,
        overlay: bool = False,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.node_name = node_name
        self.gpu = gpu
        self.view = FLEET if node_name is None else NODE if overlay else GPU
        self.history = history
        self.windows: tuple[int, ...] = charts.WINDOWS_S + (HISTORY_WINDOWS_S if history is not None else ())
        self.window_index = self.windows.index(window_s) if window_s in self.windows else 0
        self.pasts: dict[str, PastWindow] = {}  # the fetched past of the window shown, by node
        self.note = ""  # one line in the corner: fetching, or why there is no past
        self._drawn_key: tuple | None = None
        self._ready = False
        self._fetching: tuple | None = None
        self._failed: dict[tuple, float] = {}  # what could not be fetched, and when (monotonic)

    def compose(self) -> ComposeResult:
        yield Static(id="chart-title")
        yield Static(id="history-note")
        with Vertical(id="charts"):
            for i in range(len(charts.GPU_CHARTS)):
                yield PlotextChart(id=f"chart-{i}")
        yield DltuiFooter()

    def on_mount(self) -> None:
        self._ready = True
        self.query_one("#history-note", Static).display = False
        self.update_view(self.fleet.clock())

    def on_resize(self) -> None:
        self._drawn_key = None

    @property
    def window_s(self) -> int:
        return self.windows[self.window_index]

    @property
    def node(self) -> NodeState | None:
        return self.fleet.nodes.get(self.node_name) if self.node_name else None

    def _past_wanted(self) -> bool:
        return self.history is not None and self.window_s in HISTORY_WINDOWS_S

    def update_view(self, now: float) -> None:
        if not self._ready or not self.display:
            return
        node = self.node
        nodes = list(self.fleet)
        end = charts.end_of(node) if node else max((charts.end_of(n) for n in nodes), default=0.0)
        if self._past_wanted() and not end:
            end = now  # no live sample yet: the past alone, up to now
        widgets = list(self.query(PlotextChart))
        width = widgets[0].size.width or 80
        dot_s = self.window_s / (2 * max(10, width))  # seconds a braille dot column covers
        pasts_key = tuple(sorted((n, id(p)) for n, p in self.pasts.items()))
        key = (self.view, self.gpu, self.window_index, self.size, int(end / dot_s), pasts_key)
        if key == self._drawn_key:
            return
        self._drawn_key = key
        if self._past_wanted():
            self._fetch_past(width, end, node, nodes)
        window_s, gpu = self.window_s, self.gpu
        pasts = dict(self.pasts) if self._past_wanted() else {}
        step_s = max((p.step_s for p in pasts.values()), default=1.0)
        builders: list
        if node is not None:
            past = pasts.get(node.name)
            then = past.node if past is not None else None
            if self.view == GPU:
                builders = [
                    lambda points, kind=kind: history_charts.gpu_chart(
                        node, then, step_s, gpu, kind, window_s, end, points
                    )
                    for kind in charts.GPU_CHARTS
                ]
            else:
                builders = [lambda points: history_charts.node_chart(node, then, step_s, window_s, end, points)]
        else:
            then_by_name = {name: p.node for name, p in pasts.items()}
            builders = [
                lambda points: history_charts.fleet_chart(nodes, then_by_name, step_s, window_s, end, points)
            ]
        for i, widget in enumerate(widgets):
            widget.display = i < len(builders)
            if i < len(builders):
                widget.plot(builders[i])
        self._title()

    # -- the past, fetched off the event loop ------------------------------------------------

    def _fetch_past(self, width: int, end: float, node: NodeState | None, nodes: list[NodeState]) -> None:
        """Fetch the window's past for the nodes drawn, unless it is there or on its way. The
        worker is exclusive: choosing another window cancels the fetch of this one."""
        assert self.history is not None
        cells = max(10, width)
        names = [node.name] if node is not None else [n.name for n in _hottest(nodes, FLEET_PASTS)]
        want = (self.window_s, cells, tuple(names))
        fresh = {n: self.history.cached(n, self.window_s, cells, end) for n in names}
        if all(fresh.values()):
            self.pasts = {n: p for n, p in fresh.items() if p is not None}
            return
        if self._fetching == want:
            return
        failed = self._failed.get(want)
        if failed is not None and time.monotonic() - failed < RETRY_S:
            return  # said in the corner; asked again only after a while
        self._fetching = want
        hostnames = {n.name: n.facts.hostname if n.facts else None for n in nodes}
        self._say(f"fetching {charts.window_label(self.window_s)} of history from {self.history.url} …")
        self.run_worker(
            self._fetch(want, names, hostnames, end), group="history", exclusive=True, exit_on_error=False
        )

    async def _fetch(self, want: tuple, names: list[str], hostnames: dict, end: float) -> None:
        assert self.history is not None
        window_s, cells, _ = want
        got: dict[str, PastWindow] = {}
        problems: list[str] = []
        history = self.history
        answers = await asyncio.gather(
            *(history.window(n, window_s, cells, end, hostnames.get(n)) for n in names), return_exceptions=True
        )
        for name, answer in zip(names, answers, strict=True):
            if isinstance(answer, PastWindow):
                got[name] = answer
            elif isinstance(answer, NoHistory):
                problems.append(str(answer))
            elif isinstance(answer, PrometheusError):
                problems.append(f"{answer}: showing this run's history only")
            elif isinstance(answer, BaseException):
                raise answer
        if self._fetching != want:
            return
        self._fetching = None
        self.pasts = got
        if problems:
            self._failed[want] = time.monotonic()
            self._say(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
        else:
            sources = sorted({p.fetched.source for p in got.values()})
            self._say(f"before this run: {', '.join(sources)}, from Prometheus", quiet=True)
        self._drawn_key = None
        self.update_view(self.fleet.clock())

    def _say(self, text: str, quiet: bool = False) -> None:
        self.note = text
        note = self.query_one("#history-note", Static)
        note.display = bool(text)
        note.set_class(quiet, "-quiet")
        note.update(Content(text))

    def _title(self) -> None:
        where = self.node_name or "fleet"
        what = {GPU: f"GPU{self.gpu}", NODE: "all GPUs", FLEET: "hottest GPU per node"}[self.view]
        windows = "  ".join(f"[{i + 1}] {charts.window_label(w)}" for i, w in enumerate(self.windows))
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
        if not self._past_wanted():
            self._fetching = None
            self.pasts = {}
            self.workers.cancel_group(self, "history")
            if self._ready:
                self._say("")
        self.update_view(self.fleet.clock())

    # -- actions ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("step_gpu", "toggle_overlay"):
            return self.node_name is not None
        if action == "window":
            return parameters[0] < len(self.windows)
        return True

    def action_back(self) -> None:
        self.workers.cancel_group(self, "history")
        self.app.pop_screen()

    def action_next_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(self.windows)
        self._redraw()

    def action_window(self, index: int) -> None:
        if index < len(self.windows):
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


def _hottest(nodes: list[NodeState], most: int) -> list[NodeState]:
    """The nodes the fleet chart draws (its ``most`` hottest by their newest sample)."""

    def hottest_now(n: NodeState) -> float:
        temps = [g.temperature_c for g in n.sample.gpus if g.temperature_c is not None] if n.sample else []
        return max(temps, default=-1.0)

    ranked = sorted((n for n in nodes if n.sample is not None and n.sample.gpus), key=hottest_now, reverse=True)
    return ranked[:most]
