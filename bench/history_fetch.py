"""A week of history on the node screen: 7 days x 8 GPUs x 5 series, from a real Prometheus.

A real Prometheus starts on TSDB blocks built by ``promtool tsdb create-blocks-from
openmetrics`` from the tests' seeded week (tests/prometheus/history_lab.py: dcgm-exporter's
GPU_TEMP, MEMORY_TEMP, POWER_USAGE, GPU_UTIL, SM_CLOCK for 8 GPUs, one point a minute, plus
node_exporter's), and the dashboard runs on gpu01 with two minutes of live history.

Measured, ``--runs`` times, each with an empty cache (a fresh history source: nothing reused):
- from the key press (``H`` on the node screen) to the week drawn: the chart on screen holds
  the fetched past (the dashboard in process, Textual's pilot, 160x48); budget 1 s;
- the same without the UI: fetch (series look-up, scrape interval, range queries, decoding)
  and replay through the rules, then the chart built and drawn to text at 160x48;
- reference in the same run: the live 2-hour chart of the same node built and drawn (what
  the chart view costs without history);
- memory a fetched window keeps (tracemalloc: the window's arrays, its replayed node and past
  alerts) and its peak while fetched, for the chart's window (a point a cell) and for
  ``snapshot --since 7d``'s (the finest: ~11,000 points a series); budget 20 MB.

    python bench/history_fetch.py [--runs 5]

Prints figures and ratios only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dltui.config import Config, PrometheusSection  # noqa: E402
from dltui.history import HISTORY_WINDOWS_S  # noqa: E402
from dltui.history.plan import MAX_POINTS  # noqa: E402
from dltui.ui import charts, history_charts  # noqa: E402
from dltui.ui.screens import ChartScreen  # noqa: E402
from dltui.ui.widgets.chart import PlotextChart  # noqa: E402
from dltui.wiring import history_source  # noqa: E402
from tests.prometheus.history_lab import NODE, WeekLab  # noqa: E402
from tests.ui.test_history_chart import LIVE_END, WEEK, week_app  # noqa: E402

SIZE = (160, 48)
WEEK_S = HISTORY_WINDOWS_S[-1]


async def key_to_week(url: str) -> float:
    """Seconds from ``H`` to the chart holding the fetched week (the app's own history source,
    new for this run: its cache is empty)."""
    app = week_app(url)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        started = time.perf_counter()
        await pilot.press("H")
        screen = app.screen
        assert isinstance(screen, ChartScreen)
        widget = screen.query_one("#chart-0", PlotextChart)
        while True:
            chart = widget.chart
            drawn = chart is not None and any(s.times and s.times[0] < LIVE_END - 86400 for s in chart.series)
            if screen.pasts and drawn:
                return time.perf_counter() - started
            if time.perf_counter() - started > 30:
                raise RuntimeError(f"no week drawn in 30 s: {screen.note}")
            await asyncio.sleep(0.002)


def headless(url: str, cfg: Config) -> tuple[float, float, float]:
    """(fetch + replay, build + draw with the past, build + draw of the live 2 h chart) in s."""
    app = week_app(url)  # its fleet: gpu01 with two minutes of live history
    live = app.fleet.nodes[NODE]
    source = history_source(cfg)
    assert source is not None
    width, height = SIZE[0] - 2, SIZE[1] - 4
    t0 = time.perf_counter()
    past = asyncio.run(source.window(NODE, WEEK_S, width, end=LIVE_END))
    t1 = time.perf_counter()
    chart = history_charts.node_chart(live, past.node, past.step_s, WEEK_S, LIVE_END, 2 * width)
    charts.render_text(chart, width, height)
    t2 = time.perf_counter()
    chart = charts.node_chart(live, 7200, LIVE_END, 2 * width)
    charts.render_text(chart, width, height)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def memory(cfg: Config, cells: int) -> tuple[float, float, int]:
    """(MB kept by a fetched window, MB at its peak, points a series) for ``cells``."""
    source = history_source(cfg)
    assert source is not None
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    past = asyncio.run(source.window(NODE, WEEK_S, cells, end=LIVE_END))
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (kept - before) / 1e6, (peak - before) / 1e6, past.fetched.plan.points


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lab = WeekLab(Path(tmp), WEEK)
        try:
            cfg = Config(prometheus=PrometheusSection(url=lab.url))
            keys = [asyncio.run(key_to_week(lab.url)) for _ in range(args.runs)]
            parts = [headless(lab.url, cfg) for _ in range(args.runs)]
            mem_chart = memory(cfg, SIZE[0] - 2)
            mem_fine = memory(cfg, MAX_POINTS)
        finally:
            lab.stop()
    fetch = [p[0] for p in parts]
    draw = [p[1] for p in parts]
    ref = [p[2] for p in parts]
    med = statistics.median
    print(f"7 d x 8 GPUs x 5 series from a real Prometheus, {args.runs} runs, empty cache each")
    print(f"  key press (H) -> week drawn, in the app: median {med(keys) * 1000:.0f} ms "
          f"(range {min(keys) * 1000:.0f}-{max(keys) * 1000:.0f}); budget 1000 ms: {med(keys) / 1.0:.2f} of it")
    print(f"  without the UI: fetch + replay {med(fetch) * 1000:.0f} ms, build + draw {med(draw) * 1000:.1f} ms")
    print(f"  reference, the live 2 h chart built + drawn: {med(ref) * 1000:.1f} ms; "
          f"the week (fetch + draw) costs {(med(fetch) + med(draw)) / med(ref):.0f}x it")
    for label, (kept, peak, points) in (("chart (a point a cell)", mem_chart), ("snapshot --since 7d", mem_fine)):
        print(f"  memory, {label}: {points} points a series, kept {kept:.2f} MB, peak {peak:.2f} MB; "
              f"budget 20 MB: {kept / 20:.2f} of it kept, {peak / 20:.2f} at the peak")


if __name__ == "__main__":
    main()
