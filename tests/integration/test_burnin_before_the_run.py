"""The burn-in's "before the run", end to end: a real run (real sshd, the real driver, no
stressor) judged by a ``BurnIn`` whose history is a real Prometheus holding the node's week
(``tests/prometheus/history_lab``: promtool-built blocks of a seeded simulation). The report
it writes says what the rules found in the 7 days before the run's first sample."""

from __future__ import annotations

import json

import pytest

from dltui.burnin.session import BurnIn, Plan
from dltui.config import Config, PrometheusSection
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions
from dltui.wiring import history_source
from tests.prometheus.history_lab import DRIVE, HOT_GPU, NODE, STEP_S, WeekLab, week_ending_now

from .conftest import build_lab

WEEK_S = 7 * 86400


@pytest.fixture
def week_lab(tmp_path):
    week = week_ending_now(host_events=True)  # ends a minute ago: the run begins after it
    (tmp_path / "week").mkdir()
    lab = WeekLab(tmp_path / "week", week)
    try:
        yield lab, week
    finally:
        lab.stop()


@pytest.mark.oldest_python_only  # node side and a real Prometheus: test_burnin_e2e is the smoke
async def test_a_burnin_report_says_what_the_rules_found_in_the_week_before_the_run(
    week_lab, tmp_path, use_home
):
    prometheus, week = week_lab
    assert NODE == "gpu01"  # the SSH lab's node is the week's node
    lab = build_lab(tmp_path / "ssh")
    for name in ("gpu01", "gpu02"):
        lab.nodes[name].env["DLTUI_BURNIN_DIR"] = str(lab.nodes[name].dir / "burnin")
    lab.start()
    runner = SshCommands(SshOptions())
    try:
        use_home(lab.make_home(tmp_path / "client"))
        history = history_source(Config(prometheus=PrometheusSection(url=prometheus.url)))
        session = BurnIn(runner, ["gpu01", "gpu02"], "before1", history=history)
        plan = Plan(duration_s=2, gpu="none", cpu=False, preflight_s=1, post_s=1, launcher="setsid")
        await session.start(plan)
        assert session.failed == {}
        await session.follow()
        await session.judge()
        paths = session.write_report(tmp_path / "report")
    finally:
        await runner.close()
        lab.close()

    doc = json.loads(paths["json"].read_text())
    nodes = {n["node"]: n for n in doc["nodes"]}
    began = next(r for r in session.runs if r.node == "gpu01").fold.first_time
    assert began is not None and began > week.end  # the run came after the week
    before = nodes["gpu01"]["before_the_run"]
    # the week before the run's first sample, at one point a scrape, from the fleet's exporters
    assert (before["since"], before["until"]) == (began - WEEK_S, began)
    assert before["error"] is None and before["step_s"] == STEP_S
    assert before["source"] == "dltui + dcgm-exporter + node_exporter"
    found = {(a["rule"], a["gpu"]): a for a in before["alerts"]}
    events = {
        ("gpu_temp_high", HOT_GPU): week.hot,  # the hot afternoon
        ("ib_port_errors", None): week.flap,  # the flapping port
        ("drive_errors", None): week.drive,  # the pending sectors
        ("host_memory_low", None): week.squeeze,  # the memory squeeze
    }
    assert set(events) <= set(found)
    # and nothing else: the hot GPU's other rules (its memory, its airflow), the port's downs
    assert all(gpu == HOT_GPU or rule == "ib_port_down" for rule, gpu in set(found) - set(events))
    for key, (t0, _) in events.items():
        assert abs(found[key]["start"] - t0) <= STEP_S, (key, found[key])
    assert DRIVE in found["drive_errors", None]["message"]
    # a node Prometheus holds nothing of: said, in words, not an empty week
    other = nodes["gpu02"]["before_the_run"]
    assert other["alerts"] == [] and other["error"].startswith("no history for gpu02 in Prometheus")
    markdown = paths["md"].read_text()
    assert "Before the run (the 7 days before it, from Prometheus):" in markdown
    assert f"GPU {HOT_GPU}: core 93 °C ≥ 90 °C" in markdown and "pending sectors" in markdown
