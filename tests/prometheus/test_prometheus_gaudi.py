"""Intel Gaudi's Prometheus Metric Exporter through the Prometheus source: the mapping on a
derived scrape (tests/fixtures/gaudi/, series names from Habana's docs, see PROVENANCE.md),
and end to end a real Prometheus scraping a real node_exporter and that page, read by
``dltui snapshot --prometheus``. The exporter has no hostname label: an AIP joins the node
of node_exporter on the same host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from dltui.history.plan import plan
from dltui.history.queries import GPU, family_query
from dltui.transport.prometheus import build, queries

from .promtext import gpu_answers, vector
from .tools import Endpoint, start_node_exporter, start_prometheus, wait_query

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "tests" / "fixtures" / "gaudi" / "derived_gaudi-metric-exporter-hl325l-x2.prom").read_text()


def test_the_derived_gaudi_page_maps_onto_the_gpu_fields_in_dltui_units():
    fleet = build(gpu_answers(vector(PAGE, "gaudi3-01:41611", "gaudi"), "id"))
    assert list(fleet.nodes) == ["gaudi3-01"]  # no hostname label: the instance's host
    a0, a1 = fleet.sample("gaudi3-01").gpus
    assert a0.vendor == "intel" and (a0.temperature_c, a1.temperature_c) == (36, 41)
    assert (a0.power_w, a1.power_w, a0.power_limit_w) == (226, 412.5, 850)  # from mW
    assert (a0.utilization_percent, a0.memory_used_mib, a1.memory_used_mib) == (97, 672, 65536)  # bytes
    assert (a0.sm_clock_mhz, a1.pcie_replay_count, a1.pcie_width) == (1600, 2, 16)
    # not published by the exporter: n/a, never 0
    assert a0.memory_temperature_c is None and a0.hotspot_temperature_c is None
    assert a0.ecc_uncorrected_volatile is None and a0.clock_event_reasons_mask is None
    facts = fleet.facts("gaudi3-01")
    assert facts.gpu_source == "gaudi-metric-exporter"
    assert [(f.vendor, f.uuid, f.memory_total_mib) for f in facts.gpus] == [
        ("intel", "01P4-HL3090A0-18-U4V193-22-07-00", 131072),
        ("intel", "01P4-HL3090A0-18-U4V298-03-04-04", 131072),
    ]
    assert facts.driver_version == "1.22.1-97ec1a4"
    assert [f.driver_version for f in facts.gpus] == ["1.22.1-97ec1a4"] * 2  # habanalabs, per AIP


def test_the_queries_ask_for_the_gaudi_series_by_aip():
    q = queries('job="gaudi"')
    assert 'habanalabs_(' in q["gpu"] and '"gpu", "$1", "id", "(.*)"' in q["gpu"]
    assert "temperature_onchip" in q["gpu"] and 'job="gaudi"' in q["gpu"]
    assert "UUID" in q["gpu_facts"] and "habanalabs_(" in q["gpu_facts"]


def test_snapshot_from_a_real_prometheus_reads_the_gaudi_exporter_and_node_exporter_as_one_node(tmp_path):
    nodename = os.uname().nodename
    gaudi = Endpoint(PAGE)
    node_exporter = prom = None
    try:
        node_exporter, node_addr = start_node_exporter(tmp_path)
        prom, url = start_prometheus(tmp_path / "prom", {"node": [node_addr], "gaudi": [gaudi.address]})
        wait_query(url, "irate(node_cpu_seconds_total[2m])", bool)
        wait_query(url, "habanalabs_temperature_onchip", bool)
        # the nodes' past asks for the same series: Prometheus evaluates dltui.history's query
        past = family_query("other", f'instance="{gaudi.address}"', plan(3600, time.time(), 60, 15), (GPU,))
        assert past is not None
        answered = wait_query(url, past, lambda r: len(r) >= 6)
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
        gaudi.close()
    assert done.returncode in (0, 1, 2), done.stderr + done.stdout
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["name"] == nodename and node["status"] == "ok"  # joined on the host (127.0.0.1)
    gpus = node["sample"]["gpus"]
    assert [(g["index"], g["vendor"], g["temperature_c"], g["power_w"]) for g in gpus] == [
        (0, "intel", 36, 226), (1, "intel", 41, 412.5)
    ]
    assert gpus[0]["memory_temperature_c"] is None and gpus[1]["pcie_replay_count"] == 2
    assert node["facts"]["gpu_source"] == "gaudi-metric-exporter"
    assert [g["memory_total_mib"] for g in node["facts"]["gpus"]] == [131072, 131072]
    assert node["sample"]["cpu"] is not None  # node_exporter's host
    readings = {(r["metric"]["dltui_field"], r["metric"]["gpu"]): float(r["value"][1]) for r in answered}
    assert readings[("temperature_c", "1")] == 41 and readings[("power_w", "1")] == 412.5  # W, from mW
    assert readings[("utilization_percent", "0")] == 97
