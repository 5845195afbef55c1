"""End to end with real parts: a real Prometheus scraping every second a real node_exporter
(this machine) and a loopback endpoint serving a real dcgm-exporter capture (the A100 of
tests/fixtures/dcgm-exporter, its ``Hostname`` label set to this machine's name so the two
join, as on a real GPU node); ``dltui snapshot --prometheus`` reports one node with both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .promtext import capture
from .tools import free_port, gpu_node_lab

REPO = Path(__file__).resolve().parents[2]
A100 = "a100-mig_ub20-a100-k8s.prom"


@pytest.fixture(scope="module")
def prometheus_lab(tmp_path_factory):
    with gpu_node_lab(tmp_path_factory.mktemp("prometheus"), capture(A100)) as lab:
        yield lab


def _snapshot(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "--json", "--seconds", "1.5", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _meminfo_total_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def test_snapshot_from_prometheus_joins_node_exporter_and_dcgm_exporter_into_one_node(
    prometheus_lab,
):
    url, nodename = prometheus_lab
    done = _snapshot("--prometheus", url, "--match", '{job=~"node|dcgm"}', "--interval", "0.5")
    assert done.returncode in (0, 1, 2), done.stderr + done.stdout
    report = json.loads(done.stdout)
    (node,) = report["nodes"]
    assert node["name"] == nodename and node["status"] == "ok"
    sample, facts = node["sample"], node["facts"]
    (g,) = sample["gpus"]
    assert (g["index"], g["uuid"]) == (0, "GPU-34319582-d595-d1c7-d1d2-179bcfa61660")
    assert (g["temperature_c"], g["memory_temperature_c"], g["power_w"]) == (61, 69, 409.692)
    assert (g["memory_used_mib"], g["memory_total_mib"]) == (4845, 40535)
    assert g["utilization_percent"] is None  # not in the capture: n/a, never 0
    assert sample["memory"]["total_bytes"] == _meminfo_total_bytes()
    assert facts["cpu_count"] == os.cpu_count() and facts["kernel"] == os.uname().release
    assert facts["gpu_source"] == "dcgm-exporter"
    assert 0 <= sample["cpu"]["total_percent"] <= 100
    root = os.statvfs("/")
    (fs,) = [f for f in sample["filesystems"] if f["mountpoint"] == "/"]
    assert fs["total_bytes"] == root.f_blocks * root.f_frsize
    worst = {a["severity"] for a in node["alerts"]}
    assert done.returncode == (2 if "critical" in worst else 1 if "warning" in worst else 0)


def test_a_selector_that_matches_nothing_is_unknown_not_ok(prometheus_lab):
    url, _ = prometheus_lab
    done = _snapshot("--prometheus", url, "--match", 'job="no-such-job"')
    assert done.returncode == 3, done.stdout + done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["status"] == "unreachable" and "no-such-job" in node["error"]


def test_an_unreachable_prometheus_is_unknown_with_the_reason():
    port = free_port()
    done = _snapshot("--prometheus", f"http://127.0.0.1:{port}")
    assert done.returncode == 3, done.stdout + done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["status"] == "unreachable"
    assert f"cannot reach Prometheus at http://127.0.0.1:{port}" in node["error"]


def test_a_query_prometheus_refuses_is_unknown_with_prometheus_own_words(prometheus_lab):
    url, _ = prometheus_lab
    done = _snapshot("--prometheus", url, "--match", 'job=~"("')  # a regex Prometheus rejects
    assert done.returncode == 3, done.stdout + done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["status"] == "unreachable"
    assert node["error"].startswith(f"Prometheus at {url} refused a query: ")
    assert "missing closing )" in node["error"]


async def test_only_hosts_with_node_or_dcgm_series_are_nodes_and_a_node_gone_is_unreachable(tmp_path):
    """A real Prometheus scraping itself, a real ``dltui export``, a blackbox-style prober page
    and a real node_exporter: one node (node_exporter's host), not four "ok" nodes without
    data. When that node_exporter dies, its node is unreachable with the reason, not gone."""
    from dltui.core import status as st
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState
    from dltui.transport.prometheus import PrometheusTransport

    from .tools import Daemon, Endpoint, query, start_node_exporter, start_prometheus, wait_http, wait_query

    export_addr = f"127.0.0.1:{free_port()}"
    exporter = Daemon(
        [sys.executable, "-m", "dltui", "export", "--listen", export_addr],
        tmp_path / "export.log",
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        cwd=REPO,
    )
    prober = Endpoint('probe_success{target="gpu01:22"} 1\nprobe_duration_seconds 0.004\n')
    node_exporter = prom = None
    try:
        wait_http(f"http://{export_addr}/metrics", "dltui export", exporter.proc, exporter.log)
        node_exporter, node_addr = start_node_exporter(tmp_path)
        prom_port = free_port()
        prom, url = start_prometheus(
            tmp_path / "prom",
            {"prometheus": [f"127.0.0.1:{prom_port}"], "dltui": [export_addr], "blackbox": [prober.address],
             "node": [node_addr]},
            port=prom_port,
        )
        wait_query(url, "up", lambda r: len(r) == 4 and all(s["value"][1] == "1" for s in r))
        wait_query(url, "irate(node_cpu_seconds_total[2m])", bool)
        transport = PrometheusTransport(url, interval_s=1)
        fleet = FleetState([], engine=build_engine())
        await transport.update(fleet)
        assert list(fleet.nodes) == [os.uname().nodename]
        node = fleet.nodes[os.uname().nodename]
        assert node.status == st.OK and node.sample.memory.total_bytes == _meminfo_total_bytes()
        node_exporter.stop()
        wait_query(url, 'up{job="node"} == 0', bool)
        assert not query(url, "node_uname_info")  # its series are stale: gone from answers
        await transport.update(fleet)
        assert list(fleet.nodes) == [os.uname().nodename]
        assert node.status == st.UNREACHABLE
        assert node.reason == f"Prometheus cannot scrape {node_addr} (up == 0)"
    finally:
        for daemon in (prom, node_exporter, exporter):
            if daemon is not None:
                daemon.stop()
        prober.close()
