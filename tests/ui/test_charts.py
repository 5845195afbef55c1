"""The chart view on the seeded demo fleet: 32 simulated minutes, so every window has history.

Times on the axes are the simulated clock's, shown in UTC (``TZ`` set in conftest).
"""

from __future__ import annotations

from functools import lru_cache

import pytest

from dltui.config import Config
from dltui.core.state import FleetState
from dltui.transport.demo import DemoTransport
from dltui.ui import charts
from dltui.ui.app import DltuiApp, build_app
from dltui.ui.screens import ChartScreen
from dltui.ui.themes import PACKAGED_DIR
from dltui.ui.widgets.chart import PlotextChart
from dltui.wiring import fleet_state

FULL = (160, 48)
STEPS = 1900  # past the 30-minute window; gpu04 has dropped out and come back


@lru_cache(maxsize=1)
def _history() -> FleetState:
    """Filled once for the module: the screens only read it (the clock is frozen)."""
    demo = DemoTransport(nodes=4, gpus=8, seed=7)
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    demo.step_into(fleet, STEPS)
    return fleet


def chart_app() -> DltuiApp:
    return build_app([], Config(), fleet=_history(), theme_dirs=[PACKAGED_DIR])


HOT_GPU = ["j", "enter", "v", "n", "n", "n"]  # gpu02, the chart view, GPU0 -> GPU3


@pytest.mark.oldest_python_only  # a picture
def test_chart_of_the_hot_gpu_over_5_min(snap_compare):
    """gpu02 GPU3 over the last 5 min: temperature and HBM near 90 °C, margin near 0 °C, power
    under its 700 W limit line, SM clock down at 990 MHz against the 1980 MHz line, utilisation
    at 100 %; the red "alert open" band across the top of every chart; times 09:26…09:31 UTC."""
    assert snap_compare(chart_app(), press=HOT_GPU, terminal_size=FULL)


@pytest.mark.oldest_python_only  # a picture
def test_chart_of_the_hot_gpu_over_30_min(snap_compare):
    """The same GPU over 30 min (09:01:40…09:31:40): hot and throttled the whole time, the red
    band across the whole window, ticks every 5 min."""
    assert snap_compare(chart_app(), press=[*HOT_GPU, "2"], terminal_size=FULL)


@pytest.mark.oldest_python_only  # a picture
def test_chart_of_the_hot_gpu_over_2_h(snap_compare):
    """The 2 h window: the 32 minutes of history on its right quarter, the climb from 45 °C to
    90 °C at 09:00 and the red band from when the alerts opened; ticks every 10 min."""
    assert snap_compare(chart_app(), press=[*HOT_GPU, "3"], terminal_size=FULL)


@pytest.mark.oldest_python_only  # a picture
def test_every_gpu_temperature_on_one_chart(snap_compare):
    """gpu02's eight GPUs overlaid over 5 min: GPU3 on top near 90 °C, the others 66–76 °C,
    rear slots (GPU3, GPU7) warmer than front ones; the alert band on top."""
    assert snap_compare(chart_app(), press=["j", "enter", "v", "o"], terminal_size=FULL)


@pytest.mark.oldest_python_only  # a picture
def test_fleet_chart_of_the_hottest_gpu_per_node(snap_compare):
    """From the fleet: each node's hottest GPU over 5 min, one line a node, gpu02 near 90 °C
    above the others (74–77 °C)."""
    assert snap_compare(chart_app(), press=["v"], terminal_size=FULL)


async def test_keys_switch_windows_and_step_through_gpus():
    app = chart_app()
    async with app.run_test(size=FULL) as pilot:
        await pilot.press("j", "enter", "v")
        screen = app.screen
        assert isinstance(screen, ChartScreen) and (screen.node_name, screen.gpu) == ("gpu02", 0)
        titles = [w.chart.title for w in screen.query(PlotextChart) if w.display]
        assert len(titles) == 4 and titles[0].startswith("GPU0 temperature")
        await pilot.press("n", "n", "n")
        assert screen.gpu == 3
        first = screen.query_one("#chart-0", PlotextChart).chart
        assert first.title.startswith("GPU3") and first.spans, "the hot GPU's alerts are marked"
        assert all(s.end is None or s.end >= first.start for s in first.spans)
        await pilot.press("p")
        assert screen.gpu == 2 and not screen.query_one("#chart-0", PlotextChart).chart.spans
        for key, window in (("2", 1800), ("3", 7200), ("w", 300), ("w", 1800)):
            await pilot.press(key)
            chart = screen.query_one("#chart-0", PlotextChart).chart
            assert screen.window_s == window and chart.end - chart.start == window
        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
        assert screen.gpu == 7  # wraps around
        await pilot.press("o")
        shown = [w for w in screen.query(PlotextChart) if w.display]
        assert len(shown) == 1 and [s.label for s in shown[0].chart.series] == [
            f"GPU{i}" for i in range(8)
        ]
        await pilot.press("escape")
        assert not isinstance(app.screen, ChartScreen)


def test_a_2_hour_window_is_squeezed_to_the_chart_width():
    """Never 7200 points a series: at most two a character (braille dots)."""
    fleet = _history()
    node = fleet.nodes["gpu02"]
    (chart,) = [charts.node_chart(node, 7200, charts.end_of(node), 2 * 150)]
    assert all(0 < len(s.values) <= 300 for s in chart.series)
    five = charts.node_chart(node, 300, charts.end_of(node), 2 * 150)
    assert all(len(s.values) == 300 for s in five.series)
    hot = max(five.series, key=lambda s: max(s.values))
    assert hot.label == "GPU3" and max(hot.values) >= 89


def test_the_starved_loaders_sub_second_stalls_are_charted():
    """gpu03 stalls 1.5 s every 4 s: a second's mean reads 67 or 83 % where part of it stalled;
    the lowest sub-second reading (NVML's samples, as the probe sends them) shows the zero."""
    node = _history().nodes["gpu03"]
    chart = charts.gpu_chart(node, 0, "utilisation", 300, charts.end_of(node), 300)
    mean, lowest = chart.series
    assert lowest.label == "lowest sub-second" and mean.times == lowest.times
    part_stalled = [low for m, low in zip(mean.values, lowest.values, strict=True) if 0 < m < 100]
    assert part_stalled and set(part_stalled) == {0.0}


def test_a_chart_of_a_single_sample_draws_instead_of_dividing_by_zero():
    """A burn-in's first second: start == end made plotext divide by a zero-wide axis and
    took the whole dashboard down."""
    t = 1_796_303_362.175
    for series in ([charts.Series("GPU0", [t], [59.0])], []):
        text = charts.render(charts.Chart("Temperature", "°C", t, t, series), 60, 14)
        assert "Temperature · °C" in text


def test_the_alert_band_and_its_key_only_for_alerts_open_inside_the_window():
    """An alert that opened and closed before the 5-minute window, and one the node raised
    after its last sample (it went away), mark nothing in that window: no band, no key."""
    from dltui.core import status as st
    from tests.unit.rules_support import Rig, busy_gpu

    rig = Rig()
    rig.run(120, lambda t: [busy_gpu(0, temperature_c=87)])  # gpu_temp_high opens after 30 s
    rig.run(600, [busy_gpu(0)])  # and closes a minute after it cooled, 9 minutes ago
    node = rig.node()
    assert [e.kind for e in node.timeline if e.rule == "gpu_temp_high"] == ["alert-opened", "alert-closed"]
    rig.clock.t += 20
    rig.fleet.on_status("gpu01", st.UNREACHABLE, "lost the connection to 10.0.0.1:22")
    rig.fleet.tick()
    assert ("node_unreachable", None) in node.alerts  # open, but after the newest sample
    end = charts.end_of(node)
    for chart in (charts.gpu_chart(node, 0, "heat", 300, end, 120), charts.node_chart(node, 300, end, 120)):
        assert chart.spans == []
        assert "alert open" not in charts.render(chart, 80, 16)
    whole = charts.gpu_chart(node, 0, "heat", 1800, end, 120)  # the 30-minute window holds it
    assert [s.rule for s in whole.spans] == ["gpu_temp_high"]
    assert "alert open" in charts.render(whole, 80, 16)
