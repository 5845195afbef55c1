"""grafana/dltui-fleet.json against a real Prometheus scraping two real ``dltui export`` servers
over real sshd: gpu01, a healthy H100 node (a fake ``nvidia-smi`` replaying the real capture),
and gpu-fab, a node with what gpu01 lacks: eight HCA ports (a captured sysfs tree, ``[probe]
sysfs``, one port down, one slow), NVLink (Azure's A100 capture), drives (a fake ``smartctl``
replaying real captures: a failing NVMe, a SATA drive with reallocated sectors) and a checkpoint
folder. Every panel's PromQL, template variables substituted as Grafana would, is accepted, and
every query but the few named below returns data for All and for a node picked alone. The
checked-in JSON is what scripts/grafana_dashboard.py writes, and it has a panel for every kind of
series."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests import sysfs_tree
from tests.prometheus.tools import Daemon, free_port, start_prometheus, wait_http, wait_query

from .conftest import build_lab
from .sshd import REPO, client_env
from .test_fabric_sshd_fake_smi import eight_hca_tree

DASHBOARD = REPO / "grafana" / "dltui-fleet.json"
FIXTURES = REPO / "tests" / "fixtures"
# What Grafana puts in for its own variables (a 1 s scrape: a rate needs a few scrapes' span)
GRAFANA_VARS = {"$__rate_interval": "15s", "$__interval": "5s", "$__range": "5m"}
NO_UNIT = "no systemd on this machine, so its nodes report no unit: accepted by Prometheus, data not required"
# Panels (by title) and queries (by a series they name) the two nodes leave empty, and why;
# every other query must answer with data.
MAY_BE_EMPTY = {
    "Unit and checkpoint alerts (failed, flapping, stale checkpoint)": "no unit, and a fresh checkpoint",
    "dltui_unit_state": NO_UNIT,
    "dltui_unit_restarts_total": NO_UNIT,
    "dltui_gpu_pcie_replays_total": "the H100 capture has no PCIe replay counter",
    "dltui_gpu_hotspot_temperature_celsius": "NVIDIA GPUs report no junction (hotspot) sensor: AMD's only",
    "dltui_gpu_xgmi_errors_total": "XGMI is AMD's link: the H100 nodes have none",
    "dltui_stack_driver_held": "no NVIDIA driver package on this machine: no node says whether one is held",
    "dltui_stack_auto_upgrades_skip_driver": "automatic upgrades are off on this machine: nothing to skip",
}
# One series of each kind an on-call operator looks for, each on some panel.
ON_THE_DASHBOARD = (
    "dltui_unit_active",
    "dltui_unit_state",
    "dltui_unit_restarts_total",
    "dltui_checkpoint_age_seconds",
    "dltui_infiniband_port_up",
    "dltui_infiniband_port_rate_bytes_per_second",
    "dltui_infiniband_port_errors_total",
    "dltui_gpu_nvlink_links_active",
    "dltui_gpu_nvlink_errors_total",
    "dltui_drive_smart_passed",
    "dltui_drive_available_spare_ratio",
    "dltui_drive_endurance_used_ratio",
    "dltui_stack_driver_held",
    "dltui_stack_reboot_pending",
)
DRIVES = {
    "/dev/nvme0": ["nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json"],
    "/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json"],
}


def panels() -> list[dict]:
    return [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]


def may_be_empty(title: str, expr: str) -> bool:
    return title in MAY_BE_EMPTY or any(name in MAY_BE_EMPTY for name in re.findall(r"dltui_\w+", expr))


def substitute(expr: str, node: str) -> str:
    for name, value in GRAFANA_VARS.items():
        expr = expr.replace(name, value)
    return expr.replace("$node", node)


def ask(url: str, promql: str) -> dict:
    q = urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as exc:  # 400: Prometheus refused the query
        return json.load(exc)


def test_the_checked_in_dashboard_is_what_the_script_writes():
    out = subprocess.run(
        [sys.executable, "-c", "import scripts.grafana_dashboard as g; print(g.text(), end='')"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == DASHBOARD.read_text()


def test_the_dashboard_has_a_datasource_and_a_node_variable_and_every_panel_uses_them():
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["node"]["query"]["query"] == "label_values(dltui_node_up, node)"
    assert board["schemaVersion"] >= 36  # Grafana 9.x+; 39 is Grafana 10.x
    for p in panels():
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        for target in p["targets"]:
            assert '$node"' in target["expr"], (p["title"], target["expr"])


def test_the_dashboard_has_a_panel_for_every_kind_of_series():
    exprs = " ".join(t["expr"] for p in panels() for t in p["targets"])
    assert [name for name in ON_THE_DASHBOARD if name not in exprs] == []
    titles = {p["title"] for p in panels()}
    assert [k for k in MAY_BE_EMPTY if k not in titles and k not in exprs] == []  # no stale excuse


@pytest.fixture
def fleet_lab(tmp_path):
    lab = build_lab(tmp_path / "lab", extra_nodes=("gpu-fab",))
    node = lab.nodes["gpu-fab"]
    node.env.update(
        FAKE_SMI_GPU_COUNT="8",
        FAKE_SMI_NVLINK_STATUS=str(FIXTURES / "nvidia-smi-nvlink" / "azurehpc_a100-sxm4-80gb_nvlink-s.txt"),
        FAKE_SMI_NVLINK_ERRORS=str(FIXTURES / "nvidia-smi-nvlink" / "derived_a100-sxm4-80gb_nvlink-e.txt"),
    )
    shutil.copy(REPO / "tests" / "fakes" / "smartctl", node.bin / "smartctl")
    (node.bin / "smartctl.drives.json").write_text(
        json.dumps({dev: [str(FIXTURES / "smartctl" / c) for c in caps] for dev, caps in DRIVES.items()})
    )
    try:
        yield lab.start()
    finally:
        lab.close()


def exporter(node: str, env: dict, log: Path, *args: str) -> tuple[Daemon, str]:
    port = free_port()
    argv = [sys.executable, "-m", "dltui", "export", node, "--listen", f"127.0.0.1:{port}", "--interval", "0.5"]
    d = Daemon([*argv, *args], log, env=env, cwd=REPO)
    wait_http(f"http://127.0.0.1:{port}/metrics", "dltui export", d.proc, d.log)
    return d, f"127.0.0.1:{port}"


@pytest.mark.oldest_python_only  # Prometheus runs the queries
@pytest.mark.sshd
def test_every_panel_query_runs_against_prometheus_scraping_dltui_export_fake_smi_fake_smartctl(fleet_lab, tmp_path):
    env = client_env(fleet_lab.make_home(tmp_path / "home"))
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "step-1000.pt").write_bytes(b"weights")
    config = tmp_path / "fab.toml"
    sysfs = eight_hca_tree(tmp_path / "host-sys")  # mlx5_2 down, mlx5_6 slow
    config.write_text(
        f'[probe]\nsysfs = "{sysfs}"\n\n'
        f'[groups.fab]\nhosts = ["gpu-fab"]\ncheckpoint = "{checkpoints}/*.pt"\nib_rate_gbps = 100\n'
    )
    daemons: list[Daemon] = []
    try:
        targets = []
        for node, args in (("gpu01", ()), ("gpu-fab", ("--config", str(config)))):
            d, target = exporter(node, env, tmp_path / f"export-{node}.log", *args)
            daemons.append(d)
            targets.append(target)
        prom, url = start_prometheus(tmp_path / "prom", {"dltui": targets})
        daemons.append(prom)
        wait_query(url, 'dltui_gpu_temperature_celsius{node="gpu01"}', bool)
        wait_query(url, 'dltui_infiniband_port_up{node="gpu-fab"}', bool)
        wait_query(url, 'dltui_drive_smart_passed{node="gpu-fab"}', bool)
        sysfs_tree.add_to_counter(sysfs, "mlx5_6", "symbol_error", 12)  # a marginal cable
        wait_query(url, 'increase(dltui_infiniband_port_errors_total{counter="symbol_error"}[1m]) > 0', bool)
        time.sleep(3)  # a few more scrapes, so [1m] windows and rates have points (not asserted on)
        refused, fed = [], {}
        for node in (".*", "gpu01", "gpu-fab"):  # "All", and each node picked alone
            for p in panels():
                for target in p["targets"]:
                    answer = ask(url, substitute(target["expr"], node))
                    if answer.get("status") != "success":
                        refused.append((p["title"], target["expr"], answer.get("error")))
                    elif answer["data"]["result"]:
                        fed.setdefault((p["title"], target["expr"]), set()).add(node)
        assert refused == []
        empty = [
            (p["title"], t["expr"])
            for p in panels()
            for t in p["targets"]
            if not may_be_empty(p["title"], t["expr"])
            and not {".*", "gpu01"} <= fed.get((p["title"], t["expr"]), set())
            and not {".*", "gpu-fab"} <= fed.get((p["title"], t["expr"]), set())
        ]
        assert empty == []  # each answers for All and for one node picked alone
    finally:
        for d in reversed(daemons):
            d.stop()
