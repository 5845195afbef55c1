"""AMD and Intel Gaudi nodes over real sshd, with the real probe: a node with a FAKE ``amd-smi``
on its PATH (the real MI210 ``amd-smi static`` capture, a derived 26.x ``metric`` document of
that card hot and throttled), one with a FAKE ``hl-smi`` (the real 2x HL-325L capture) and one
with FAKE ``nvidia-smi`` *and* FAKE ``amd-smi`` (both vendors reported); then a node whose
``[probe] sysfs`` is an amdgpu sysfs tree (kernel files, no tool at all)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.core import status as st
from dltui.transport.ssh.options import SshOptions
from tests import sysfs_tree

from .conftest import build_lab
from .sshd import REPO, client_env
from .streaming import Streaming

pytestmark = pytest.mark.sshd

FAKES = REPO / "tests" / "fakes"
AMD = REPO / "tests" / "fixtures" / "amd"
GAUDI = REPO / "tests" / "fixtures" / "gaudi"


def _install(node, name: str, **env: str) -> None:
    shutil.copy(FAKES / name, node.bin / name)
    node.env.update(env)


@pytest.fixture
def vendor_lab(tmp_path: Path):
    lab = build_lab(tmp_path / "lab")
    amd_env = {
        "FAKE_AMD_SMI_STATIC": str(AMD / "amd-smi-static-mi210.json"),
        "FAKE_AMD_SMI_METRIC": str(AMD / "derived_amd-smi-metric-mi210_26x-gpu-data.json"),
    }
    _install(lab.add_node("mi210", fake_smi=False), "amd-smi", **amd_env)
    gaudi_capture = str(GAUDI / "hl-smi-query-hl325l.csv")
    _install(lab.add_node("gaudi3", fake_smi=False), "hl-smi", FAKE_HLSMI_CAPTURE=gaudi_capture)
    _install(lab.add_node("mixed"), "amd-smi", **amd_env)  # fake nvidia-smi too (add_node's default)
    try:
        yield lab.start()
    finally:
        lab.close()


def test_snapshot_json_reads_fake_amd_smi_fake_hl_smi_and_a_mixed_node(vendor_lab, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "mi210", "gaudi3", "mixed", "--json", "--seconds", "4",
         "--interval", "0.5"],
        cwd=REPO,
        env=client_env(vendor_lab.make_home(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode in (0, 1, 2), done.stderr + done.stdout
    nodes = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    assert {n["status"] for n in nodes.values()} == {"ok"}, done.stdout

    mi210 = nodes["mi210"]
    assert mi210["facts"]["gpu_source"] == "amd-smi" and mi210["facts"]["gpu_note"] is None
    (facts,) = mi210["facts"]["gpus"]
    assert (facts["vendor"], facts["name"]) == ("amd", "AMD Instinct MI210")
    assert facts["hotspot_temperature_slowdown_c"] == 100.0
    (gpu,) = mi210["sample"]["gpus"]
    assert (gpu["vendor"], gpu["hotspot_temperature_c"], gpu["throttled"]) == ("amd", 88.0, True)
    assert gpu["fan_percent"] is None  # "N/A" stays n/a over the wire

    gaudi = nodes["gaudi3"]
    assert gaudi["facts"]["gpu_source"] == "hl-smi"
    assert [g["driver_version"] for g in gaudi["facts"]["gpus"]] == ["1.22.1-97ec1a4"] * 2
    assert [(g["vendor"], g["name"], g["power_w"]) for g in gaudi["sample"]["gpus"]] == [
        ("intel", "HL-325L", 226.0),
        ("intel", "HL-325L", 230.0),
    ]

    mixed = nodes["mixed"]
    assert mixed["facts"]["gpu_source"] in ("nvidia-smi+amd-smi", "nvml+amd-smi")
    assert [(g["index"], g["vendor"]) for g in mixed["sample"]["gpus"]] == [(0, "nvidia"), (1, "amd")]


async def test_amdgpu_sysfs_tree_fake_under_probe_sysfs_is_read_without_any_tool(vendor_lab, tmp_path, use_home):
    use_home(vendor_lab.make_home(tmp_path / "home"))
    root = sysfs_tree.amd_cards(tmp_path / "host-sys", count=2)
    sysfs_tree.write(sysfs_tree.amd_file(root, 1, "pcie_replay_count"), "4100")
    async with Streaming(["gaudi3"], SshOptions(sysfs=str(root)), interval_s=0.3) as s:
        def both_vendors(fleet) -> bool:
            node = fleet.nodes["gaudi3"]
            return node.status == st.OK and node.sample is not None and len(node.sample.gpus) == 4

        await s.until(both_vendors, "gaudi3 reporting its Gaudi AIPs and the tree's AMD cards")
        node = s.state.nodes["gaudi3"]
        assert node.facts.gpu_source == "amd-sysfs+hl-smi"
        gpus = node.sample.gpus
        assert [(g.index, g.vendor) for g in gpus] == [(0, "amd"), (1, "amd"), (2, "intel"), (3, "intel")]
        assert gpus[1].pcie_replay_count == 4100 and gpus[0].hotspot_temperature_c == 44.0
