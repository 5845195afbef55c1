"""The exporter's fabric series, from ports the probe's own collector read off procfs's real
sysfs capture and NVLink parsed from Azure's real ``nvidia-smi nvlink -s`` capture: Prometheus
names and units, nothing for what is not reported, and a page ``promtool check metrics``
accepts."""

from __future__ import annotations

from pathlib import Path

from dltui.core import status as st
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample
from dltui.core.state import FleetState
from dltui.export.metrics import render
from dltui.node.probe.infiniband import InfinibandCollector
from dltui.node.probe.nvlink_smi import parse_errors, parse_status, records
from tests import sysfs_tree

from .tools import promtool_check

NVLINK = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi-nvlink"


def _series(text: str) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def _fleet(tmp_path) -> FleetState:
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    sysfs_tree.take_down(root, "mlx4_0", 2)  # one port down, made so by this test
    status = (NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s.txt").read_text().replace("Link 4: 25 GB/s", "Link 4: <inactive>")
    errors = (NVLINK / "derived_a100-sxm4-80gb_nvlink-e.txt").read_text().replace("Link 2: Replay Errors: 0", "Link 2: Replay Errors: 7")
    (link_record,) = records(parse_status(status), parse_errors(errors))
    fleet = FleetState(["gpu01"])
    fleet.on_status("gpu01", st.OK)
    fleet.on_hello("gpu01", NodeFacts(hostname="gpu01", gpus=[GpuFacts(7, name="NVIDIA A100-SXM4-80GB", uuid="GPU-c7")]))
    sample = Sample.from_dict(
        {"time": 1700000000.0, "ib_ports": InfinibandCollector(str(root)).sample(), "nvlinks": [link_record]}
    )
    sample.gpus = [GpuSample(7)]
    fleet.on_sample("gpu01", sample)
    return fleet


def test_hca_ports_in_base_units_labelled_by_device_and_port(tmp_path):
    s = _series(render(_fleet(tmp_path)))
    mlx5 = 'node="gpu01",device="mlx5_0",port="1"'
    assert s[f"dltui_infiniband_port_rate_bytes_per_second{{{mlx5}}}"] == 25e9 / 8
    assert s[f"dltui_infiniband_port_up{{{mlx5}}}"] == 0  # its captured phys_state reads "4: ACTIVE", not LinkUp
    assert s['dltui_infiniband_port_up{node="gpu01",device="mlx4_0",port="1"}'] == 1
    assert s['dltui_infiniband_port_up{node="gpu01",device="mlx4_0",port="2"}'] == 0
    assert s['dltui_infiniband_port_errors_total{node="gpu01",device="mlx4_0",port="1",counter="symbol_error"}'] == 0
    info = 'node="gpu01",device="mlx4_0",port="2",link_layer="InfiniBand",hca_type="MT4099"'
    assert s[f"dltui_infiniband_port_info{{{info}}}"] == 1  # facts only: no state label to churn
    assert not any(k.startswith("dltui_infiniband_port_receive_bytes_per_second") for k in s)  # one reading: no rate


def test_nvlink_per_gpu_with_the_gpus_labels(tmp_path):
    s = _series(render(_fleet(tmp_path)))
    gpu = 'node="gpu01",gpu="7",uuid="GPU-c7",model="NVIDIA A100-SXM4-80GB"'
    assert s[f"dltui_gpu_nvlink_links_active{{{gpu}}}"] == 11
    assert s[f"dltui_gpu_nvlink_links{{{gpu}}}"] == 12
    assert s[f'dltui_gpu_nvlink_link_speed_bytes_per_second{{{gpu},link="0"}}'] == 25e9
    assert s[f'dltui_gpu_nvlink_link_speed_bytes_per_second{{{gpu},link="4"}}'] == 0
    assert s[f'dltui_gpu_nvlink_errors_total{{{gpu},type="replay"}}'] == 7


def test_promtool_accepts_the_fabric_series(tmp_path):
    text = render(_fleet(tmp_path))
    check = promtool_check(text)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "dltui_infiniband_port_errors_total" in text and "dltui_gpu_nvlink_errors_total" in text
