"""NvmlCollector against a fake NVML: the real pynvml with its functions serving the H100
capture (tests/fixtures/nvidia-smi/), repeated to 8 GPUs. No GPU on CI: NVML is faked, so
every test name says so."""

import os
import shutil
import subprocess
import time
import types
from pathlib import Path

import pynvml
import pytest

from dltui.node.probe import nvml
from dltui.node.probe.gpu_records import GPU_FACT_FIELDS, GPU_LOST
from dltui.node.probe.problems import Problems
from dltui.node.schema import GPU_FIELDS
from tests.fakes.fake_nvml import install_fake_nvml
from tests.unit.test_protocol import wrong_types

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "nvidia-smi"
H100 = FIXTURES / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
H100_MIG = FIXTURES / "h100-80gb-hbm3-mig_590.48.01_load_query-gpu-all.csv"
L40S = FIXTURES / "l40s_595.80_load_query-gpu-all.csv"
APPS = FIXTURES / "h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv"


class Clock:
    """Stands in for time.monotonic inside nvml.py, so refresh periods need no waiting."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(nvml, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    return clock


@pytest.fixture
def fake(monkeypatch):
    return install_fake_nvml(monkeypatch, H100, gpu_count=8, apps_path=APPS)


@pytest.fixture
def problems():
    return Problems()


def test_facts_of_eight_gpus_fake_nvml(fake, problems):
    collector = nvml.NvmlCollector(problems, 1.0)
    facts = collector.facts()
    assert facts["driver_version"] == "590.48.01"
    assert facts["cuda_version"] == "13.1"
    assert facts["nvml_version"] == "13.590.48.01"
    assert len(facts["gpus"]) == 8
    assert len({g["uuid"] for g in facts["gpus"]}) == 8
    assert facts["gpus"][3]["bus_id"] == "00000000:03:09.0"
    gpu = facts["gpus"][0]
    assert set(gpu) == set(GPU_FACT_FIELDS)
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["memory_total_mib"] == 81559
    assert gpu["compute_capability"] == "9.0"
    assert (gpu["persistence_mode"], gpu["ecc_enabled"], gpu["mig_enabled"]) == (True, True, False)
    assert (gpu["power_limit_w"], gpu["power_limit_min_w"], gpu["power_limit_max_w"]) == (
        700.0,
        200.0,
        700.0,
    )
    assert (gpu["pcie_max_gen"], gpu["pcie_max_width"], gpu["pcie_gpu_max_gen"]) == (5, 16, 5)
    assert gpu["thresholds_are_margin_offsets"] is None  # the capture holds no thresholds
    assert fake.init_calls == 1


def test_sample_values_equal_the_capture_fake_nvml(fake, problems):
    collector = nvml.NvmlCollector(problems, 1.0)
    records = collector.sample()
    assert [r["index"] for r in records] == list(range(8))
    for record in records:
        assert set(record) == set(GPU_FIELDS)
        assert wrong_types("gpu", record) == []  # what the operator's decoder accepts
        assert record["error"] is None
        assert record["utilization_percent"] == 100
        assert record["memory_utilization_percent"] == 11
        assert record["memory_used_mib"] == 19818
        assert record["memory_total_mib"] == 81559
        assert record["temperature_c"] == 59
        assert record["memory_temperature_c"] == 54
        assert record["temperature_margin_c"] == 26
        assert record["power_w"] == 632.0
        assert record["power_limit_w"] == 700.0
        assert (record["sm_clock_mhz"], record["memory_clock_mhz"]) == (1980, 2619)
        assert (record["sm_clock_max_mhz"], record["memory_clock_max_mhz"]) == (1980, 2619)
        assert record["pstate"] == 0
        assert record["clock_event_reasons_mask"] == 0 and record["clock_event_reasons"] == []
        assert record["clock_event_sw_power_cap_us"] == 0
        assert (record["pcie_gen"], record["pcie_width"]) == (5, 16)
        assert (record["pcie_max_gen"], record["pcie_max_width"]) == (5, 16)
        assert record["ecc_corrected_volatile"] == 0 and record["ecc_uncorrected_aggregate"] == 0
        assert record["remapped_rows_correctable"] == 0
        assert record["remapped_rows_pending"] is False and record["remapped_rows_failure"] is False
    assert [p["gpu_memory_mib"] for p in records[0]["processes"]] == [2296, 1272, 7484]
    assert records[1]["processes"] == []
    assert problems.drain() == []


def test_not_supported_is_none_never_zero_fake_nvml(fake, problems):
    records = nvml.NvmlCollector(problems, 1.0).sample()
    assert records[0]["fan_percent"] is None  # [N/A]: passive module, no fans
    assert records[0]["retired_pages_pending"] is None  # [N/A] on Hopper
    assert records[0]["pcie_replay_count"] is None  # not in any capture: NotSupported here
    assert records[0]["utilization_samples_percent"] == []
    assert records[0]["utilization_sample_period_ms"] is None


def test_mig_capture_hides_utilisation_fake_nvml(monkeypatch, problems):
    install_fake_nvml(monkeypatch, H100_MIG, gpu_count=1)
    collector = nvml.NvmlCollector(problems, 1.0)
    (record,) = collector.sample()
    assert record["utilization_percent"] is None
    assert record["remapped_rows_correctable"] is None
    assert record["memory_used_mib"] == 11125
    assert collector.facts()["gpus"][0]["mig_enabled"] is True


def test_lost_gpu_becomes_an_error_record_fake_nvml(fake, problems):
    collector = nvml.NvmlCollector(problems, 1.0)
    fake.lose(5)
    records = collector.sample()
    assert records[5]["error"] == GPU_LOST
    assert records[5]["uuid"] == "GPU-00000000-0000-0000-0000-000000000005"
    assert records[5]["name"] == "NVIDIA H100 80GB HBM3"
    assert records[5]["temperature_c"] is None and records[5]["power_w"] is None
    assert set(records[5]) == set(GPU_FIELDS)
    assert all(r["error"] is None for i, r in enumerate(records) if i != 5)
    assert collector.sample()[5]["error"] == GPU_LOST
    facts = collector.facts()
    assert facts["gpus"][5]["uuid"] == records[5]["uuid"]
    assert facts["gpus"][5]["memory_total_mib"] is None


def test_gpu_lost_before_the_probe_started_fake_nvml(fake, problems):
    fake.lose(2)
    records = nvml.NvmlCollector(problems, 1.0).sample()
    assert records[2]["error"] == GPU_LOST
    assert records[3]["error"] is None


def test_unexpected_nvml_error_is_none_and_reported_once_fake_nvml(fake, problems, monkeypatch):
    def unknown(handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)

    def unknown_too(handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetPowerUsage", unknown)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetPerformanceState", unknown_too)
    collector = nvml.NvmlCollector(problems, 1.0)
    assert collector.sample()[0]["power_w"] is None
    collector.sample()
    collector.sample()
    # two calls failing on every GPU and every tick: each reported once, not once per tick
    assert sorted(problems.drain()) == [("nvml unknown", "Unknown Error"), ("nvml unknown_too", "Unknown Error")]


def test_sub_second_utilisation_samples_fake_nvml(fake, problems):
    collector = nvml.NvmlCollector(problems, 1.0)
    fake.push_utilization(0, [100] * 30)  # 5 s of history at 6 Hz before the probe started
    fake.push_utilization(0, [100, 100, 0, 0, 100, 100])
    first = collector.sample()[0]
    assert first["utilization_samples_percent"] == [100, 100, 0, 0, 100, 100]  # the last second
    assert first["utilization_sample_period_ms"] == 166.7
    fake.push_utilization(0, [0, 0, 0, 100, 100, 100])
    second = collector.sample()[0]
    assert second["utilization_samples_percent"] == [0, 0, 0, 100, 100, 100]
    assert collector.sample()[0]["utilization_samples_percent"] == []  # nothing newer
    assert collector.sample()[0]["utilization_sample_period_ms"] == 166.7  # spacing is kept


def test_slow_values_are_read_every_ten_seconds_and_repeated_fake_nvml(fake, problems, clock):
    collector = nvml.NvmlCollector(problems, 1.0)
    assert collector.sample()[0]["ecc_corrected_volatile"] == 0
    fake.gpus[0].row["ecc.errors.corrected.volatile.total"] = "7"
    fake.gpus[0].row["temperature.gpu"] = "83"
    clock.now += 1.0
    record = collector.sample()[0]
    assert record["temperature_c"] == 83  # fast set: every tick
    assert record["ecc_corrected_volatile"] == 0  # slow set: repeated until the next read
    clock.now += nvml.SLOW_REFRESH_S
    assert collector.sample()[0]["ecc_corrected_volatile"] == 7


def test_clock_event_reasons_decoded_fake_nvml(monkeypatch, problems):
    # HW slowdown + HW thermal slowdown, as on gpud's 8x H100 "-q" capture.
    install_fake_nvml(
        monkeypatch,
        H100,
        gpu_count=2,
        overrides={1: {"clocks_event_reasons.active": "0x0000000000000048"}},
    )
    records = nvml.NvmlCollector(problems, 1.0).sample()
    assert records[1]["clock_event_reasons_mask"] == 0x48
    assert records[1]["clock_event_reasons"] == ["hw_slowdown", "hw_thermal_slowdown"]
    assert records[0]["clock_event_reasons"] == []


def test_thermal_counters_only_when_binding_matches_driver_branch_fake_nvml(monkeypatch, problems):
    install_fake_nvml(monkeypatch, L40S, gpu_count=1)
    monkeypatch.setattr(nvml, "binding_version", lambda: "13.615.71")  # driver is 595.80
    (record,) = nvml.NvmlCollector(problems, 1.0).sample()
    assert record["clock_event_sw_power_cap_us"] == 204642816  # same id in every binding
    assert record["clock_event_hw_thermal_us"] is None
    assert record["clock_event_hw_power_brake_us"] is None

    monkeypatch.setattr(nvml, "binding_version", lambda: "13.595.45")
    (record,) = nvml.NvmlCollector(problems, 1.0).sample()
    assert record["clock_event_sw_thermal_us"] == 0
    assert record["clock_event_hw_thermal_us"] == 0
    assert record["clock_event_hw_power_brake_us"] == 0


def test_branch_matching():
    assert nvml.same_branch("13.580.65", "580.65.06")
    assert not nvml.same_branch("13.615.71", "590.48.01")
    assert not nvml.same_branch(None, "590.48.01")


def test_process_names_are_what_nvidia_smi_prints_fake_nvml(fake, problems, tmp_path):
    """nvidia-smi names the H100 capture's burner ``./gpu_burn`` (argv[0]; its comm would be
    ``gpu_burn``): a real process started that way gets the same name through NVML."""
    apps = (FIXTURES / "h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv").read_text()
    assert ", ./gpu_burn, " in apps
    burner = tmp_path / "gpu_burn"
    shutil.copy("/bin/sleep", burner)
    proc = subprocess.Popen(["./gpu_burn", "30"], cwd=tmp_path)
    try:
        cmdline = Path("/proc/%d/cmdline" % proc.pid)
        deadline = time.monotonic() + 10
        while not cmdline.read_bytes().startswith(b"./gpu_burn\0"):  # until the exec is done
            assert time.monotonic() < deadline, cmdline.read_bytes()
            time.sleep(0.01)
        fake.gpus[2].processes = [(proc.pid, 512 * 1024 * 1024), (os.getpid(), 0)]
        records = nvml.NvmlCollector(problems, 1.0).sample()
    finally:
        proc.kill()
        proc.wait()
    with open("/proc/self/cmdline", "rb") as f:
        own = f.read().split(b"\0")[0].decode()
    assert records[2]["processes"] == [
        {"pid": proc.pid, "name": "./gpu_burn", "gpu_memory_mib": 512},
        {"pid": os.getpid(), "name": own, "gpu_memory_mib": 0},
    ]


def test_tlimit_thresholds_are_offsets_fake_nvml(fake, problems):
    # H100 offsets from the T.Limit margin; no CSV capture holds them.
    for gpu in fake.gpus:
        gpu.fields.update(
            {
                pynvml.NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT: -8,
                pynvml.NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT: -2,
                pynvml.NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT: 0,
            }
        )
    gpu = nvml.NvmlCollector(problems, 1.0).facts()["gpus"][0]
    assert gpu["thresholds_are_margin_offsets"] is True
    assert (gpu["temperature_shutdown_c"], gpu["temperature_slowdown_c"]) == (-8, -2)
    assert gpu["temperature_max_operating_c"] == 0
    assert gpu["memory_temperature_max_c"] is None


def test_init_once_and_shutdown_on_close_fake_nvml(fake, problems):
    collector = nvml.NvmlCollector(problems, 1.0)
    collector.facts()
    for _ in range(3):
        collector.sample()
    collector.close()
    assert (fake.init_calls, fake.shutdown_calls) == (1, 1)


def test_no_library_on_this_machine_is_unavailable_for_lack_of_a_driver(problems):
    """Real pynvml, real machine without a GPU: nvmlInit raises LibraryNotFound."""
    with pytest.raises(nvml.NvmlUnavailable) as caught:
        nvml.NvmlCollector(problems, 1.0)
    assert caught.value.no_driver is True
    assert str(caught.value) == "NVML Shared Library Not Found"
