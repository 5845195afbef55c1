"""End to end over real sshd: a node whose sysfs is a captured tree (``[probe] sysfs`` pointing
at prometheus/procfs's ``class/infiniband`` capture, made an eight-HCA node with one port down
and one slow by this test) and whose fake ``nvidia-smi`` answers ``nvlink -s`` / ``-e`` from
Azure's A100 capture; ``dltui snapshot --json`` reports the ports and the NVLink read by the
real probe on the node, and the fabric rules' alerts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sysfs_tree

from .conftest import build_lab
from .sshd import REPO, client_env

NVLINK = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi-nvlink"


def eight_hca_tree(root: Path) -> Path:
    """The eight-HCA node of sysfs_tree.eight_hcas (procfs's captured mlx5_0, copied), with
    mlx5_2 DOWN/Polling and mlx5_6 back at the captured 25 Gb/s 1X EDR; an empty net/ and
    block/ (so the node lists no NIC or disk of this machine: every sysfs read goes to the tree)."""
    sysfs_tree.eight_hcas(root)
    sysfs_tree.take_down(root, "mlx5_2")
    sysfs_tree.write(sysfs_tree.port(root, "mlx5_6") / "rate", "25 Gb/sec (1X EDR)")
    (root / "class" / "net").mkdir()
    (root / "block").mkdir()
    return root


@pytest.fixture
def fabric_lab(tmp_path):
    lab = build_lab(tmp_path / "lab", extra_nodes=("gpu-ib",))
    lab.nodes["gpu-ib"].env.update(
        FAKE_SMI_GPU_COUNT="8",
        FAKE_SMI_NVLINK_STATUS=str(NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s.txt"),
        FAKE_SMI_NVLINK_ERRORS=str(NVLINK / "derived_a100-sxm4-80gb_nvlink-e.txt"),
    )
    try:
        yield lab.start()
    finally:
        lab.close()


def test_snapshot_reads_the_nodes_hca_ports_from_its_sysfs_root_and_nvlink_fake_smi(fabric_lab, tmp_path):
    root = eight_hca_tree(tmp_path / "host-sys")
    config = tmp_path / "config.toml"
    config.write_text(f'[probe]\nsysfs = "{root}"\n\n[groups.ib]\nhosts = ["gpu-ib"]\nib_rate_gbps = 100\n')
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "gpu-ib", "--json", "--seconds", "6", "--interval", "0.5",
         "--config", str(config)],
        cwd=REPO,
        env=client_env(fabric_lab.make_home(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr + done.stdout
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["status"] == "ok"
    assert node["facts"]["nics"] == [] and node["facts"]["block_devices"] == []  # the tree's, not this machine's
    ports = {p["name"]: p for p in node["sample"]["ib_ports"]}
    assert sorted(ports) == [f"mlx5_{i}:1" for i in range(8)]
    assert (ports["mlx5_2:1"]["state"], ports["mlx5_2:1"]["phys_state"]) == ("DOWN", "Polling")
    assert ports["mlx5_0:1"]["hca_type"] == "MT4118"
    (links,) = node["sample"]["nvlinks"]  # the capture is GPU 7's; polled from 3 s into the run
    assert (links["gpu"], links["links_active"], links["links_total"], links["replay_errors_total"]) == (7, 12, 12, 0)
    alerts = {a["rule"]: a for a in node["alerts"]}
    assert alerts["ib_port_down"]["severity"] == "critical"
    assert alerts["ib_port_down"]["message"].startswith(
        "HCA port mlx5_2 DOWN (physical link Polling), expected up at 100 Gb/s"
    )
    assert alerts["ib_port_rate_low"]["message"].startswith("mlx5_6 at 25 Gb/s (1X EDR), its siblings at 100 Gb/s")
    assert "nvlink_degraded" not in alerts and "nvlink_errors" not in alerts
