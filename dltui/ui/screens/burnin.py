"""The burn-in screen: every node's phase, time left and verdict so far; for the node in view,
each GPU's stressor progress and verdict, and plotext charts of the whole run (temperature,
HBM, margin, power vs limit, SM clock vs max, utilisation), one line per GPU.

It only reads: a ``BurnIn`` session (``dltui.burnin.session``) follows the nodes in the
background and fills the views; this screen redraws from them once a second.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from dltui.burnin import live
from dltui.burnin.remote import NodeRunView
from dltui.ui import charts
from dltui.ui.widgets.chart import PlotextChart
from dltui.ui.widgets.footer import DltuiFooter

JUDGE_EVERY_S = 5.0
CHART_EVERY_S = 5.0
_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "not run": "dim"}
_WORD = {"pass": "PASS so far", "warn": "WARN", "fail": "FAIL", "not run": "not run"}
_ENDED = ("done", "failed", "stopped")  # the driver's last states (status.json)
_RANGES = {"util": (0.0, 100.0)}  # fixed y ranges where the metric has one
_REFERENCE_COLOR = "gray"


def _fmt_left(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


def _as_built(chart: charts.Chart) -> Callable[[int], charts.Chart]:
    """A chart builder that needs no squeezing: the fold already bounds every series."""
    return lambda _points: chart


class BurnInScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("n", "next_node", "Next node"),
        Binding("x", "stop", "Stop run"),
    ]
    DEFAULT_CSS = """
    BurnInScreen #bi-nodes { height: auto; padding: 0 1; }
    BurnInScreen #bi-gpus { height: auto; padding: 0 1; }
    BurnInScreen #bi-charts { grid-size: 2; grid-rows: 14; height: auto; padding: 0 1; }
    BurnInScreen .bi-chart { height: 14; }
    """

    def __init__(
        self,
        run_id: str,
        views: dict[str, NodeRunView],
        on_stop: Callable[[], None] | None = None,
        live_refresh: bool = True,
        failed: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.views = views
        # nodes where the run could not start, with why (the session fills it as it starts)
        self.failed: Mapping[str, str] = failed if failed is not None else {}
        self.node = next(iter(views), "")
        self.on_stop = on_stop
        self.live_refresh = live_refresh
        self._lives: dict[str, live.NodeLive] = {}
        self._judged_at: dict[str, tuple[float, tuple]] = {}
        self._charted: tuple[tuple, float] = ((), 0.0)  # (node and size drawn, when)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="bi-nodes")
            yield Static(id="bi-gpus")
            with Grid(id="bi-charts"):
                for key, *_ in live.SERIES:
                    # drawn off the event loop while live: six charts are ~130 ms of plotext
                    yield PlotextChart(
                        classes="bi-chart", id=f"bi-{key}", in_thread=self.live_refresh
                    )
        yield DltuiFooter()

    def on_mount(self) -> None:
        self.redraw()
        if self.live_refresh:
            self.set_interval(1.0, self.redraw)

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        lives = self._judged()
        self.query_one("#bi-nodes", Static).update(self._nodes_text(lives))
        if self.node in lives:
            self.query_one("#bi-gpus", Static).update(self._gpus_text(lives[self.node]))
            # a chart of the whole run moves little in a second: redrawn every CHART_EVERY_S,
            # and at once for another node or size
            now = time.monotonic()
            key = (self.node, self.size)
            if key != self._charted[0] or now - self._charted[1] >= CHART_EVERY_S:
                self._charted = (key, now)
                self._draw_charts(self.views[self.node])

    def _judged(self) -> dict[str, live.NodeLive]:
        """The verdict so far reads the whole run: at most every JUDGE_EVERY_S per node (a
        2-hour run costs a fraction of a second to judge), and at once when its phase moves."""
        now = time.monotonic()
        for name, view in self.views.items():
            key = (view.status.get("phase"), view.status.get("state"))
            last = self._judged_at.get(name)
            if last is None or last[1] != key or now - last[0] >= JUDGE_EVERY_S:
                self._lives[name] = live.node_live(view)
                self._judged_at[name] = (now, key)
            else:  # cheap fields stay live between judgements
                old = self._lives[name]
                fresh = live.node_live_header(view)
                self._lives[name] = live.NodeLive(**{**old.__dict__, **fresh})
        return dict(self._lives)

    def _nodes_text(self, lives: dict[str, live.NodeLive]) -> Text:
        t = Text(f"Burn-in {self.run_id}\n", style="bold")
        t.append(
            f"{'node':<12}{'phase':<11}{'state':<9}{'load left':>10}{'samples':>9}"
            "  verdict\n",
            style="dim",
        )
        for name, n in lives.items():
            mark = "▶ " if name == self.node else "  "
            if name in self.failed:
                t.append(f"{mark}{name:<10}")
                t.append(f"not started: {self.failed[name]}\n", style="bold red")
                continue
            t.append(
                f"{mark}{name:<10}{n.phase:<11}{n.state:<9}"
                f"{_fmt_left(n.time_left_s):>10}{n.samples:>9}  "
            )
            # "so far" while it runs; the node's verdict once its run has ended
            if n.state in _ENDED:
                t.append(n.status.upper(), style=_STYLE[n.status])
            elif n.state == "running":
                t.append(_WORD[n.status], style=_STYLE[n.status])
            else:  # no status from the node yet
                t.append("—", style="dim")
            if n.reason and n.state == "running":
                t.append(f"  ({n.reason})", style="yellow")
            t.append("\n")
        return t

    def _gpus_text(self, n: live.NodeLive) -> Text:
        t = Text(f"{n.node}: GPU stressor {n.tool or 'none'}\n", style="bold")
        for g in n.gpus:
            t.append(f"  GPU{g.index:<3}{g.progress:<38}")
            t.append(f"{_WORD[g.status]:<12}", style=_STYLE[g.status])
            problems = Text("; ".join(g.problems))
            problems.truncate(max(40, self.size.width - 64), overflow="ellipsis")  # cut: "…"
            t.append_text(problems)
            t.append("\n")
        return t

    def _draw_charts(self, view: NodeRunView) -> None:
        """The dashboard's own chart widget (wall-clock axis, fixed ranges, dense series as
        dots): one line per GPU over the whole run, the reference (limit, max) in grey. The
        series are read here, on the event loop, where the follow updates them."""
        indexes = live.gpu_indexes(view)
        for key, title, unit, field_name, ref in live.SERIES:
            lines = []
            for i in indexes:
                times, values = live.gpu_series(view, i, field_name)
                if times:
                    lines.append(charts.Series(f"GPU{i}", times, values))
            series = charts.overlay(lines)
            if ref and lines:
                times, values = live.gpu_series(view, indexes[0], ref)
                if times:  # drawn first: a GPU at its limit or max stays visible on top of it
                    reference = charts.Series(ref.split("_")[-2], times, values, _REFERENCE_COLOR)
                    series.insert(0, reference)
            widget = self.query_one(f"#bi-{key}", PlotextChart)
            if not lines:
                widget.say(Text(f"{title} ({unit}): not reported", style="dim"))
                continue
            low, high = _RANGES.get(key, (None, None))
            chart = charts.Chart(
                title,
                unit,
                min(s.times[0] for s in series),
                max(s.times[-1] for s in series),
                series,
                low=low,
                high=high,
            )
            widget.plot(_as_built(chart))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_next_node(self) -> None:
        names = list(self.views)
        if names:
            self.node = names[(names.index(self.node) + 1) % len(names)]
            self.redraw()

    def action_stop(self) -> None:
        if self.on_stop is None:
            self.notify(
                "this screen cannot stop the run: use dltui burn-in stop", severity="warning"
            )
            return
        from .prompt import PromptScreen

        stop = self.on_stop
        self.app.push_screen(
            PromptScreen(
                "stop? ", placeholder=f"stop burn-in {self.run_id} on every node: type yes"
            ),
            lambda answer: stop() if answer == "yes" else None,
        )
