"""``nvidia-smi -q`` text parses into GPU records and facts, on every real capture we have.

The default tables (``nvidia-smi`` without ``-q``) are a different format and never parsed.
"""

import hashlib
import re

import pytest

from dltui.node.probe.gpu_records import GPU_FACT_FIELDS
from dltui.node.schema import GPU_FIELDS
from dltui.node.probe.smi_text import parse
from tests.unit.rules_support import TEXT_CAPTURES, capture

CAPTURES = sorted(p.name for p in TEXT_CAPTURES.glob("*.txt"))


def test_every_q_capture_is_here_and_byte_identical_to_its_provenance():
    provenance = (TEXT_CAPTURES / "PROVENANCE.md").read_text(encoding="utf-8")
    listed = dict(re.findall(r"## `([^`]+)`\n(?:.*\n)*?- sha256: ([0-9a-f]{64})", provenance))
    assert sorted(listed) == CAPTURES == [
        "a10_535.129.03_q.txt",
        "h100-80gb-hbm3-x8_535.161.08_q_hw-slowdown-active.txt",
        "h100-80gb-hbm3_535.183.01_q_truncated-invalid-throttle.txt",
        "h200-mig_590.48.01_load_q.txt",
        "rtx-2080-super_610.57.04_load_q.txt",
        "rtx-4090-x8_535.154.05_q_unknown-error.txt",
        "titan-v_560.35.03_q.txt",
    ]
    for name, sha in listed.items():
        assert hashlib.sha256((TEXT_CAPTURES / name).read_bytes()).hexdigest() == sha, name


@pytest.mark.parametrize("name", CAPTURES)
def test_every_gpu_section_becomes_a_full_record_and_facts(name):
    text = (TEXT_CAPTURES / name).read_text(encoding="utf-8")
    facts, records = parse(text)
    sections = re.findall(r"^GPU ([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)$", text, re.M)
    assert len(records) == len(facts["gpus"]) == len(sections) >= 1
    for index, (record, gpu_facts, bus_id) in enumerate(zip(records, facts["gpus"], sections)):
        assert tuple(record) == GPU_FIELDS
        assert tuple(gpu_facts) == GPU_FACT_FIELDS
        assert record["index"] == gpu_facts["index"] == index
        assert gpu_facts["bus_id"] == bus_id
        assert record["name"] and record["name"] == gpu_facts["name"]
        assert record["error"] is None
    assert re.fullmatch(r"\d{3}\.\d+(\.\d+)?", facts["driver_version"])


def test_h100_with_hw_slowdown_active_on_all_eight_gpus():
    facts, records = capture("h100-80gb-hbm3-x8_535.161.08_q_hw-slowdown-active.txt")
    assert (facts["driver_version"], facts["cuda_version"]) == ("535.161.08", "12.2")
    assert [r["clock_event_reasons_mask"] for r in records] == [0x88] * 8
    assert records[0]["clock_event_reasons"] == ["hw_slowdown", "hw_power_brake_slowdown"]
    first = records[0]
    assert (first["temperature_c"], first["temperature_margin_c"], first["memory_temperature_c"]) == (29, 56, 39)
    assert (first["power_w"], first["power_limit_w"]) == (67.7, 700.0)
    assert (first["sm_clock_mhz"], first["sm_clock_max_mhz"], first["pstate"]) == (86, 1980, 0)
    assert (first["pcie_gen"], first["pcie_width"], first["pcie_max_gen"], first["pcie_max_width"]) == (5, 16, 5, 16)
    assert first["pcie_replay_count"] == 67
    assert (first["ecc_corrected_volatile"], first["ecc_uncorrected_aggregate"]) == (0, 0)
    assert (first["remapped_rows_pending"], first["remapped_rows_failure"]) == (False, False)
    assert first["retired_pages_pending"] is None  # "N/A" on Hopper: remapping replaced retirement
    assert first["fan_percent"] is None and first["processes"] == []
    gpu0 = facts["gpus"][0]
    assert gpu0["bus_id"] == "00000000:19:00.0"
    assert gpu0["thresholds_are_margin_offsets"] is True
    assert (gpu0["temperature_shutdown_c"], gpu0["temperature_slowdown_c"], gpu0["temperature_max_operating_c"]) == (-8, -2, 0)
    assert (gpu0["pcie_gpu_max_gen"], gpu0["pcie_host_max_gen"], gpu0["persistence_mode"], gpu0["mig_enabled"]) == (5, 5, True, False)


def test_damaged_throttle_keys_lose_the_mask_not_the_gpu():
    """535.183.01 printed ``Invalid HW Slowdown`` keys: those bits are unknown, so the mask is
    None rather than a mask claiming they are clear; everything else is read."""
    facts, records = capture("h100-80gb-hbm3_535.183.01_q_truncated-invalid-throttle.txt")
    (record,) = records  # "Attached GPUs : 8", but the capture was cut after the first
    assert record["clock_event_reasons_mask"] is None and record["clock_event_reasons"] is None
    assert record["name"] == "NVIDIA H100 80GB HBM3"
    assert record["uuid"] == "GPU-566e6f65-c38e-b12f-4824-6944218668b9"
    assert (record["pstate"], record["pcie_replay_count"]) == (0, 120)
    assert record["temperature_c"] is None  # cut before the Temperature section
    assert facts["gpus"][0]["pcie_host_max_gen"] is None  # "Host Max : N/A"


def test_r590_mig_h200_with_average_power_and_counters_at_column_55():
    facts, (record,) = capture("h200-mig_590.48.01_load_q.txt")
    assert record["utilization_percent"] is None  # N/A with MIG enabled
    assert record["power_w"] == 294.9  # "Average Power Draw"
    assert (record["memory_used_mib"], record["memory_total_mib"]) == (16959, 143771)
    assert record["temperature_margin_c"] == 46
    assert record["clock_event_reasons_mask"] == 0
    assert record["clock_event_hw_power_brake_us"] == 0
    assert [p["pid"] for p in record["processes"]] == [12249, 12250, 12267]
    assert record["processes"][2] == {"pid": 12267, "name": "./gpu_burn", "gpu_memory_mib": 13526}
    assert facts["gpus"][0]["mig_enabled"] is True


def test_r610_deprecated_driver_suffix_nested_power_limit_and_graphics_processes_left_out():
    facts, (record,) = capture("rtx-2080-super_610.57.04_load_q.txt")
    assert (facts["driver_version"], facts["cuda_version"]) == ("610.57.04", "13.3")
    assert record["power_w"] == 97.8  # the average is N/A: the instantaneous reading
    assert record["power_limit_w"] == 250.0  # under "GPU Ceiling Power Limit" since R610
    assert record["clock_event_sw_power_cap_us"] == 15820333506
    assert record["fan_percent"] == 38 and record["temperature_margin_c"] is None
    assert [p["name"] for p in record["processes"]] == ["ffmpeg", "ffmpeg"]  # type C only
    assert record["ecc_corrected_volatile"] is None  # GeForce: N/A everywhere
    gpu = facts["gpus"][0]
    assert gpu["thresholds_are_margin_offsets"] is False
    assert (gpu["temperature_shutdown_c"], gpu["temperature_slowdown_c"], gpu["temperature_max_operating_c"]) == (100, 97, 89)
    assert (gpu["pcie_gpu_max_gen"], gpu["pcie_host_max_gen"], gpu["persistence_mode"]) == (3, 4, False)
    assert gpu["power_limit_max_w"] == 350.0


def test_rtx_4090_unknown_error_values_do_not_hurt_and_each_gpu_has_a_margin():
    facts, records = capture("rtx-4090-x8_535.154.05_q_unknown-error.txt")
    assert len(records) == 8
    assert all(r["temperature_margin_c"] is not None for r in records)
    assert records[0]["processes"] == [{"pid": 2180559, "name": "/opt/conda/bin/python", "gpu_memory_mib": 22072}]
    assert records[0]["pcie_gen"] == 1 and records[0]["pstate"] == 8  # trained down at idle
    assert facts["gpus"][0]["temperature_shutdown_c"] == -7


def test_volta_single_and_double_bit_ecc_layout_and_absolute_memory_limit():
    facts, (record,) = capture("titan-v_560.35.03_q.txt")
    assert record["ecc_corrected_volatile"] is None and record["ecc_uncorrected_aggregate"] is None
    assert record["memory_temperature_c"] == 41 and record["temperature_margin_c"] is None
    gpu = facts["gpus"][0]
    assert (gpu["memory_temperature_max_c"], gpu["thresholds_are_margin_offsets"]) == (95, False)


def test_a10_pending_row_remap():
    facts, (record,) = capture("a10_535.129.03_q.txt")
    assert (record["remapped_rows_pending"], record["remapped_rows_uncorrectable"], record["remapped_rows_failure"]) == (True, 4, False)
    assert (record["ecc_corrected_volatile"], record["ecc_uncorrected_volatile"]) == (0, 0)
    assert record["clock_event_reasons"] == ["gpu_idle"]
    assert facts["gpus"][0]["ecc_enabled"] is True


def test_the_pre_r535_throttle_section_name_reads_the_same():
    """Drivers before R535 say ``Clocks Throttle Reasons``: the same text under that name gives
    the same masks."""
    text = (TEXT_CAPTURES / "h100-80gb-hbm3-x8_535.161.08_q_hw-slowdown-active.txt").read_text(encoding="utf-8")
    _, new = parse(text)
    _, old = parse(text.replace("Clocks Event Reasons", "Clocks Throttle Reasons"))
    assert [r["clock_event_reasons_mask"] for r in old] == [r["clock_event_reasons_mask"] for r in new]
