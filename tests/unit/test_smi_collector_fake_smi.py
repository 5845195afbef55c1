"""SmiCollector against tests/fakes/nvidia-smi (a script answering from the real H100 capture,
repeated to 8 GPUs), found through PATH as on a node. No GPU on CI: nvidia-smi is faked, so
every test name says so. Waits poll for an outcome; nothing asserts on time."""

import json
import os
import shutil
import time
from pathlib import Path

import psutil
import pytest

from dltui.node.probe.gpu_records import GPU_LOST
from dltui.node.probe.problems import Problems
from dltui.node.probe import smi as smi_module
from dltui.node.probe.smi import SmiCollector
from tests.unit.test_protocol import wrong_types

REPO = Path(__file__).resolve().parents[2]
FAKES = REPO / "tests" / "fakes"
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi"
APPS = FIXTURES / "h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv"
INTERVAL_S = 0.05
LOST = "GPU 0000:00:09.0 is lost (fell off the bus?): reboot to recover it"


@pytest.fixture
def smi_log(monkeypatch, tmp_path):
    """The fake first on PATH, 8 GPUs, every invocation logged."""
    monkeypatch.setenv("PATH", "%s%s%s" % (FAKES, os.pathsep, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_SMI_GPU_COUNT", "8")
    log = tmp_path / "nvidia-smi.log"
    monkeypatch.setenv("FAKE_SMI_LOG", str(log))
    for name in (
        "FAKE_SMI_CAPTURE",
        "FAKE_SMI_SCENARIO",
        "FAKE_SMI_APPS",
        "FAKE_SMI_XML",
        "FAKE_SMI_FAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    return log


@pytest.fixture
def collectors():
    made = []

    def make(problems, binary=None):
        collector = SmiCollector(problems, INTERVAL_S, binary or shutil.which("nvidia-smi"))
        made.append(collector)
        return collector

    yield make
    for collector in made:
        collector.close()


def sample_until(collector, predicate, timeout_s=30.0):
    """Sample until ``predicate(records)`` holds; fail with the last records if it never does."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = collector.sample()
        if predicate(records):
            return records
        if time.monotonic() > deadline:
            raise AssertionError("never happened; last records: %r" % (records,))
        time.sleep(INTERVAL_S / 2)


def invocations(log):
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def loop_processes():
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "-lms" in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def write_scenario(monkeypatch, tmp_path, lines):
    path = tmp_path / "scenario.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("FAKE_SMI_SCENARIO", str(path))


def test_samples_come_from_one_long_lived_loop_fake_smi(smi_log, collectors):
    problems = Problems()
    collector = collectors(problems)
    facts = collector.facts()
    assert facts["driver_version"] == "590.48.01"
    assert [g["bus_id"] for g in facts["gpus"]][:2] == ["00000000:00:09.0", "00000000:01:09.0"]
    assert facts["gpus"][0]["compute_capability"] == "9.0"
    records = sample_until(collector, lambda r: len(r) == 8)
    for _ in range(10):
        records = collector.sample()
        time.sleep(INTERVAL_S)
    assert [r["index"] for r in records] == list(range(8))
    for record in records:
        assert wrong_types("gpu", record) == []  # what the operator's decoder accepts
        assert record["error"] is None
        assert record["power_w"] == 632.0
        assert record["memory_used_mib"] == 19818
        assert record["utilization_percent"] == 100
        assert (record["pcie_gen"], record["pcie_width"]) == (5, 16)
        assert record["temperature_margin_c"] == 26
    assert records[7]["uuid"] == "GPU-00000000-0000-0000-0000-000000000007"

    assert len(loop_processes()) == 1
    calls = invocations(smi_log)
    assert sum("-lms" in call for call in calls) == 1  # one loop for all those samples
    assert sum(call == "--help-query-gpu" for call in calls) == 1
    assert sum(call == "-q -x" for call in calls) == 1  # facts: once, not per tick
    assert sum(call.startswith("--query-gpu=") and "-lms" not in call for call in calls) == 1
    assert problems.drain() == []
    collector.close()
    assert loop_processes() == []


def test_a_hot_throttled_gpu_from_a_scenario_fake_smi(smi_log, collectors, monkeypatch, tmp_path):
    hot = json.dumps(
        {
            "gpus": {
                "3": {
                    "temperature.gpu": "91",
                    "clocks_event_reasons.active": "0x0000000000000020",
                    "clocks_event_reasons_counters.sw_thermal_slowdown": "1500000 us",
                }
            }
        }
    )
    write_scenario(monkeypatch, tmp_path, ["{}", "{}", hot])
    collector = collectors(Problems())
    records = sample_until(collector, lambda r: len(r) == 8 and r[3]["temperature_c"] == 91)
    assert records[3]["clock_event_reasons"] == ["sw_thermal_slowdown"]
    assert records[3]["clock_event_sw_thermal_us"] == 1500000
    assert records[2]["temperature_c"] == 59
    assert records[2]["clock_event_reasons"] == []


def test_processes_from_compute_apps_fake_smi(smi_log, collectors, monkeypatch):
    monkeypatch.setenv("FAKE_SMI_APPS", str(APPS))
    collector = collectors(Problems())
    records = sample_until(collector, lambda r: len(r) == 8 and r[0]["processes"])
    assert records[0]["processes"] == [
        {"pid": 21180, "name": "/root/tools/memhog", "gpu_memory_mib": 2296},
        {"pid": 21181, "name": "/root/tools/memhog", "gpu_memory_mib": 1272},
        {"pid": 21198, "name": "./gpu_burn", "gpu_memory_mib": 7484},
    ]
    assert records[1]["processes"] == []
    assert any(
        call.startswith("--query-compute-apps=")
        and call.endswith("process_name --format=csv,noheader,nounits")
        for call in invocations(smi_log)
    )


def test_thresholds_and_cuda_version_come_from_one_xml_read_fake_smi(
    smi_log, collectors, monkeypatch
):
    """The XML capture is another card than the CSV's: nothing is merged by a wrong UUID, and
    the node-level CUDA version is taken."""
    monkeypatch.setenv("FAKE_SMI_XML", str(FIXTURES / "tesla-t4_515.105.01.xml"))
    collector = collectors(Problems())
    facts = collector.facts()
    assert facts["cuda_version"] == "11.7"
    assert facts["gpus"][0]["temperature_shutdown_c"] is None
    collector.facts()
    assert sum(call == "-q -x" for call in invocations(smi_log)) == 1


@pytest.mark.parametrize(
    "failure, reason",
    [
        ("9", "nvidia-smi couldn't communicate with the NVIDIA driver: is the driver loaded?"),
        (
            "12",
            "nvidia-smi couldn't find the NVML library (libnvidia-ml.so): driver install broken?",
        ),
        ("15", LOST),
        (
            "mismatch",
            "NVIDIA driver/library version mismatch (driver updated without a reboot?): "
            "reboot or reload the nvidia kernel modules",
        ),
    ],
)
def test_failure_modes_give_a_plain_reason_fake_smi(
    smi_log, collectors, monkeypatch, failure, reason
):
    monkeypatch.setenv("FAKE_SMI_FAIL", failure)
    problems = Problems()
    collector = collectors(problems)
    assert collector.facts()["gpus"] == []
    assert collector.sample() == []
    assert collector.sample() == []
    assert problems.drain() == [("nvidia-smi", reason)]


def test_absent_binary_gives_a_plain_reason_fake_smi(collectors, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    problems = Problems()
    collector = collectors(problems, binary="nvidia-smi")
    assert collector.facts()["gpus"] == []
    assert collector.sample() == []
    assert problems.drain() == [("nvidia-smi", "nvidia-smi could not run: nvidia-smi not found")]


def test_loop_that_dies_is_restarted_and_reported_once_fake_smi(
    smi_log, collectors, monkeypatch, tmp_path
):
    # Half a second of rows, then the GPU falls off the bus: every restart replays this.
    write_scenario(monkeypatch, tmp_path, ["{}"] * 10 + ['{"fail": "15"}'])
    problems = Problems()
    collector = collectors(problems)
    collector.facts()
    lost = sample_until(collector, lambda r: len(r) == 8 and r[0]["error"] is not None)
    assert lost[0]["error"] == GPU_LOST  # the GPU the message names
    assert lost[0]["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert lost[1]["error"] == LOST  # the others: no data, and why
    assert lost[1]["temperature_c"] is None
    sample_until(collector, lambda r: len(r) == 8 and r[0]["error"] is None)  # restarted
    sample_until(collector, lambda r: len(r) == 8 and r[0]["error"] is not None)  # died again
    assert problems.drain() == [("nvidia-smi", LOST)]
    assert sum("-lms" in call for call in invocations(smi_log)) >= 2


def test_a_silent_loop_is_reported_and_only_the_first_sample_waits_for_it_fake_smi(
    smi_log, collectors, monkeypatch, tmp_path
):
    """A wedged driver keeps nvidia-smi alive and silent: the GPUs get a plain error and the
    host part of every later sample must not wait for rows that never come."""
    from dltui.node.probe import smi

    scenario = tmp_path / "hang.jsonl"
    scenario.write_text('{"hang": true}\n')
    monkeypatch.setenv("FAKE_SMI_SCENARIO", str(scenario))
    monkeypatch.setattr(smi, "FIRST_ROWS_WAIT_S", 0.5)
    problems = Problems()
    collector = collectors(problems)
    gpus = collector.facts()["gpus"]
    waits = []
    latest = collector.loop.latest
    monkeypatch.setattr(collector.loop, "latest", lambda wait_s: waits.append(wait_s) or latest(wait_s))
    first, second = collector.sample(), collector.sample()
    reason = "nvidia-smi is running but has printed nothing (a hung driver?)"
    assert waits == [0.5, 0]
    assert [r["error"] for r in second] == [reason] * len(gpus) == [r["error"] for r in first]
    assert problems.drain() == [("nvidia-smi", reason)]


# An R470-era driver's --query-gpu set: no clocks_event_reasons* (R535), no counters, no
# temperature.memory / temperature.gpu.tlimit, no pcie.link.gen.gpucurrent (R590).
OLD_DRIVER_FIELDS = (
    "timestamp,driver_version,count,name,serial,uuid,pci.bus_id,index,fan.speed,pstate,"
    "memory.used,memory.free,memory.total,utilization.gpu,utilization.memory,temperature.gpu,"
    "power.draw,enforced.power.limit,power.default_limit,power.min_limit,power.max_limit,"
    "clocks.current.graphics,clocks.current.sm,clocks.current.memory,clocks.current.video,"
    "clocks.max.sm,clocks.max.memory,clocks_throttle_reasons.active,pcie.link.gen.current,"
    "pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max,persistence_mode,"
    "ecc.mode.current,vbios_version"
)


@pytest.mark.parametrize("help_mode", ["lists-newer-names", "fail"])
def test_an_old_driver_refusing_newer_fields_still_reports_every_accepted_one_fake_smi(
    smi_log, collectors, monkeypatch, tmp_path, help_mode
):
    """The help may name more than the query accepts, or be unreadable: refused names are
    dropped (or asked by their older name), retried and remembered."""
    monkeypatch.setenv("FAKE_SMI_ACCEPT", OLD_DRIVER_FIELDS)
    # Learning takes one nvidia-smi start per refused field; on a loaded test machine that can
    # outlast the first sample's wait, which is about hung drivers, not this test.
    monkeypatch.setattr(smi_module, "FIRST_ROWS_WAIT_S", 60.0)
    if help_mode == "fail":
        monkeypatch.setenv("FAKE_SMI_HELP", "fail")
    hot = json.dumps({"clocks_event_reasons.active": "0x0000000000000020"})
    write_scenario(monkeypatch, tmp_path, [hot])
    problems = Problems()
    collector = collectors(problems)
    facts = collector.facts()
    assert [g["index"] for g in facts["gpus"]] == list(range(8))
    assert facts["driver_version"] == "590.48.01"
    assert facts["gpus"][0]["bus_id"] == "00000000:00:09.0"
    assert facts["gpus"][0]["compute_capability"] is None  # compute_cap: not on this driver
    assert facts["gpus"][0]["pcie_max_gen"] == 5
    records = sample_until(collector, lambda r: len(r) == 8 and r[0]["error"] is None)
    record = records[0]
    assert (record["power_w"], record["memory_used_mib"], record["utilization_percent"]) == (
        632.0,
        19818,
        100,
    )
    assert record["sm_clock_mhz"] == 1980
    assert (record["pcie_gen"], record["pcie_width"]) == (5, 16)  # pcie.link.gen.current
    assert record["clock_event_reasons"] == ["sw_thermal_slowdown"]  # the throttle name
    assert record["memory_temperature_c"] is None  # refused: n/a, not a failure
    assert record["temperature_margin_c"] is None
    assert record["clock_event_sw_thermal_us"] is None
    assert problems.drain() == []
    loops = [call for call in invocations(smi_log) if "-lms" in call]
    assert "clocks_throttle_reasons.active" in loops[-1]
    assert "clocks_event_reasons" not in loops[-1]
    # Remembered: after the collector learnt the set, facts are asked once, not relearnt.
    def fact_queries():
        calls = invocations(smi_log)
        return [c for c in calls if c.startswith("--query-gpu=") and "-lms" not in c]

    before = fact_queries()
    collector.facts()
    assert fact_queries() == before + [before[-1]]
