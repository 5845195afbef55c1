"""One chart (``charts.render_text``), drawn at the widget's own size and rebuilt when that
changes. The class keeps the name it had when plotext drew the charts."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.widgets import Static

from ..charts import Chart, render_text

Builder = Callable[[int], Chart]  # the chart for a number of points a series


class PlotextChart(Static):
    DEFAULT_CSS = """
    PlotextChart {
        height: 1fr;
        width: 1fr;
        text-wrap: nowrap;
    }
    """

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, in_thread: bool = False
    ) -> None:
        """``in_thread``: build and render off the event loop (a chart that shares its screen
        with live data: a redraw of tens of milliseconds must not hold a frame or a key)."""
        super().__init__(id=id, classes=classes)
        self.chart: Chart | None = None
        self.in_thread = in_thread
        self._builder: Builder | None = None

    @property
    def points(self) -> int:
        """How many points a series needs: one a braille dot column."""
        return 2 * max(10, self.size.width or 80)

    def plot(self, builder: Builder) -> None:
        """Draw ``builder(points)``; called again with the new width when the widget resizes."""
        self._builder = builder
        self._draw()

    def say(self, text: Text) -> None:
        """Words instead of a chart (nothing to draw yet); a resize keeps them."""
        self._builder = None
        self.chart = None
        self.update(text)

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        width, height = self.size
        if self._builder is None or not width or not height:
            return
        builder, points = self._builder, self.points
        if not self.in_thread:
            self._show(*_build(builder, points, width, height))
            return
        app = self.app

        def work() -> None:
            app.call_from_thread(self._show, *_build(builder, points, width, height))

        # exclusive: a newer redraw replaces one not started yet
        self.run_worker(work, thread=True, exclusive=True, group=f"chart-{id(self)}")

    def _show(self, chart: Chart, text: Text) -> None:
        self.chart = chart
        self.update(text)


def _build(builder: Builder, points: int, width: int, height: int) -> tuple[Chart, Text]:
    chart = builder(points)
    return chart, render_text(chart, width, height)
