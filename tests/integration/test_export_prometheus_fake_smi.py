"""End to end: ``dltui export gpu01`` (real sshd, the real probe, a fake ``nvidia-smi`` replaying
the real H100 capture) scraped every second by a real Prometheus; PromQL answers carry the
values the probe reported (read back with ``dltui snapshot --json`` from the same node), and a
hot, throttled GPU's open alerts as ``dltui_alert`` series."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.prometheus.tools import Daemon, free_port, query, start_prometheus, wait_http, wait_query

from .conftest import build_lab
from .sshd import REPO, client_env
from .test_alerts_e2e_fake_smi import HOT_AND_THROTTLED

MIB = 1024 * 1024


def _value(result: list[dict]) -> float:
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def test_prometheus_scrapes_the_exporter_and_answers_with_the_probes_values_fake_smi(
    shared_lab, tmp_path
):
    env = client_env(shared_lab.make_home(tmp_path / "home"))
    port = free_port()
    exporter = Daemon(
        [
            sys.executable,
            "-m",
            "dltui",
            "export",
            "gpu01",
            "--listen",
            f"127.0.0.1:{port}",
            "--interval",
            "0.5",
        ],
        tmp_path / "export.log",
        env=env,
        cwd=REPO,
    )
    prom = None
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", "dltui export", exporter.proc, exporter.log)
        prom, url = start_prometheus(tmp_path / "prom", {"dltui": [f"127.0.0.1:{port}"]})
        gpu0 = 'node="gpu01",gpu="0"'
        temp = _value(wait_query(url, f"dltui_gpu_temperature_celsius{{{gpu0}}}", bool))
        snap = subprocess.run(
            [sys.executable, "-m", "dltui", "snapshot", "gpu01", "--json", "--seconds", "1"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        node = json.loads(snap.stdout)["nodes"][0]
        g = node["sample"]["gpus"][0]
        assert temp == g["temperature_c"]
        assert _value(wait_query(url, f"dltui_gpu_power_watts{{{gpu0}}}", bool)) == g["power_w"]
        assert (
            _value(wait_query(url, f"dltui_gpu_memory_total_bytes{{{gpu0}}}", bool))
            == g["memory_total_mib"] * MIB
        )
        assert (
            _value(wait_query(url, f"dltui_gpu_sm_clock_hertz{{{gpu0}}}", bool))
            == g["sm_clock_mhz"] * 1e6
        )
        mem_total = node["sample"]["memory"]["total_bytes"]
        assert _value(wait_query(url, 'dltui_memory_total_bytes{node="gpu01"}', bool)) == mem_total
        info = wait_query(url, 'dltui_gpu_info{node="gpu01"}', bool)
        assert {r["metric"]["uuid"] for r in info} == {x["uuid"] for x in node["sample"]["gpus"]}
        assert {r["metric"]["model"] for r in info} == {"NVIDIA H100 80GB HBM3"}
        assert _value(wait_query(url, 'dltui_node_up{node="gpu01"}', bool)) == 1
        # The H100 capture has no fan reading ([N/A]): no series, not a 0.
        assert g["fan_percent"] is None
        assert wait_query(url, f"dltui_gpu_fan_ratio{{{gpu0}}}", lambda r: True) == []
        assert (
            _value(wait_query(url, f"dltui_gpu_memory_temperature_celsius{{{gpu0}}}", bool))
            == g["memory_temperature_c"]
        )
    finally:
        if prom is not None:
            prom.stop()
        exporter.stop()


@pytest.fixture
def hot_lab(tmp_path):
    lab = build_lab(tmp_path / "lab", extra_nodes=("gpu-hot",))
    scenario = tmp_path / "hot.jsonl"
    scenario.write_text(json.dumps({"gpus": {"0": HOT_AND_THROTTLED}}) + "\n")
    lab.nodes["gpu-hot"].env.update(FAKE_SMI_SCENARIO=str(scenario), FAKE_SMI_GPU_COUNT="2")
    try:
        yield lab.start()
    finally:
        lab.close()


def test_open_alerts_reach_prometheus_as_dltui_alert_series_fake_smi(hot_lab, tmp_path):
    """GPU 0 of gpu-hot reports HW slowdown + power brake (0x88): its alerts become
    dltui_alert{node,gpu,rule,severity} 1 in Prometheus; gpu01 has none."""
    env = client_env(hot_lab.make_home(tmp_path / "home"))
    port = free_port()
    exporter = Daemon(
        [
            sys.executable,
            "-m",
            "dltui",
            "export",
            "gpu01",
            "gpu-hot",
            "--listen",
            f"127.0.0.1:{port}",
            "--interval",
            "0.5",
        ],
        tmp_path / "export.log",
        env=env,
        cwd=REPO,
    )
    prom = None
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", "dltui export", exporter.proc, exporter.log)
        prom, url = start_prometheus(tmp_path / "prom", {"dltui": [f"127.0.0.1:{port}"]})
        hot = 'node="gpu-hot",gpu="0"'
        brake = wait_query(url, f'dltui_alert{{{hot},rule="power_brake"}}', bool)
        assert brake[0]["metric"]["severity"] == "critical" and brake[0]["value"][1] == "1"
        mask = wait_query(url, f"dltui_gpu_clock_event_reasons{{{hot}}}", bool)
        assert int(float(mask[0]["value"][1])) == 0x88
        assert (
            _value(wait_query(url, 'dltui_gpu_temperature_celsius{node="gpu-hot",gpu="0"}', bool))
            == 91
        )
        assert query(url, 'dltui_alert{node="gpu01"}') == []
        assert query(url, 'dltui_alert{node="gpu-hot",gpu="1"}') == []
    finally:
        if prom is not None:
            prom.stop()
        exporter.stop()
