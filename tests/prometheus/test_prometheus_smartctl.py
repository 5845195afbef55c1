"""smartctl_exporter's series mapped onto the drive model, on its real example output
(tests/fixtures/smartctl-exporter): from the answer alone, and end to end through a real
Prometheus scraping a real node_exporter and an endpoint serving that output on the same host,
into ``dltui snapshot --prometheus``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.transport.prometheus import build, queries
from dltui.transport.prometheus.mapping import host_of
from dltui.transport.prometheus.smartctl import QUERY, drives_by_host

from .promtext import vector
from .tools import Endpoint, start_node_exporter, start_prometheus, wait_query

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "tests/fixtures/smartctl-exporter/example-output_nvme-warning-0x04_four-sata.prom").read_text()


def _answer(instance: str = "10.0.0.7:9633") -> dict:
    return {"result": vector(PAGE, instance, "smartctl")}


def test_the_exporters_nvme_drive_with_critical_warning_4_maps_onto_the_drive_model():
    (drives,) = drives_by_host(_answer(), host_of).values()
    nvme = drives[0]
    assert (nvme.device, nvme.model, nvme.serial) == ("/dev/nvme0", "PLEXTOR PX-256M9PY +", "P02050305257")
    assert nvme.smart_passed is False
    assert (nvme.critical_warning_mask, nvme.critical_warnings) == (4, ["reliability_degraded"])
    assert (nvme.endurance_used_percent, nvme.available_spare_percent, nvme.temperature_c) == (161, 100, 37)
    assert nvme.power_on_hours == 51332400 // 3600


def test_sata_drives_get_their_sector_counts_and_no_nvme_zeros():
    """This exporter writes 0 for the NVMe gauges of SATA drives: not reported, so n/a."""
    (drives,) = drives_by_host(_answer(), host_of).values()
    sda = next(d for d in drives if d.device == "/dev/sda")
    assert (sda.reallocated_sectors_total, sda.pending_sectors, sda.offline_uncorrectable_sectors) == (0, 0, 0)
    assert sda.available_spare_percent is None and sda.critical_warning_mask is None
    assert sda.media_errors_total is None
    assert (sda.protocol, sda.type, sda.model) == ("ATA", "sat", "TOSHIBA MG07ACA12TE")


def test_drives_join_the_node_named_by_node_exporter_on_the_same_host():
    """The smartctl target is 10.0.0.7:9633, node_exporter's 10.0.0.7:9100 says gpu07."""
    uname = {"metric": {"__name__": "node_uname_info", "instance": "10.0.0.7:9100", "nodename": "gpu07",
                        "release": "6.1.0"}, "value": [1700000000.0, "1"]}
    fleet = build({"gpu": {"result": []}, "host": {"result": [uname]}, "rates": {"result": []}})
    fleet.set_drives(drives_by_host(_answer(), host_of))
    assert [d.device for d in fleet.sample("gpu07").drives] == [f"/dev/{n}" for n in ("nvme0", "sda", "sdb", "sdc", "sdd")]


def test_the_drive_query_reads_raw_attributes_only_with_the_match_inside():
    q = queries('{job="smart"}')[QUERY]
    assert 'attribute_value_type="raw"' in q and q.count('job="smart"') == 2
    assert "attribute_flags_long" not in q  # grouped away: the labels that churn stay in Prometheus


@pytest.fixture(scope="module")
def smart_lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("smartprom")
    smart = Endpoint(PAGE)
    node_exporter = prom = None
    try:
        node_exporter, node_addr = start_node_exporter(base)
        prom, url = start_prometheus(base / "prom", {"node": [node_addr], "smartctl": [smart.address]})
        wait_query(url, "irate(node_cpu_seconds_total[2m])", bool)
        wait_query(url, "smartctl_device_critical_warning", bool)
        yield url
    finally:
        if prom is not None:
            prom.stop()
        if node_exporter is not None:
            node_exporter.stop()
        smart.close()


@pytest.mark.oldest_python_only  # a real Prometheus: test_prometheus_e2e is the smoke
def test_snapshot_from_prometheus_shows_the_drive_and_its_critical_alert(smart_lab):
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "--json", "--seconds", "1.5", "--prometheus", smart_lab,
         "--interval", "0.5"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2, done.stderr + done.stdout
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["name"] == os.uname().nodename
    drives = {d["device"]: d for d in node["sample"]["drives"]}
    assert set(drives) == {"/dev/nvme0", "/dev/sda", "/dev/sdb", "/dev/sdc", "/dev/sdd"}
    assert drives["/dev/nvme0"]["critical_warnings"] == ["reliability_degraded"]
    alerts = {a["rule"]: a for a in node["alerts"]}
    assert alerts["drive_failing"]["severity"] == "critical"
    assert alerts["drive_failing"]["message"].startswith(
        "NVMe critical warning 0x04 (reliability_degraded) on /dev/nvme0 (PLEXTOR PX-256M9PY +, S/N P02050305257)"
    )
    assert "161 % of its rated endurance used" in alerts["drive_wear"]["message"]
