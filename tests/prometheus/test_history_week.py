"""A week of one node's series in a real Prometheus (``history_lab``: promtool-built blocks of
a seeded simulation with a known hot afternoon and a flapping port), read back by
``dltui.history``: the window fetched, the past alerts found by the live rules, dltui's own
exporter scraped live and preferred where it answers."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dltui import snapshot
from dltui.burnin import demo as burnin_demo
from dltui.burnin import report, verdict
from dltui.config import Config, PrometheusSection
from dltui.core import status as st
from dltui.core.models import GpuSample, Sample, UnitSample
from dltui.core.rules import build_engine
from dltui.core.state import FleetState
from dltui.export.metrics import render
from dltui.history import HistorySource, NoHistory
from dltui.history.past import BEFORE_THE_RUN_S, pasts
from dltui.history.plan import MAX_POINTS
from dltui.transport.prometheus.client import PrometheusError
from dltui.wiring import fleet_state, history_source
from tests.prometheus.history_lab import (
    DRIVE,
    GPUS,
    HOT_C,
    HOT_GPU,
    NODE,
    PENDING,
    STEP_S,
    WeekLab,
    week_ending_now,
)
from tests.prometheus.tools import Endpoint, wait_query

WEEK_S = 7 * 86400
REPO = Path(__file__).resolve().parents[2]
LIVE_C = 41.0  # what dltui's exporter says now: no simulated point is this cool


def _exporter_page() -> str:
    """dltui's exporter's page (the real renderer) for gpu01 as dltui sees it now."""
    fleet = FleetState([NODE])
    gpus = [GpuSample(index=i, temperature_c=LIVE_C, power_w=300.0, utilization_percent=50.0) for i in range(GPUS)]
    unit = UnitSample("dl_train.service", load_state="loaded", active_state="failed", restarts_total=7)
    fleet.on_sample(NODE, Sample(time=time.time(), gpus=gpus, units=[unit]))
    return render(fleet)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    week = week_ending_now(host_events=True)  # the failing drive and the memory squeeze too
    exporter = Endpoint(_exporter_page())
    lab = WeekLab(tmp_path_factory.mktemp("week"), week, exporter)
    try:
        wait_query(lab.url, f'dltui_gpu_temperature_celsius{{node="{NODE}"}}', bool)
        yield lab, week
    finally:
        lab.stop()
        exporter.close()


def _history(url: str, **kw) -> HistorySource:
    return HistorySource(url, engine=lambda: build_engine(None), **kw)


def test_the_week_of_a_node_is_fetched_with_its_hot_afternoon_where_it_was(lab):
    lab, week = lab
    # the window ends 3 h before the simulated week does, so it begins 3 h before the week: nothing there
    past = asyncio.run(_history(lab.url).window(NODE, WEEK_S, 150, end=week.end - 3 * 3600))
    fetched = past.fetched
    assert fetched.scrape_s == STEP_S  # the targets' own scrape interval, from Prometheus
    assert fetched.plan.step_s == math.ceil(WEEK_S / 150)  # window / chart width: 4032 s
    assert fetched.plan.points <= 152
    hot0, hot1 = week.hot
    temps = fetched.values[("temperature_c", HOT_GPU)]
    at_93 = [fetched.plan.time(i) for i, v in enumerate(temps) if v == v and v >= 90]
    # each point is the hottest reading of the step before it: hot exactly where the steps
    # overlap the afternoon
    assert at_93 and all(hot0 < t < hot1 + fetched.plan.step_s for t in at_93)
    assert max(v for v in temps if v == v) == pytest.approx(HOT_C, abs=0.5)
    others = [v for g in range(GPUS) if g != HOT_GPU for v in fetched.values[("temperature_c", g)] if v == v]
    assert max(others) < 80
    # before the week began: gaps, not zeros
    before = [v for i, v in enumerate(temps) if fetched.plan.time(i) < week.start]
    assert before and all(v != v for v in before)


def test_the_rules_find_the_hot_afternoon_and_the_flapping_port_with_their_times(lab):
    lab, week = lab
    past = asyncio.run(_history(lab.url).window(NODE, WEEK_S, MAX_POINTS))
    step = past.step_s
    assert step == STEP_S  # the finest: one point a scrape (55 s would exceed nothing, but adds nothing)
    hot = [a for a in past.alerts if a.rule == "gpu_temp_high"]
    assert [(a.gpu, a.severity) for a in hot] == [(HOT_GPU, "critical")]
    assert hot[0].start == pytest.approx(week.hot[0], abs=step)
    assert hot[0].end == pytest.approx(week.hot[1], abs=2 * step)
    assert "93" in hot[0].message
    flaps = [a for a in past.alerts if a.rule == "ib_port_errors"]
    assert len(flaps) == 1 and flaps[0].gpu is None
    assert flaps[0].start == pytest.approx(week.flap[0], abs=step)
    assert week.flap[1] - step <= flaps[0].end <= week.flap[1] + 600 + step  # the rule's 10-min window
    assert "link downs" in flaps[0].message
    assert not [a for a in past.alerts if a.gpu not in (None, HOT_GPU)]


def test_the_rules_find_the_failing_drive_and_the_memory_squeeze_with_their_times(lab):
    """The drive's pending sectors (dltui's exporter) and the host's MemAvailable
    (node_exporter) are fetched too, so drive_errors and host_memory_low find their day."""
    lab, week = lab
    past = asyncio.run(_history(lab.url).window(NODE, WEEK_S, MAX_POINTS))
    step = past.step_s
    drive = [a for a in past.alerts if a.rule == "drive_errors"]
    assert [(a.gpu, a.severity) for a in drive] == [(None, "warning")]
    assert drive[0].start == pytest.approx(week.drive[0], abs=step)
    # the rule holds its warning for its clear_s (a day) after the sectors are gone
    assert drive[0].end == pytest.approx(week.drive[1] + 86400, abs=2 * step)
    assert f"pending sectors 0 → {PENDING} on {DRIVE}" in drive[0].message
    memory = [a for a in past.alerts if a.rule == "host_memory_low"]
    assert [(a.gpu, a.severity) for a in memory] == [(None, "warning")]
    assert memory[0].start == pytest.approx(week.squeeze[0], abs=step)
    assert memory[0].end == pytest.approx(week.squeeze[1], abs=2 * step)
    assert "3.0 % of memory available (15.4G of 512G)" in memory[0].message
    # what the replay saw the hour before and in the middle of the squeeze, as samples
    samples = {s.time: s for s in past.fetched.samples()}
    mid = min(samples, key=lambda t: abs(t - (week.squeeze[0] + 1800)))
    m = samples[mid].memory
    assert m is not None and m.total_bytes == 512 * 1024**3 and m.available_bytes is not None
    assert m.available_bytes / m.total_bytes == pytest.approx(0.03, abs=0.001)
    assert [(d.device, d.pending_sectors, d.smart_passed) for d in samples[mid].drives] == [(DRIVE, 0, True)]


def test_dltuis_own_exporter_is_preferred_where_it_answers(lab):
    """The exporter's live points (41 °C) win over nothing else at the end of the window; the
    week before comes from dcgm-exporter: one line, joined."""
    lab, _ = lab
    end = time.time() + 5
    past = asyncio.run(_history(lab.url).window(NODE, 6 * 3600, 2000, end=end))
    assert past.fetched.source.startswith("dltui")
    assert "dcgm-exporter" in past.fetched.source
    temps = [v for v in past.fetched.values[("temperature_c", 0)]]
    known = [v for v in temps if v == v]
    assert known[-1] == LIVE_C
    assert any(v > 50 for v in known)  # the simulated hours before it
    # the training unit, which only dltui's exporter reports: failed, 7 restarts
    assert [v for v in past.fetched.values[("failed", "dl_train.service")] if v == v][-1] == 1
    last = list(past.fetched.samples())[-1]
    assert [(u.name, u.active_state, u.restarts_total) for u in last.units] == [("dl_train.service", "failed", 7)]


def test_a_node_prometheus_does_not_know_is_said_in_plain_words(lab):
    lab, _ = lab
    with pytest.raises(NoHistory, match="no history for gpu07 in Prometheus .*hostname"):
        asyncio.run(_history(lab.url).window("gpu07", WEEK_S, 150))


def test_a_window_is_fetched_once_and_cached(lab):
    lab, _ = lab
    source = _history(lab.url)
    end = time.time()
    first = asyncio.run(source.window(NODE, 24 * 3600, 150, end=end))
    asked = source.client.queries
    again = asyncio.run(source.window(NODE, 24 * 3600, 150, end=end + 10))
    assert again is first and source.client.queries == asked


def test_a_down_prometheus_is_an_error_in_plain_words():
    with pytest.raises(PrometheusError, match="cannot reach Prometheus at http://127.0.0.1:1"):
        asyncio.run(_history("127.0.0.1:1").window(NODE, WEEK_S, 150))


def test_a_slow_prometheus_times_out_instead_of_waiting():
    """A server that accepts and never answers in time: the fetch gives up at its timeout."""
    release = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            release.wait(10)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(PrometheusError, match="timed out"):
            asyncio.run(_history(url, timeout_s=0.3).window(NODE, WEEK_S, 150))
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def _live_node_fleet(cfg: Config) -> FleetState:
    """gpu01 as a snapshot sees it: connected, two samples."""
    fleet = fleet_state(cfg, [NODE])
    fleet.on_status(NODE, st.OK)
    for dt in (1.0, 0.0):
        fleet.on_sample(NODE, Sample(time=time.time() - dt, gpus=[GpuSample(index=0, temperature_c=50.0)]))
    return fleet


def test_snapshot_since_reports_the_weeks_alerts_with_their_times_in_json_and_text(lab, capsys):
    lab, week = lab
    cfg = Config(prometheus=PrometheusSection(url=lab.url))
    snapshot.main(_live_node_fleet(cfg), [], 0.1, True, history=history_source(cfg), since_s=WEEK_S)
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    past = node["history"]
    assert past["source"] == "dltui + dcgm-exporter + node_exporter" and past["error"] is None
    hot = [a for a in past["alerts"] if a["rule"] == "gpu_temp_high"]
    assert len(hot) == 1 and hot[0]["gpu"] == HOT_GPU and hot[0]["severity"] == "critical"
    assert abs(hot[0]["start"] - week.hot[0]) <= past["step_s"]
    assert abs(hot[0]["end"] - week.hot[1]) <= 2 * past["step_s"]
    snapshot.main(_live_node_fleet(cfg), [], 0.1, False, history=history_source(cfg), since_s=WEEK_S)
    text = capsys.readouterr().out
    assert "Before this run (the last 7 d, from Prometheus)" in text
    day = time.strftime("%a", time.localtime(week.hot[0]))
    assert f"GPU {HOT_GPU}: core 93 °C ≥ 90 °C, {day} " in text
    assert "(gpu_temp_high, critical)" in text and "link downs" in text


def _snapshot_cli(home, *args: str) -> subprocess.CompletedProcess:
    """``dltui snapshot --json`` as a user runs it, with an empty home: no config file."""
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "--json", "--seconds", "1.5", "--interval", "0.5", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_fleet_read_from_prometheus_takes_its_past_from_the_same_url(lab, tmp_path):
    """``--prometheus URL`` and no other history URL: ``--since`` reads the week there too;
    ``--history-from`` names another Prometheus, and that one is asked instead."""
    lab, week = lab
    done = _snapshot_cli(tmp_path, "--prometheus", lab.url, "--since", "7d")
    # 3 too: the week's newest point ages with the suite (the lab is shared by this module), and
    # a node whose newest series are older than Prometheus's lookback is silent *live*; a usage
    # error (also 3) prints no JSON, which the next line would fail on
    assert done.returncode in (0, 1, 2, 3), done.stderr + done.stdout
    nodes = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    past = nodes[NODE]["history"]
    assert past["error"] is None and "dcgm-exporter" in past["source"]
    hot = [a for a in past["alerts"] if a["rule"] == "gpu_temp_high"]
    assert [a["gpu"] for a in hot] == [HOT_GPU]
    assert abs(hot[0]["start"] - week.hot[0]) <= past["step_s"]
    elsewhere = _snapshot_cli(tmp_path, "--prometheus", lab.url, "--since", "7d", "--history-from", "127.0.0.1:1")
    nodes = {n["name"]: n for n in json.loads(elsewhere.stdout)["nodes"]}
    assert nodes[NODE]["history"]["alerts"] == []
    assert "cannot reach Prometheus at http://127.0.0.1:1" in nodes[NODE]["history"]["error"]


def test_the_burnin_report_says_what_the_node_went_through_the_week_before_the_run(lab):
    lab, week = lab
    cfg = Config(prometheus=PrometheusSection(url=lab.url))
    found = asyncio.run(pasts(history_source(cfg), [(NODE, None)], BEFORE_THE_RUN_S, week.end))
    runs = [r for r in burnin_demo.runs(60) if r.node == NODE]
    thresholds = verdict.settings(None)
    doc = report.document("r1", runs, [verdict.judge(r, thresholds) for r in runs], thresholds,
                          before={p.name: p.to_dict() for p in found})
    before = doc["nodes"][0]["before_the_run"]
    assert any(a["rule"] == "gpu_temp_high" and a["gpu"] == HOT_GPU for a in before["alerts"])
    for text in (report.markdown(doc), report.page(doc, runs)):
        assert "Before the run (the 7 days before it, from Prometheus):" in text
        assert f"GPU {HOT_GPU}: core 93 °C ≥ 90 °C" in text
