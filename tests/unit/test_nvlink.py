"""NVLink per GPU: the ``nvidia-smi nvlink -s`` / ``-e`` parsers on real captures (Azure's
A100 outputs; the ``-e`` file is derived, see its PROVENANCE), the NVML reader against the fake
NVML serving those captures, and the nvidia-smi fallback against the fake nvidia-smi."""

import os
import time
import types
from pathlib import Path

import pytest

from dltui.node.probe import nvlink
from dltui.node.probe.collect import Collector
from dltui.node.probe.nvlink_smi import SmiNvlink, parse_errors, parse_status
from dltui.node.probe.problems import Problems
from dltui.node.schema import NVLINK_FIELDS
from tests.fakes.fake_nvml import install_fake_nvml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NVLINK = FIXTURES / "nvidia-smi-nvlink"
STATUS = NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s.txt"
ALL_INACTIVE = NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s_all-inactive.txt"
ERRORS = NVLINK / "derived_a100-sxm4-80gb_nvlink-e.txt"
H100 = FIXTURES / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
FAKE_SMI = Path(__file__).resolve().parents[1] / "fakes" / "nvidia-smi"


def test_status_capture_twelve_links_at_25_gb_s():
    status = parse_status(STATUS.read_text())
    assert list(status) == [7]  # the capture is GPU 7 of its node
    assert status[7]["links_up"] == [True] * 12
    assert status[7]["link_speeds_gbytes_per_s"] == [25.0] * 12
    assert status[7]["links_total"] == 12


def test_all_inactive_capture_reads_as_no_active_link_of_an_unknown_count():
    assert parse_status(ALL_INACTIVE.read_text()) == {
        6: {"links_up": [], "link_speeds_gbytes_per_s": [], "links_total": None}
    }


def test_inactive_links_and_hopper_speeds():
    """The capture with its link 3 as ``<inactive>`` and its speeds as Hopper prints them."""
    text = STATUS.read_text().replace("25 GB/s", "26.562 GB/s").replace("Link 3: 26.562 GB/s", "Link 3: <inactive>")
    links = parse_status(text)[7]
    assert links["links_up"][3] is False and links["link_speeds_gbytes_per_s"][3] is None
    assert links["link_speeds_gbytes_per_s"][0] == 26.562


def test_errors_capture_sums_each_kind_over_the_links():
    text = ERRORS.read_text().replace("Link 5: CRC Errors: 0", "Link 5: CRC Errors: 9")
    assert parse_errors(text) == {7: {"replay_errors_total": 0, "recovery_errors_total": 0, "crc_errors_total": 9}}


def test_errors_of_older_drivers_count_flit_and_data_crc_together():
    """Drivers before R450 split CRC errors in two lines; built from the derived capture."""
    text = ERRORS.read_text().replace("CRC Errors: 0", "CRC Flit Errors: 2\n\t Link 0: CRC Data Errors: 1", 1)
    assert parse_errors(text)[7]["crc_errors_total"] == 3


class Clock:
    def __init__(self):
        self.now = 500.0

    def monotonic(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(nvlink, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    return clock


def test_a_pcie_gpu_has_no_nvlink_record_and_no_problem_fake_nvml(monkeypatch):
    install_fake_nvml(monkeypatch, H100, gpu_count=2)  # the capture holds no NVLink: NOT_SUPPORTED
    problems = Problems()
    collector = Collector(1.0, problems)
    try:
        assert collector.sample()["nvlinks"] == []
    finally:
        collector.close()
    assert problems.drain() == []


def test_links_speeds_and_errors_from_nvml_fake_nvml(monkeypatch, clock):
    fake = install_fake_nvml(monkeypatch, H100, gpu_count=8)
    fake.nvlink_from_smi(STATUS.read_text(), ERRORS.read_text())
    collector = Collector(1.0, Problems())
    try:
        records = collector.sample()["nvlinks"]
        assert [r["gpu"] for r in records] == list(range(8))
        first = records[0]
        assert set(first) == set(NVLINK_FIELDS)
        assert (first["links_active"], first["links_total"]) == (12, 12)
        assert first["link_speeds_gbytes_per_s"] == [25.0] * 12
        assert (first["crc_errors_total"], first["replay_errors_total"], first["recovery_errors_total"]) == (0, 0, 0)
        fake.gpus[3].nvlink["up"][4] = False  # link 4 of GPU 3 goes down
        fake.gpus[3].nvlink["errors"][fake_counter("REPLAY")][4] += 40
        clock.now += 1.0
        unchanged = collector.sample()["nvlinks"][3]  # between refreshes: the last reading
        assert (unchanged["links_active"], unchanged["replay_errors_total"]) == (12, 0)
        clock.now += max(nvlink.STATE_REFRESH_S, nvlink.ERROR_REFRESH_S)
        gpu3 = collector.sample()["nvlinks"][3]
        assert gpu3["links_active"] == 11 and gpu3["links_up"][4] is False
        assert gpu3["link_speeds_gbytes_per_s"][4] is None
        assert gpu3["replay_errors_total"] == 40
    finally:
        collector.close()


def fake_counter(kind):
    import pynvml

    return getattr(pynvml, "NVML_NVLINK_ERROR_DL_" + kind)


def test_per_link_error_counters_where_the_totals_are_not_reported_fake_nvml(monkeypatch, clock):
    fake = install_fake_nvml(monkeypatch, H100, gpu_count=2)
    fake.nvlink_from_smi(STATUS.read_text(), ERRORS.read_text())
    fake.nvlink_totals = False
    fake.gpus[1].nvlink["errors"][fake_counter("CRC_FLIT")][2] = 5
    fake.gpus[1].nvlink["errors"][fake_counter("CRC_DATA")][7] = 1
    collector = Collector(1.0, Problems())
    try:
        assert collector.sample()["nvlinks"][1]["crc_errors_total"] == 6
    finally:
        collector.close()


def test_a_lost_gpu_drops_its_nvlink_record_fake_nvml(monkeypatch, clock):
    fake = install_fake_nvml(monkeypatch, H100, gpu_count=2)
    fake.nvlink_from_smi(STATUS.read_text(), ERRORS.read_text())
    collector = Collector(1.0, Problems())
    try:
        collector.sample()
        fake.lose(1)
        clock.now += nvlink.ERROR_REFRESH_S
        sample = collector.sample()
        assert [r["gpu"] for r in sample["nvlinks"]] == [0]
        assert sample["gpus"][1]["error"]  # the GPU record says why
    finally:
        collector.close()


def wait_for(poller, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while poller.has_nvlink is None or (poller.has_nvlink and not poller.latest):
        if time.monotonic() > deadline:
            raise AssertionError("the nvidia-smi nvlink poller gave no answer")
        time.sleep(0.02)


def test_nvidia_smi_fallback_reads_the_captures_fake_smi(monkeypatch):
    monkeypatch.setenv("FAKE_SMI_NVLINK_STATUS", str(STATUS))
    monkeypatch.setenv("FAKE_SMI_NVLINK_ERRORS", str(ERRORS))
    poller = SmiNvlink(str(FAKE_SMI), Problems(), first_delay_s=0)
    try:
        wait_for(poller)
        (record,) = poller.sample()
        assert (record["gpu"], record["links_active"], record["replay_errors_total"]) == (7, 12, 0)
    finally:
        poller.close()


def test_nvidia_smi_without_nvlink_stops_asking_fake_smi(monkeypatch, tmp_path):
    log = tmp_path / "calls"
    monkeypatch.setenv("FAKE_SMI_LOG", str(log))
    monkeypatch.delenv("FAKE_SMI_NVLINK_STATUS", raising=False)
    poller = SmiNvlink(str(FAKE_SMI), Problems(), refresh_s=0.01, first_delay_s=0)
    try:
        wait_for(poller)
        poller._thread.join(timeout=10)
        assert poller.has_nvlink is False and poller.sample() == []
        assert not poller._thread.is_alive()
        assert log.read_text().splitlines() == ["nvlink -s"]  # asked once, never -e
    finally:
        poller.close()


def test_the_fake_nvidia_smi_is_executable():
    assert os.access(FAKE_SMI, os.X_OK)
