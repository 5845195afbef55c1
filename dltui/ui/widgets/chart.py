"""One plotext chart, drawn at the widget's own size and rebuilt when that changes."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.widgets import Static

from ..charts import Chart, render

Builder = Callable[[int], Chart]  # the chart for a number of points a series


class PlotextChart(Static):
    DEFAULT_CSS = """
    PlotextChart {
        height: 1fr;
        width: 1fr;
        text-wrap: nowrap;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart: Chart | None = None
        self._builder: Builder | None = None

    @property
    def points(self) -> int:
        """How many points a series needs: one a braille dot column."""
        return 2 * max(10, self.size.width or 80)

    def plot(self, builder: Builder) -> None:
        """Draw ``builder(points)``; called again with the new width when the widget resizes."""
        self._builder = builder
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        width, height = self.size
        if self._builder is None or not width or not height:
            return
        self.chart = self._builder(self.points)
        self.update(Text.from_ansi(render(self.chart, width, height), no_wrap=True))
