"""AMD's device-metrics-exporter through the Prometheus source: the mapping on a derived
scrape (tests/fixtures/amd/, names and labels from the exporter's own proto and metrics list),
and end to end a real Prometheus scraping a real node_exporter and that page (its hostname set
to this machine's), read by ``dltui snapshot --prometheus``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from dltui.transport.prometheus import build, queries

from .promtext import gpu_answers, vector
from .tools import Endpoint, start_node_exporter, start_prometheus, wait_query

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "tests" / "fixtures" / "amd" / "derived_device-metrics-exporter-mi300x-x2.prom").read_text()


def test_the_derived_mi300x_page_maps_onto_the_gpu_fields_with_the_vendor():
    fleet = build(gpu_answers(vector(PAGE, "10.0.0.9:5000", "amd"), "gpu_id"))
    assert list(fleet.nodes) == ["mi300x-01"]
    g0, g1 = fleet.sample("mi300x-01").gpus
    temperatures = (g0.temperature_c, g0.hotspot_temperature_c, g0.memory_temperature_c)
    assert g0.vendor == "amd" and temperatures == (None, 71, 62)
    assert (g0.power_w, g0.utilization_percent, g0.memory_used_mib) == (642, 100, 181234)
    assert (g1.pcie_replay_count, g1.ecc_corrected_volatile, g1.xgmi_errors_total) == (3, 2, 5)
    assert g0.clock_event_reasons_mask is None and g0.temperature_margin_c is None  # NVIDIA's only
    facts = fleet.facts("mi300x-01")
    assert facts.gpu_source == "device-metrics-exporter"
    mi300x = ("amd", "AMD Instinct MI300X OAM", 196592)
    assert [(f.vendor, f.name, f.memory_total_mib) for f in facts.gpus] == [mi300x] * 2
    assert facts.driver_version == "6.8.5"


def test_the_amd_prefix_is_read_too():
    prefixed = re.sub(r"^(gpu_|pcie_)", r"amd_\1", PAGE, flags=re.M)
    prefixed = prefixed.replace("# TYPE gpu_", "# TYPE amd_gpu_")
    fleet = build(gpu_answers(vector(prefixed, "10.0.0.9:5000", "amd"), "gpu_id"))
    assert fleet.sample("mi300x-01").gpus[0].hotspot_temperature_c == 71


def test_snapshot_from_a_real_prometheus_reads_the_amd_exporter_and_node_exporter_as_one_node(tmp_path):
    nodename = os.uname().nodename
    amd = Endpoint(PAGE.replace('hostname="mi300x-01"', f'hostname="{nodename}"'))
    node_exporter = prom = None
    try:
        node_exporter, node_addr = start_node_exporter(tmp_path)
        prom, url = start_prometheus(tmp_path / "prom", {"node": [node_addr], "amd": [amd.address]})
        wait_query(url, "irate(node_cpu_seconds_total[2m])", bool)
        wait_query(url, "gpu_junction_temperature", bool)
        assert all(q for q in queries().values())
        done = subprocess.run(
            [sys.executable, "-m", "dltui", "snapshot", "--json", "--seconds", "1.5", "--prometheus", url,
             "--interval", "0.5"],
            cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=60,
        )
    finally:
        if prom is not None:
            prom.stop()
        if node_exporter is not None:
            node_exporter.stop()
        amd.close()
    assert done.returncode in (0, 1, 2), done.stderr + done.stdout
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["name"] == nodename and node["status"] == "ok"
    gpus = node["sample"]["gpus"]
    assert [(g["index"], g["vendor"], g["hotspot_temperature_c"]) for g in gpus] == [(0, "amd", 71), (1, "amd", 68)]
    assert gpus[1]["xgmi_errors_total"] == 5 and gpus[0]["temperature_c"] is None
    assert node["facts"]["gpu_source"] == "device-metrics-exporter"
    assert node["sample"]["cpu"] is not None  # node_exporter's host joined on the hostname


def test_dltui_export_labels_each_gpu_with_its_vendor_in_its_info_series():
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState
    from dltui.export.metrics import render
    from dltui.transport.demo import DemoTransport

    from .promtext import parse
    from .tools import promtool_check

    demo = DemoTransport(nodes=12, gpus=8)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 5)
    text = render(fleet)
    info = {(labels["node"], labels["gpu"]): labels for name, labels, _ in parse(text) if name == "dltui_gpu_info"}
    assert info[("gpu09", "5")]["vendor"] == "amd" and info[("gpu09", "5")]["driver_version"] == "6.8.5"
    assert info[("gpu12", "0")]["vendor"] == "intel" and info[("gpu01", "0")]["vendor"] == "nvidia"
    assert not any(name.startswith("DCGM_") for name, _, _ in parse(text))  # dltui's own names
    values = {(name, labels["node"], labels.get("gpu")): value for name, labels, value in parse(text)}
    assert float(values[("dltui_gpu_hotspot_temperature_celsius", "gpu09", "0")]) > 60
    assert values[("dltui_gpu_throttled", "gpu09", "0")] == "0"
    assert ("dltui_gpu_xgmi_errors_total", "gpu09", "5") in values
    assert ("dltui_gpu_hotspot_temperature_celsius", "gpu01", "0") not in values  # NVIDIA: absent, not 0
    check = promtool_check(text)
    assert check.returncode == 0, check.stdout + check.stderr
