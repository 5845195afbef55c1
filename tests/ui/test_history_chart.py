"""The node screen's week: a real Prometheus holding a simulated week of gpu01 (promtool-built
blocks: the hot afternoon, the flapping port), joined to this run's live history.

The week ends at a fixed time (Thu 26 Nov 2026 18:00 UTC) and the live node's clock is frozen
just after it, so the picture is the same on every run; times are UTC (conftest)."""

from __future__ import annotations

import pytest

from dltui.config import Config, PrometheusSection
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample
from dltui.history import HISTORY_WINDOWS_S
from dltui.ui.app import DltuiApp, build_app
from dltui.ui.screens import ChartScreen
from dltui.ui.themes import PACKAGED_DIR
from dltui.ui.widgets.chart import PlotextChart
from dltui.wiring import dashboard_services, fleet_state
from tests.prometheus.history_lab import GPUS, HOT_GPU, NODE, Week, WeekLab

FULL = (160, 48)
WEEK = Week(end=1795716000.0)  # Thu 26 Nov 2026 18:00 UTC
LIVE_S = 120  # this run's history: two minutes after the week
LIVE_END = WEEK.end + 60 + LIVE_S


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    lab = WeekLab(tmp_path_factory.mktemp("week"), WEEK)
    try:
        yield lab.url
    finally:
        lab.stop()


def week_app(url: str, names: tuple[str, ...] = (NODE,)) -> DltuiApp:
    """gpu01 alone (its node screen is the first), two minutes of live samples at 60 °C, the
    week's Prometheus as its history source; other ``names``: nodes it does not know."""
    cfg = Config(prometheus=PrometheusSection(url=url))
    fleet = fleet_state(cfg, list(names), clock=lambda: LIVE_END)
    for name in names:
        facts = NodeFacts(hostname=name, gpus=[GpuFacts(index=i, name="NVIDIA H100 80GB HBM3") for i in range(GPUS)])
        fleet.on_hello(name, facts, 1.0)
        for t in range(LIVE_S):
            gpus = [
                GpuSample(index=i, temperature_c=60.0 + i % 2, power_w=600.0, utilization_percent=97.0)
                for i in range(GPUS)
            ]
            fleet.on_sample(name, Sample(time=LIVE_END - LIVE_S + t + 1, gpus=gpus))
    return build_app([], cfg, fleet=fleet, services=dashboard_services([], cfg), theme_dirs=[PACKAGED_DIR])


async def _week_shown(pilot, *keys: str) -> ChartScreen:
    """``H`` on the node screen (or ``keys``), then the fetched week (20 s of pauses at most)."""
    await pilot.press(*(keys or ("H",)))
    screen = pilot.app.screen
    assert isinstance(screen, ChartScreen)
    for _ in range(400):
        await pilot.pause(0.05)
        if screen.pasts or "no history" in screen.note or "Prometheus at" in screen.note:
            break
    await pilot.pause()
    return screen


async def test_the_node_screen_shows_the_week_with_the_hot_afternoon_where_it_was(prometheus):
    app = week_app(prometheus)
    async with app.run_test(size=FULL) as pilot:
        screen = await _week_shown(pilot)
        assert screen.window_s == HISTORY_WINDOWS_S[-1]
        assert NODE in screen.pasts, screen.note
        chart = screen.query_one("#chart-0", PlotextChart).chart
        assert chart is not None and chart.end == LIVE_END
        gpu3 = [s for s in chart.series if s.color == chart.series[HOT_GPU].color]
        hot = [t for s in gpu3 for t, v in zip(s.times, s.values, strict=True) if v >= 90]
        step = screen.pasts[NODE].step_s
        hot0, hot1 = WEEK.hot
        assert hot and all(hot0 - step < t < hot1 + step for t in hot)
        # the live minutes end the same line: 61 °C at the chart's right edge
        assert gpu3[-1].times[-1] == LIVE_END and gpu3[-1].values[-1] == 61.0
        # the red band: the past alerts the rules raised (the hot afternoon, the port)
        assert any(hot0 - step <= span.start <= hot0 + step for span in chart.spans)
        flap0, _ = WEEK.flap
        assert any(flap0 - step <= span.start <= flap0 + step for span in chart.spans)
        assert "before this run: dcgm-exporter + node_exporter" in screen.note


async def test_the_fleet_chart_reaches_back_for_the_nodes_prometheus_knows(prometheus):
    """gpu01's hottest GPU over the week; gpu02, which Prometheus does not hold, only its live
    minutes, and the corner says so."""
    app = week_app(prometheus, (NODE, "gpu02"))
    async with app.run_test(size=FULL) as pilot:
        screen = await _week_shown(pilot, "v", "6")
        assert screen.node_name is None and screen.window_s == HISTORY_WINDOWS_S[-1]
        assert list(screen.pasts) == [NODE]
        assert "no history for gpu02 in Prometheus" in screen.note
        chart = screen.query_one("#chart-0", PlotextChart).chart
        assert chart is not None
        first = {s.label: s.times[0] for s in chart.series if s.label and s.times}
        assert first[NODE] < WEEK.start + 86400  # the week
        assert first["gpu02"] == LIVE_END - LIVE_S + 1  # this run only
        hottest = max(v for s in chart.series for v in s.values)
        assert hottest >= 90  # GPU3's afternoon, as gpu01's hottest GPU


async def test_a_down_prometheus_leaves_the_live_chart_and_says_so_in_the_corner():
    app = week_app("127.0.0.1:1")
    async with app.run_test(size=FULL) as pilot:
        screen = await _week_shown(pilot)
        assert "cannot reach Prometheus at http://127.0.0.1:1" in screen.note
        assert "showing this run's history only" in screen.note
        chart = screen.query_one("#chart-0", PlotextChart).chart
        assert chart is not None and chart.series and chart.series[0].times[-1] == LIVE_END


async def test_the_history_windows_are_offered_only_with_a_history_source(prometheus):
    app = week_app(prometheus)
    async with app.run_test(size=FULL) as pilot:
        await pilot.press("v")
        screen = app.screen
        assert isinstance(screen, ChartScreen)
        assert screen.windows[-3:] == HISTORY_WINDOWS_S
        await pilot.press("5")
        assert screen.window_s == 24 * 3600
    plain = build_app([], Config(), fleet=fleet_state(Config(), [NODE]), theme_dirs=[PACKAGED_DIR])
    async with plain.run_test(size=FULL) as pilot:
        await pilot.press("v")
        screen = plain.screen
        assert isinstance(screen, ChartScreen) and len(screen.windows) == 3
        await pilot.press("6")
        assert screen.window_s == 300


@pytest.mark.oldest_python_only  # a picture
def test_chart_of_a_node_over_7_days(snap_compare, prometheus):
    """gpu01's eight GPUs over the week ending Thu 26 Nov 18:00 UTC: a daily swell from 52 to
    70 °C, GPU3 alone at 93 °C on Mon 23 Nov 13:00–16:00 under a red band, a second red band on
    Tue 24 Nov 02:00 (the flapping port), the live minutes at the right edge; the corner line
    says the week came from dcgm-exporter + node_exporter."""

    async def week(pilot):
        await _week_shown(pilot)

    assert snap_compare(week_app(prometheus), run_before=week, terminal_size=FULL)
