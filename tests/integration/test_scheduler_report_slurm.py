"""The scheduler's view in ``dltui snapshot`` (text and JSON) and ``dltui export``, for real: a
real Slurm (tests/integration/slurm_lab.py) whose node is drained with a reason, a real sshd node
(``slurm01``) whose sessions see that Slurm; the snapshot reads the state once at its start and
the exporter every 30 s, both through the node's own connection (the dashboard's poller)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.integration.sshd import REPO, client_env
from tests.prometheus.tools import free_port

HOST = "slurm01"
REASON = "dltui: GPU 3 at 91 °C [alice]"


@pytest.fixture
def drained(slurm_sshd, slurm_lab, tmp_path):
    """The lab node drained with REASON (as if by dltui), the operator's environment; resumed after."""
    lab, _node = slurm_sshd
    env = client_env(lab.make_home(tmp_path / "home"))
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    slurm_lab.idle()  # no job of an earlier test still completing: the node reads IDLE+DRAIN
    slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=DRAIN", f"Reason={REASON}")
    try:
        yield env
    finally:
        slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=RESUME")


def _dltui(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dltui", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_snapshot_json_and_text_carry_slurms_drain_and_reason_real_slurm(drained, slurm_lab):
    done = _dltui(drained, "snapshot", HOST, "--json", "--seconds", "2")
    assert done.stdout, done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    sched = node["scheduler"]
    assert sched["problem"] is None and sched["kubernetes"] is None
    slurm = sched["slurm"]
    assert slurm["name"] == slurm_lab.node_name
    assert slurm["state"].startswith("IDLE+DRAIN") and slurm["word"] == "drain" and slurm["drained"] is True
    assert slurm["reason"] == REASON and slurm["reason_by"] and slurm["reason_at"]

    text = _dltui(drained, "snapshot", HOST, "--seconds", "2")
    lines = [line.strip() for line in text.stdout.splitlines()]
    assert f"slurm: drain — {REASON} ({slurm_lab.node_name} {slurm['state']})" in lines, text.stdout


def test_snapshot_of_a_resumed_node_reads_idle_real_slurm(slurm_sshd, slurm_lab, tmp_path):
    lab, _node = slurm_sshd
    env = client_env(lab.make_home(tmp_path / "home"))
    if "DRAIN" in slurm_lab.node_state():
        slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=RESUME")
    slurm_lab.idle()  # a resumed node reads NOT_RESPONDING a moment
    done = _dltui(env, "snapshot", HOST, "--json", "--seconds", "2")
    slurm = json.loads(done.stdout)["nodes"][0]["scheduler"]["slurm"]
    assert slurm["word"] in ("idle", "mix", "alloc") and slurm["drained"] is False and slurm["reason"] is None


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 (loopback, our own exporter)
        return answer.read().decode()


def test_exporter_says_the_drain_as_one_bounded_info_series_real_slurm(drained, slurm_lab, tmp_path):
    port = free_port()
    log = (tmp_path / "export.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "dltui", "export", HOST, "--listen", f"127.0.0.1:{port}"],
                            env=drained, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        page, deadline = "", time.monotonic() + 60
        while "dltui_node_scheduler_info{" not in page and time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "export.log").read_text()
            time.sleep(0.5)
            try:
                page = _scrape(f"http://127.0.0.1:{port}/metrics")
            except OSError:
                continue
        series = [line for line in page.splitlines() if line.startswith("dltui_node_scheduler_info{")]
        assert series == [f'dltui_node_scheduler_info{{node="{HOST}",scheduler="slurm",state="drain"}} 1'], page
        assert "GPU 3" not in "\n".join(series)  # the reason is never a label
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
