"""Charts of a node's history drawn in braille cells (``braille``), as a Rich ``Text`` for a
widget or ANSI text.

What is drawn is read from ``NodeState`` (history, timeline, alerts) and squeezed to the
chart's width before it is drawn: a 2-hour window is 7200 points a series, a chart is a few
hundred dots wide. Times on the x axis are the samples' own (the recorded clock on a replay).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text

from dltui.core.format import value_span
from dltui.core.series import HOTTEST_GPU_C, Metric, SeriesKey
from dltui.core.state import NodeState

from . import braille

WINDOWS_S = (300, 1800, 7200)  # the chart view's windows: 5 min, 30 min, 2 h
_TICK_STEPS_S = (30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
COLORS = ("cyan", "orange", "green", "magenta", "yellow", "blue", "red+", "white")
ALERT_COLOR = "red"
_FRAME_ROWS = 4  # title, the frame's top and bottom, the time labels
LEGEND_IN_CHART = 3  # more entries than this go on a key line under the title


@dataclass
class Series:
    label: str
    times: list[float]
    values: list[float]
    color: str = COLORS[0]


@dataclass
class Span:
    """A stretch of time while an alert was open (``end`` None: still open)."""

    start: float
    end: float | None
    rule: str


@dataclass
class Chart:
    title: str
    unit: str
    start: float  # the window: [start, end] in seconds since the epoch
    end: float
    series: list[Series] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    low: float | None = None  # fixed y range where the metric has one (percentages)
    high: float | None = None


def window_label(window_s: int) -> str:
    if window_s >= 2 * 86400:
        return f"{window_s // 86400} d"
    return f"{window_s // 60} min" if window_s < 3600 else f"{window_s // 3600} h"


class HistoryWindow:
    """The samples of one node inside ``[start, end]``, grouped ``per`` samples a point so that
    a series has at most ``points`` points: the times are read once for every series."""

    def __init__(self, node: NodeState, start: float, end: float, points: int) -> None:
        self.node = node
        newest = int(max(0.0, end - start) / max(0.05, node.interval_s)) + 2
        clock = node.history.time
        times = clock.values(newest)  # only the tail the window can hold is read
        self.count = len(times) - _first_at(times, start)
        self.per = max(1, -(-self.count // max(1, points)))
        self.times = clock.squeezed(self.count, self.per, max)

    def series(self, key: SeriesKey, label: str, color: str = COLORS[0], pick=max) -> Series:
        """``pick`` reduces each group (the worst case: ``max`` for heat, ``min`` for clocks and
        utilisation); gaps (node away, value not reported) are left out, never drawn as zeros."""
        ring = self.node.history.ring(key)
        values = ring.squeezed(self.count, self.per, pick) if ring is not None and self.count else []
        both = zip(self.times, values, strict=False)
        pairs = [(x, y) for x, y in both if x is not None and y is not None]
        return Series(label, [x for x, _ in pairs], [y for _, y in pairs], color)


def _first_at(times: list[float | None], start: float) -> int:
    return next((i for i, t in enumerate(times) if t is not None and t > start), len(times))


def end_of(node: NodeState) -> float:
    """The newest sample's time: where a window of this node's history ends."""
    return node.history.time.last() or 0.0


def alert_spans(node: NodeState, gpu: int | None, start: float, end: float) -> list[Span]:
    """When alerts on ``gpu`` (None: any GPU or the node) were open within the window: only
    those that overlap it, so the band and its key never speak of time the chart does not show."""
    opened: dict[str, float] = {}
    spans: list[Span] = []
    for entry in node.timeline:
        if entry.rule is None or (gpu is not None and entry.gpu != gpu):
            continue
        key = f"{entry.rule}:{entry.gpu}"
        if entry.kind == "alert-opened":
            opened.setdefault(key, entry.time)
        elif entry.kind == "alert-closed" and key in opened:
            began = opened.pop(key)
            if entry.time >= start and began <= end:
                spans.append(Span(max(began, start), min(entry.time, end), entry.rule))
    for alert in node.alerts.values():
        if (gpu is None or alert.gpu == gpu) and alert.since <= end:
            spans.append(Span(max(alert.since, start), None, alert.rule))
    return spans


def render(chart: Chart, width: int, height: int) -> str:
    """The chart as text with ANSI colours, ``width`` x ``height`` cells (any thread)."""
    return braille.to_ansi(_drawn(chart, width, height))


def render_text(chart: Chart, width: int, height: int) -> Text:
    """The same chart as a Rich ``Text``, for a widget: no ANSI to parse on the way."""
    return braille.to_text(_drawn(chart, width, height))


def _drawn(chart: Chart, width: int, height: int) -> list[list[braille.Segment]]:
    # More than a few entries: a legend inside the canvas would hide the start of every line
    # under it, so they go on a key line under the title instead.
    entries = [(s.label, s.color) for s in chart.series if s.label and s.times]
    if chart.spans:
        entries.append(("alert open", ALERT_COLOR))
    keyed = len(entries) > LEGEND_IN_CHART
    width, total = max(20, width), max(6, height - (1 if keyed else 0))
    low, high = _value_range(chart)
    # The alert band gets the top row to itself: a full-cell mark would hide the dots under it.
    rows = total - _FRAME_ROWS
    pixels_y = 4 * (rows - 1)
    values_at = value_ticks(low, high, max(2, (rows - 1) // 2))
    tick_rows = {
        1 + (pixels_y - 1 - braille.pixel(v, low, high, pixels_y)) // 4: f"{v:g}" for v in values_at
    }
    margin = max((len(label) for label in tick_rows.values()), default=0)
    cols = max(1, width - margin - 2)
    start, end = chart.start, max(chart.end, chart.start + 1.0)  # one sample: no zero-wide axis
    canvas = braille.Canvas(cols, rows)

    x_of = braille.axis(start, end, 2 * cols)
    y_up = braille.axis(low, high, pixels_y)
    top = 4 + pixels_y - 1  # pixel rows count down from the band's row

    def y_of(v: float) -> int:
        return top - y_up(v)

    for s in chart.series:
        if s.times:
            # Dense series as dots, a dot a braille column; sparse ones joined, or a short
            # history would be a few specks.
            line = braille.Line(s.times, s.values, s.color, joined=len(s.times) < width)
            braille.plot(canvas, line, x_of, y_of)
    red = braille.colour_code(ALERT_COLOR)
    for span in chart.spans:
        stop = chart.end if span.end is None else span.end
        canvas.mark(0, x_of(span.start) // 2, x_of(max(stop, span.start)) // 2, braille.BAND, red)
    if not keyed:
        _legend_inside(canvas, entries)
    ticks = time_ticks(chart.start, chart.end, max(2, width // 12))
    shape = "%H:%M:%S" if len(ticks) > 1 and ticks[1] - ticks[0] < 60 else "%H:%M"
    if chart.end - chart.start > 86400:  # a window of days (24 h, 7 d): the day too
        shape = "%a %H:%M" if len(ticks) > 1 and ticks[1] - ticks[0] < 86400 else "%a %d"
    tick_cols = [x_of(t) // 2 for t in ticks]
    bottom = ["─"] * cols
    for col in tick_cols:
        bottom[col] = "┬"
    lines: list[list[braille.Segment]] = [
        [(" " * (margin + 1) + braille.centred(f"{chart.title} · {chart.unit}", cols) + " ", None)]
    ]
    if keyed:
        lines.append([(" ", None), *_legend_segments(entries, width)])
    lines.append([(" " * margin + "┌" + "─" * cols + "┐", None)])
    for row in range(rows):
        label = tick_rows.get(row)
        axis = label.rjust(margin) + "┤" if label else " " * margin + "│"
        lines.append([(axis, None), *canvas.line_segments(row), ("│", None)])
    lines.append([(" " * margin + "└" + "".join(bottom) + "┘", None)])
    labels = [time.strftime(shape, time.localtime(t)) for t in ticks]
    lines.append([(" " * (margin + 1) + braille.x_labels(tick_cols, labels, cols + 1), None)])
    return lines


def _value_range(chart: Chart) -> tuple[float, float]:
    values = [v for s in chart.series for v in s.values if v is not None and v == v]
    low = chart.low if chart.low is not None else (min(values) if values else 0.0)
    high = chart.high if chart.high is not None else (max(values) if values else 1.0)
    return value_span(low, high)


def _legend_inside(canvas: braille.Canvas, entries: Sequence[tuple[str, str]]) -> None:
    """A few entries in the canvas's top left corner, over what is drawn there."""
    longest = max((len(label) for label, _ in entries), default=0)
    for row, (label, color) in enumerate(entries):
        band = label == "alert open"
        canvas.write(row, 0, " ", None)
        canvas.write(row, 1, braille.BAND * 2 if band else "⢕⢕", braille.colour_code(color))
        canvas.write(row, 3, f" {label}".ljust(longest + 2), None)


def _legend_segments(entries: Sequence[tuple[str, str]], width: int) -> list[braille.Segment]:
    out: list[braille.Segment] = []
    used = 1
    for i, (label, color) in enumerate(entries):
        piece = f"⣿ {label}"
        if used + len(piece) + 2 > width:
            out.append(("  …" if i else "…", None))
            break
        if i:
            out.append(("  ", None))
        out.append((piece, braille.colour_code(color)))
        used += len(piece) + 2
    return out


def value_ticks(low: float, high: float, most: int) -> list[float]:
    """Round values for the y axis (steps of 1, 2 or 5 times a power of ten), at most ``most``."""
    span = max(high - low, 1e-9)
    step = 10.0 ** math.floor(math.log10(span / max(1, most)))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= most:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [round(first + k * step, 9) for k in range(int((high - first) / step) + 1)]


def time_ticks(start: float, end: float, most: int) -> list[float]:
    """Round wall-clock times for the x axis, at most ``most`` of them."""
    span = max(1.0, end - start)
    step = next((s for s in _TICK_STEPS_S if span / s <= most), _TICK_STEPS_S[-1])
    first = (int(start) // step + 1) * step
    return [float(t) for t in range(first, int(end) + 1, step)]


def overlay(series: Sequence[Series]) -> list[Series]:
    """Colours assigned in order, for charts with one line per GPU or node."""
    return [
        Series(s.label, s.times, s.values, COLORS[i % len(COLORS)]) for i, s in enumerate(series)
    ]


# -- the charts the chart view offers -------------------------------------------------------


GPU_CHARTS = ("heat", "power", "clock", "utilisation")


def gpu_chart(
    node: NodeState, gpu: int, kind: str, window_s: int, end: float, points: int
) -> Chart:
    """One of a GPU's charts (``GPU_CHARTS``): heat, power against its enforced limit, SM clock
    against its maximum, utilisation."""
    start = end - window_s
    spans = alert_spans(node, gpu, start, end)
    sample = next((g for g in node.sample.gpus if g.index == gpu), None) if node.sample else None
    window = HistoryWindow(node, start, end, points)

    def line(metric: Metric, label: str, color: str = COLORS[0], pick=max) -> Series:
        return window.series(SeriesKey(metric, gpu), label, color, pick)

    def level(value: float | None, label: str, like: Series) -> list[Series]:
        # Limits are not kept as history: the current one, drawn across the window and so named.
        if value is None or not like.times:
            return []
        return [Series(label, [like.times[0], like.times[-1]], [value, value], "gray")]

    if kind == "heat":
        heat = [
            line(Metric.GPU_TEMPERATURE_C, "GPU"),
            line(Metric.GPU_MEMORY_TEMPERATURE_C, "HBM", COLORS[1]),
            line(Metric.GPU_TEMPERATURE_MARGIN_C, "margin", COLORS[2], min),
        ]
        if sample is not None and sample.hotspot_temperature_c is not None:  # AMD's junction
            heat.append(line(Metric.GPU_HOTSPOT_TEMPERATURE_C, "junction", COLORS[3]))
        return Chart(
            f"GPU{gpu} temperature, HBM, margin to slowdown", "°C", start, end, heat, spans
        )
    if kind == "power":
        power = line(Metric.GPU_POWER_W, "power")
        limit = sample.power_limit_w if sample else None
        label = f"limit {limit:.0f} W (now)" if limit else ""
        return Chart(
            "power vs enforced limit", "W", start, end, [power, *level(limit, label, power)], spans
        )
    if kind == "clock":
        clock = line(Metric.GPU_SM_CLOCK_MHZ, "SM clock", pick=min)
        top = sample.sm_clock_max_mhz if sample else None
        label = f"max {top:.0f} MHz" if top else ""
        return Chart(
            "SM clock vs max", "MHz", start, end, [clock, *level(top, label, clock)], spans
        )
    util = [
        line(Metric.GPU_UTILIZATION_PERCENT, "mean a sample", pick=min),
        # The lowest sub-second reading, where the probe sends them: a loader's stalls.
        line(Metric.GPU_UTILIZATION_MIN_PERCENT, "lowest sub-second", COLORS[1], min),
    ]
    util = [s for s in util if s.times]
    return Chart(
        "utilisation (lowest per point)", "%", start, end, util, spans, low=0.0, high=100.0
    )


def node_chart(node: NodeState, window_s: int, end: float, points: int) -> Chart:
    """Every GPU's temperature on one chart: the airflow picture (rear slots run warmer)."""
    start = end - window_s
    gpus = [g.index for g in node.sample.gpus] if node.sample else []
    window = HistoryWindow(node, start, end, points)
    lines = [window.series(SeriesKey(Metric.GPU_TEMPERATURE_C, i), f"GPU{i}") for i in gpus]
    return Chart(
        f"{node.name}: every GPU's temperature",
        "°C",
        start,
        end,
        overlay(lines),
        alert_spans(node, None, start, end),
    )


def fleet_chart(
    nodes: Sequence[NodeState], window_s: int, end: float, points: int, most: int = 8
) -> Chart:
    """The hottest GPU of each of the ``most`` hottest nodes (by their newest sample) over time."""
    start = end - window_s

    def hottest_now(n: NodeState) -> float:
        temps = (
            [g.temperature_c for g in n.sample.gpus if g.temperature_c is not None]
            if n.sample
            else []
        )
        return max(temps, default=-1.0)

    ranked = sorted(
        (n for n in nodes if n.sample is not None and n.sample.gpus), key=hottest_now, reverse=True
    )
    lines = [
        HistoryWindow(n, start, end, points).series(HOTTEST_GPU_C, n.name) for n in ranked[:most]
    ]
    title = f"hottest GPU per node, last {window_label(window_s)}" + (
        f" ({most} hottest nodes of {len(nodes)})" if len(nodes) > most else ""
    )
    return Chart(title, "°C", start, end, overlay(lines))
