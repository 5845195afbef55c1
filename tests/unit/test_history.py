"""The history fetch's arithmetic and its joins, without a Prometheus (tests/prometheus/
test_history_week.py reads a real one): the step and ranges of a window, the past alerts the
live engine finds in replayed samples, the past joined to the live history without a seam."""

from __future__ import annotations

import pytest

from dltui.cli import parse
from dltui.config import Config
from dltui.core.models import GpuSample, Sample
from dltui.core.past_alerts import replay
from dltui.core.rules import build_engine
from dltui.history.fetch import FetchedWindow, _lay
from dltui.history.plan import MAX_POINTS, duration_s, plan
from dltui.history.queries import DRIVE, HOST, family_query
from dltui.ui.charts import Chart, Series
from dltui.ui.history_charts import pieces, stitch

WEEK_S = 7 * 86400


def test_the_step_is_the_scrape_interval_or_a_cell_whichever_is_longer():
    assert plan(WEEK_S, 1e9, 150, 15).step_s == 4032  # a cell: 7 d / 150
    assert plan(3600, 1e9, 150, 60).step_s == 60  # the scrape: finer adds nothing
    assert plan(6 * 3600, 1e9, 150, 15).step_s == 144


def test_a_series_never_passes_prometheuss_points_limit():
    p = plan(30 * 86400, 1e9, MAX_POINTS, 1)
    assert p.points <= MAX_POINTS + 1 and p.step_s == 236


def test_rate_ranges_cover_four_scrapes_and_over_time_ranges_a_whole_step():
    p = plan(3600, 1e9, 3600, 30)
    assert p.step_s == 30 and p.over_s == 30 and p.rate_s == 120
    p = plan(WEEK_S, 1e9, 150, 30)
    assert p.over_s == p.rate_s == p.step_s == 4032


def test_the_grid_is_aligned_to_the_step_and_its_last_point_holds_the_end():
    p = plan(3600, 1_000_000_030.5, 60, 15)
    assert p.step_s == 60 and p.start % 60 == 0 and p.end % 60 == 0
    assert p.end - 60 < 1_000_000_030.5 <= p.end
    assert p.time(p.index(p.end)) == p.end and p.points == 61


@pytest.mark.parametrize(
    ("text", "seconds"), [("15s", 15), ("1m30s", 90), ("7d", WEEK_S), ("24h", 86400), ("1w", WEEK_S), ("x", None)]
)
def test_durations_are_read_as_prometheus_writes_them(text, seconds):
    assert duration_s(text) == seconds


def test_snapshot_since_takes_a_duration_and_refuses_nonsense():
    assert parse(["snapshot", "gpu01", "--since", "7d"]).since == WEEK_S
    with pytest.raises(SystemExit):
        parse(["snapshot", "gpu01", "--since", "soon"])
    with pytest.raises(SystemExit):
        parse(["snapshot", "gpu01", "--since", "90d"])


def _samples(temps: list[float], step_s: float = 60.0, t0: float = 1e9) -> list[Sample]:
    return [Sample(time=t0 + i * step_s, gpus=[GpuSample(index=0, temperature_c=t)]) for i, t in enumerate(temps)]


def test_the_live_rules_find_a_past_alert_with_its_start_and_end():
    """An hour at 93 °C between two cool ones, a point a minute: gpu_temp_high (warning at
    85 °C, critical at 90 °C without a margin) from the first hot minute until it has been cool
    for the rule's clear_s (60 s): as the live alert would have opened and closed."""
    temps = [60.0] * 60 + [93.0] * 60 + [60.0] * 60
    replayed = replay("gpu01", _samples(temps), build_engine(Config()), len(temps), interval_s=60)
    hot = [a for a in replayed.alerts if a.rule == "gpu_temp_high"]
    assert len(hot) == 1
    assert (hot[0].gpu, hot[0].severity) == (0, "critical")
    assert hot[0].start == 1e9 + 60 * 60 and hot[0].end == 1e9 + 121 * 60
    assert "93 °C" in hot[0].message
    # the replayed node holds the window as history, the alert on its timeline (the chart's band)
    assert len(replayed.node.history.time) == len(temps)
    assert [e.kind for e in replayed.node.timeline if e.rule == "gpu_temp_high"] == ["alert-opened", "alert-closed"]


def test_an_alert_still_open_at_the_windows_end_has_no_end():
    temps = [60.0] * 10 + [93.0] * 30
    replayed = replay("gpu01", _samples(temps), build_engine(Config()), len(temps), interval_s=60)
    assert [(a.rule, a.end) for a in replayed.alerts if a.rule == "gpu_temp_high"] == [("gpu_temp_high", None)]


def test_a_line_is_cut_where_past_points_are_missing():
    line = Series("GPU0", [0.0, 60.0, 120.0, 600.0, 660.0, 661.0, 662.0], [1.0] * 7)
    cut = pieces(line, live_at=5, gap_s=90.0)
    assert [s.times for s in cut] == [[0.0, 60.0, 120.0], [600.0, 660.0, 661.0, 662.0]]
    assert [s.label for s in cut] == ["GPU0", ""]  # one legend entry a line


def test_the_past_is_joined_to_the_live_history_where_it_begins():
    """Prometheus holds the live minutes too (dltui's exporter scraped): the past stops where
    the live history starts, so each moment is drawn once, and the line has no seam."""
    live = Chart("t", "°C", 0.0, 1000.0, [Series("GPU0", [900.0, 950.0, 1000.0], [61.0, 62.0, 63.0])])
    past = Chart("t", "°C", 0.0, 1000.0, [Series("GPU0", [700.0, 800.0, 900.0, 1000.0], [50.0, 51.0, 52.0, 53.0])])
    joined = stitch(live, past, lambda _: 900.0, step_s=100.0)
    assert [(s.times, s.values) for s in joined.series] == [
        ([700.0, 800.0, 900.0, 950.0, 1000.0], [50.0, 51.0, 61.0, 62.0, 63.0])
    ]


def test_without_a_past_the_live_chart_is_unchanged():
    live = Chart("t", "°C", 0.0, 1.0, [Series("GPU0", [1.0], [2.0])])
    assert stitch(live, None, lambda _: None, 1.0) is live


def _window_with(answer: dict) -> FetchedWindow:
    """A two-point window (60 s apart) with ``answer`` (a query_range result) laid on it."""
    p = plan(120, 1_000_000_020.0, 2, 60)
    window = FetchedWindow("gpu01", p, "dltui")
    assert _lay(window, answer)
    return window


def _series(metric: dict[str, str], *values: str) -> dict:
    last = 1_000_000_020.0
    return {"metric": metric, "values": [[last - 60 * (len(values) - 1 - i), v] for i, v in enumerate(values)]}


def test_a_drives_smart_and_the_hosts_memory_become_the_samples_the_rules_read():
    """Drive fields by ``device``, host fields (no device) onto sample.memory / .pressure /
    .cpu; counts come back whole even where ratio × 100 is 6.9999… in float32."""
    answer = {
        "resultType": "matrix",
        "result": [
            _series({"dltui_field": "pending_sectors", "device": "/dev/sda"}, "0", "8"),
            _series({"dltui_field": "smart_passed", "device": "/dev/sda"}, "1", "1"),
            _series({"dltui_field": "endurance_used_percent", "device": "/dev/nvme0"}, "7.000000000000001", "7"),
            _series({"dltui_field": "critical_warning_mask", "device": "/dev/nvme0"}, "0", "4"),
            _series({"dltui_field": "memory.total_bytes"}, "549755813888", "549755813888"),
            _series({"dltui_field": "memory.available_bytes"}, "329853488332", "16492674416"),
            _series({"dltui_field": "pressure.memory_full_avg10_percent"}, "0", "12.5"),
            _series({"dltui_field": "cpu.iowait_percent"}, "1.5", "40"),
        ],
    }
    first, last = list(_window_with(answer).samples())
    drives = {d.device: d for d in last.drives}
    assert (drives["/dev/sda"].pending_sectors, drives["/dev/sda"].smart_passed) == (8, True)
    assert drives["/dev/nvme0"].endurance_used_percent == 7
    assert drives["/dev/nvme0"].critical_warnings == ["reliability_degraded"]
    assert first.memory is not None and isinstance(first.memory.available_bytes, int)
    assert first.memory.available_bytes == pytest.approx(329853488332, rel=1e-7)  # kept as float32
    assert last.memory is not None and last.memory.total_bytes == 512 * 1024**3
    assert last.pressure is not None and last.pressure.memory_full_avg10_percent == 12.5
    assert last.cpu is not None and last.cpu.iowait_percent == 40
    # and the drive rules read them at once (host_memory_low waits its for_s: the real week's test)
    engine = build_engine(Config())
    alerts = replay("gpu01", [first, last], engine, capacity=2, interval_s=60).node.alerts
    assert {rule for rule, _ in alerts} == {"drive_errors", "drive_failing"}


def test_the_host_has_one_series_a_field_and_node_exporters_pressure_is_a_rate():
    p = plan(3600, 1e9, 60, 15)
    query = family_query("other", 'instance="gpu01:9100"', p, (HOST,))
    assert query is not None
    assert 'label_replace(min(min_over_time(node_memory_MemAvailable_bytes{instance="gpu01:9100"}[60s])), ' in query
    assert 'rate(node_pressure_memory_stalled_seconds_total{instance="gpu01:9100"}[60s])' in query
    assert " by ()" not in query
    drives = family_query("dltui", 'node="gpu01"', p, (DRIVE,))
    assert drives is not None and 'max by (device) (max_over_time(dltui_drive_pending_sectors{node="gpu01"}' in drives
    assert family_query("other", 'instance="gpu01:9100"', p, (DRIVE,)) is None  # dltui's exporter only
