"""Charts that reach back before this run: a fetched past (``dltui.history``) and the live
history on one time axis, joined where the live history begins, with no seam and no bridge
over a gap.

The past is a replayed ``NodeState`` (``core.past_alerts``), so its chart is built by the same
functions as the live one (``charts.gpu_chart`` and friends) and its past alerts come as the
red band from its own timeline. Each line is the past's points before the live history's first
sample, then the live points; a line is cut into pieces where points are missing (a node
away, a series not scraped), so a gap stays a gap whichever way the chart is drawn."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dltui.core.series import HOTTEST_GPU_C
from dltui.core.state import NodeState

from . import charts
from .charts import Chart, Series

GAP_STEPS = 1.5  # more than this many steps between two past points: a gap


def live_from(node: NodeState) -> float | None:
    """When the live history of ``node`` begins (None: it has none yet)."""
    return next((t for t in node.history.time.values() if t is not None), None)


def stitch(
    live: Chart, past: Chart | None, live_start: Callable[[str], float | None], step_s: float
) -> Chart:
    """``live`` with the lines of ``past`` (by label) before their live start; ``past`` None:
    the live chart, unchanged."""
    if past is None:
        return live
    past_by_label = {s.label: s for s in past.series if s.label}
    live_by_label = {s.label: s for s in live.series if s.label}
    lines: list[Series] = []
    levels: list[Series] = []
    for label in [*live_by_label, *(lb for lb in past_by_label if lb not in live_by_label)]:
        now, then = live_by_label.get(label), past_by_label.get(label)
        like = now or then
        assert like is not None
        if like.color == "gray":  # a level (a limit now): across the whole window
            levels.append(like)
            continue
        cut = live_start(label) if now is not None and now.times else None
        times: list[float] = []
        values: list[float] = []
        if then is not None:
            for t, v in zip(then.times, then.values, strict=True):
                if cut is None or t < cut:
                    times.append(t)
                    values.append(v)
        joined_at = len(times)
        if now is not None:
            times += now.times
            values += now.values
        lines += pieces(Series(label, times, values, like.color), joined_at, step_s * GAP_STEPS)
    for level in levels:
        drawn = [t for s in lines for t in s.times]
        if drawn:
            levels[levels.index(level)] = Series(level.label, [min(drawn), max(drawn)], level.values, level.color)
    spans = sorted([*past.spans, *live.spans], key=lambda s: s.start)
    return Chart(live.title, live.unit, live.start, live.end, lines + levels, spans, live.low, live.high)


def pieces(line: Series, live_at: int, gap_s: float) -> list[Series]:
    """``line`` cut where two neighbouring past points (those before ``live_at``, and the
    last of them with the first live one) are more than ``gap_s`` apart. Only the first piece
    keeps the label (one legend entry a line)."""
    out: list[Series] = []
    start = 0
    times = line.times
    for i in range(1, min(len(times), live_at + 1)):
        if times[i] - times[i - 1] > gap_s:
            out.append(Series("" if out else line.label, times[start:i], line.values[start:i], line.color))
            start = i
    out.append(Series("" if out else line.label, times[start:], line.values[start:], line.color))
    return out


def gpu_chart(
    live: NodeState, past: NodeState | None, step_s: float, gpu: int, kind: str, window_s: int, end: float, points: int
) -> Chart:
    now = charts.gpu_chart(live, gpu, kind, window_s, end, points)
    then = charts.gpu_chart(past, gpu, kind, window_s, end, points) if past is not None and past.sample else None
    start = live_from(live)
    return stitch(now, then, lambda _: start, step_s)


def node_chart(live: NodeState, past: NodeState | None, step_s: float, window_s: int, end: float, points: int) -> Chart:
    now = charts.node_chart(live, window_s, end, points)
    then = charts.node_chart(past, window_s, end, points) if past is not None and past.sample else None
    start = live_from(live)
    return stitch(now, then, lambda _: start, step_s)


def fleet_chart(
    nodes: Sequence[NodeState], pasts: dict[str, NodeState], step_s: float, window_s: int, end: float, points: int
) -> Chart:
    """The fleet chart (the hottest GPU of the hottest nodes) reaching back through ``pasts``
    (by node name: those fetched)."""
    now = charts.fleet_chart(nodes, window_s, end, points)
    start = end - window_s
    then = Chart(now.title, now.unit, start, end, [
        charts.HistoryWindow(p, start, end, points).series(HOTTEST_GPU_C, name)
        for name, p in pasts.items()
    ])
    by_name = {n.name: n for n in nodes}
    colors = {s.label: s.color for s in now.series}
    for s in then.series:
        s.color = colors.get(s.label, s.color)
    starts = {name: live_from(n) for name, n in by_name.items() if name in pasts}
    return stitch(now, then, lambda label: starts.get(label), step_s)
