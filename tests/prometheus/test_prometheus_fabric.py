"""The fabric from Prometheus, end to end with real parts: a real node_exporter reading a real
captured sysfs tree (node_exporter's own ``class/infiniband`` fixture, ``--path.sysfs``), with
its mlx4_0 port 2 taken down by this test; a loopback endpoint serving the real dcgm-exporter
A100 capture plus the four NVLink error counters dcgm-exporter names in its
``etc/default-counters.csv`` (added by this test: the capture has them commented out, as
dcgm-exporter ships); a real Prometheus scraping both every second; ``dltui snapshot
--prometheus`` maps them onto the probe's models and judges them with the same rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sysfs_tree

from .promtext import capture
from .tools import gpu_node_lab, wait_query

pytestmark = pytest.mark.oldest_python_only  # a real Prometheus: test_prometheus_e2e is the newest Python's smoke

REPO = Path(__file__).resolve().parents[2]
UUID = "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"
NVLINK_SERIES = "".join(
    f'DCGM_FI_DEV_NVLINK_{name}{{gpu="0",UUID="{UUID}",device="nvidia0",Hostname="ub20-a100-k8s"}} {value}\n'
    for name, value in (
        ("CRC_FLIT_ERROR_COUNT_TOTAL", 3),
        ("CRC_DATA_ERROR_COUNT_TOTAL", 1),
        ("REPLAY_ERROR_COUNT_TOTAL", 40),
        ("RECOVERY_ERROR_COUNT_TOTAL", 0),
    )
)


@pytest.fixture(scope="module")
def fabric_lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("fabric")
    sys_root = sysfs_tree.unpack(sysfs_tree.NODE_EXPORTER, base / "sys")
    sysfs_tree.take_down(sys_root, "mlx4_0", 2)
    page = capture("a100-mig_ub20-a100-k8s.prom") + NVLINK_SERIES
    flags = ("--path.sysfs=%s" % sys_root, "--collector.disable-defaults", "--collector.infiniband",
             "--collector.uname", "--collector.cpu", "--collector.meminfo")
    with gpu_node_lab(base, page, *flags) as (url, nodename):
        wait_query(url, "node_infiniband_state_id", lambda r: len(r) == 3)
        wait_query(url, "irate(node_infiniband_port_data_received_bytes_total[2m])", bool)
        config = base / "config.toml"
        config.write_text(f'[groups.ib]\nhosts = ["{nodename}"]\nib_rate_gbps = 40\n')
        yield url, nodename, config


def snapshot(url: str, config: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "--json", "--seconds", "1.5", "--prometheus", url,
         "--match", '{job=~"node|dcgm"}', "--interval", "0.5", "--config", str(config)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 1, 2), done.stderr + done.stdout
    return json.loads(done.stdout)


def test_node_exporter_infiniband_series_become_the_nodes_hca_ports(fabric_lab):
    url, nodename, config = fabric_lab
    (node,) = snapshot(url, config)["nodes"]
    ports = {p["name"]: p for p in node["sample"]["ib_ports"]}
    assert sorted(ports) == ["i40iw0:1", "mlx4_0:1", "mlx4_0:2"]
    one, two = ports["mlx4_0:1"], ports["mlx4_0:2"]
    assert (one["state"], one["phys_state"], one["rate_gbps"], one["hca_type"]) == ("ACTIVE", "LinkUp", 40.0, "MT4099")
    assert (two["state"], two["phys_state"]) == ("DOWN", "Polling")
    assert one["xmit_discards_total"] == 5 and one["rx_bytes_per_s"] == 0.0  # the capture's counters stand still
    assert ports["i40iw0:1"]["symbol_errors_total"] is None  # "N/A (no PMA)": no series
    assert one["link_layer"] is None  # node_exporter does not export it: n/a
    down = [a for a in node["alerts"] if a["rule"] == "ib_port_down"]
    assert down and down[0]["severity"] == "critical"
    assert "mlx4_0:2 DOWN (physical link Polling), expected up at 40 Gb/s" in down[0]["message"]


def test_dcgm_nvlink_error_counters_become_the_gpus_nvlink_record(fabric_lab):
    url, _, config = fabric_lab
    (node,) = snapshot(url, config)["nodes"]
    (links,) = node["sample"]["nvlinks"]
    assert (links["gpu"], links["crc_errors_total"], links["replay_errors_total"]) == (0, 4, 40)
    assert links["recovery_errors_total"] == 0
    assert links["links_active"] is None and links["links_up"] == []  # DCGM exports no link state
