"""The chart drawing dltui used before issue 35, kept as the reference bench/ui_cpu.py part 4
measures the braille drawing against in the same run: plotext's build, then Rich's ANSI decoding
(what the chart widget did with it). Same charts, same layout rules.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import plotext as plt
from rich.text import Text

from dltui.core.format import value_span
from dltui.ui.charts import ALERT_COLOR, LEGEND_IN_CHART, Chart, time_ticks, value_ticks

_FRAME_ROWS = 4


def render_text(chart: Chart, width: int, height: int) -> Text:
    return Text.from_ansi(_render(chart, width, height), no_wrap=True)


def _render(chart: Chart, width: int, height: int) -> str:
    # More than a few entries: plotext's legend, drawn inside the canvas, would hide the start
    # of every line under it, so they go on a key line under the title instead.
    entries = [(s.label, s.color) for s in chart.series if s.label and s.times]
    if chart.spans:
        entries.append(("alert open", ALERT_COLOR))
    keyed = len(entries) > LEGEND_IN_CHART
    plt.clear_figure()
    plt.limit_size(False, False)  # plotext would cap the chart at the terminal it thinks it has
    plt.plotsize(max(20, width), max(6, height - (1 if keyed else 0)))
    plt.theme("dark")
    plt.canvas_color("default")
    plt.axes_color("default")
    plt.ticks_color("default")
    plt.title(f"{chart.title} · {chart.unit}")
    values = [v for s in chart.series for v in s.values]
    low = chart.low if chart.low is not None else (min(values) if values else 0.0)
    high = chart.high if chart.high is not None else (max(values) if values else 1.0)
    low, high = value_span(low, high)
    # The alert band gets the top row to itself: a full-cell mark would hide the dots under it.
    rows = max(3, height - _FRAME_ROWS)
    row = (high - low) / (rows - 2)
    top = high + 1.5 * row
    plt.ylim(low, high + 2 * row)
    plt.xlim(chart.start, max(chart.end, chart.start + 1.0))  # one sample: no zero-wide axis
    for s in chart.series:
        if s.times:
            # Dense series as dots (a dot a braille column: plotext's line joining is its
            # costliest step); sparse ones joined, or a short history would be a few specks.
            draw = plt.scatter if len(s.times) >= width else plt.plot
            label = None if keyed else s.label
            draw(s.times, s.values, label=label, color=s.color, marker="braille")
    for i, span in enumerate(chart.spans):
        end = chart.end if span.end is None else span.end
        plt.plot(
            [span.start, max(end, span.start)],
            [top, top],
            color=ALERT_COLOR,
            marker="━",
            label="alert open" if i == 0 and not keyed else None,
        )
    values_at = value_ticks(low, high, max(2, (rows - 1) // 2))
    plt.yticks(values_at, [f"{v:g}" for v in values_at])
    ticks = time_ticks(chart.start, chart.end, max(2, width // 12))
    shape = "%H:%M:%S" if len(ticks) > 1 and ticks[1] - ticks[0] < 60 else "%H:%M"
    plt.xticks(ticks, [time.strftime(shape, time.localtime(t)) for t in ticks])
    drawn = plt.build()
    if not keyed:
        return drawn
    title, _, rest = drawn.partition("\n")
    return f"{title}\n{legend_line(entries, width)}\n{rest}"


def legend_line(entries: Sequence[tuple[str, str]], width: int) -> str:
    """``⣿ GPU0  ⣿ GPU1 …`` in each line's colour, cut to ``width`` columns."""
    parts, used = [], 1
    for label, color in entries:
        piece = f"⣿ {label}"
        if used + len(piece) + 2 > width:
            parts.append("…")
            break
        parts.append(plt.colorize(piece, color))
        used += len(piece) + 2
    return " " + "  ".join(parts)


