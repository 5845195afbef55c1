"""``nvidia-smi -q -x`` parsing against every real capture we have (DTD v11, v12, v13).

MIT-licensed captures are copied in ``tests/fixtures/nvidia-smi/``; the GPL-3.0 ones are read
from ``../shared/fixtures/real/`` beside the repo.
"""

from pathlib import Path

import pytest

from dltui.probe.gpu import GPU_FACT_FIELDS
from dltui.probe.schema import GPU_FIELDS
from dltui.probe.smi_xml import parse_smi_xml

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi"
SHARED_XML = REPO.parent / "shared" / "fixtures" / "real" / "nvidia-smi-xml"


def parse(name, shared=False):
    folder = SHARED_XML if shared else FIXTURES
    return parse_smi_xml((folder / name).read_bytes())


def test_copies_are_byte_identical_to_the_shared_captures():
    copied = sorted(p for p in FIXTURES.iterdir() if p.suffix == ".xml")
    assert len(copied) == 7
    for path in copied:
        assert path.read_bytes() == (SHARED_XML / path.name).read_bytes(), path.name


@pytest.mark.parametrize("path", sorted(SHARED_XML.glob("*.xml")), ids=lambda p: p.name)
def test_every_capture_parses_into_complete_records(path):
    facts, records = parse_smi_xml(path.read_bytes())
    assert facts["driver_version"] and facts["cuda_version"]
    assert len(facts["gpus"]) == len(records) >= 1
    for gpu, record in zip(facts["gpus"], records):
        assert set(gpu) == set(GPU_FACT_FIELDS)
        assert set(record) == set(GPU_FIELDS)
        assert gpu["uuid"].startswith("GPU-") and record["uuid"] == gpu["uuid"]
        assert record["memory_total_mib"] > 0


def test_pascal_aggregate_single_bit_ecc_shows():
    """netdata's Tesla P100 (GPL-3.0): DTD v11, TAB indent, single_bit/double_bit layout."""
    facts, (record,) = parse("tesla-p100-pcie-16gb_510.47.03.xml", shared=True)
    assert record["ecc_corrected_aggregate"] == 3
    assert record["ecc_uncorrected_aggregate"] == 0
    assert record["ecc_corrected_volatile"] == 0
    assert record["retired_pages_pending"] is False
    assert record["clock_event_reasons"] == ["gpu_idle"]  # old clocks_throttle_reasons block
    assert record["power_w"] == 26.2
    gpu = facts["gpus"][0]
    assert (gpu["temperature_shutdown_c"], gpu["temperature_slowdown_c"]) == (85, 82)
    assert gpu["temperature_max_operating_c"] is None
    assert gpu["thresholds_are_margin_offsets"] is False
    assert facts["driver_version"] == "510.47.03" and facts["cuda_version"] == "11.6"


def test_tlimit_gpu_gives_offsets_from_the_margin():
    """netdata's RTX 4090 (GPL-3.0): DTD v12, gpu_power_readings, *_tlimit_threshold."""
    facts, (record,) = parse("rtx-4090_535.86.05.xml", shared=True)
    gpu = facts["gpus"][0]
    assert gpu["thresholds_are_margin_offsets"] is True
    assert (gpu["temperature_shutdown_c"], gpu["temperature_slowdown_c"]) == (-7, -2)
    assert gpu["temperature_max_operating_c"] == 0
    assert record["temperature_margin_c"] == 43
    assert record["temperature_c"] == 40
    assert (gpu["pcie_gpu_max_gen"], gpu["pcie_host_max_gen"], gpu["pcie_max_gen"]) == (4, 3, 3)
    assert record["power_limit_w"] == 450.0  # current_power_limit in v12
    assert record["remapped_rows_failure"] is False


def test_blackwell_v13_offsets_and_slot_limited_link():
    facts, (record,) = parse("rtx-pro-6000-blackwell-maxq_590.44.01.xml")
    gpu = facts["gpus"][0]
    assert (gpu["temperature_shutdown_c"], gpu["temperature_slowdown_c"]) == (-5, -2)
    assert (gpu["pcie_gpu_max_gen"], gpu["pcie_host_max_gen"]) == (5, 4)
    assert record["temperature_margin_c"] == 68
    assert record["clock_event_sw_power_cap_us"] == 25483012608
    assert record["processes"] == [
        {
            "pid": 116860,
            "name": "/root/src/llama.cpp/build/bin/llama-server",
            "gpu_memory_mib": 65710,
        }
    ]


def test_a100_mig_v12_with_hbm():
    """One <gpu> with four MIG devices (attached_gpus says 4: telegraf kept one GPU)."""
    facts, records = parse("a100-sxm4-80gb-mig_535.54.03.xml")
    assert len(records) == 1
    gpu = facts["gpus"][0]
    assert gpu["mig_enabled"] is True
    assert (gpu["temperature_shutdown_c"], gpu["temperature_slowdown_c"]) == (92, 89)
    assert (gpu["temperature_max_operating_c"], gpu["memory_temperature_max_c"]) == (85, 95)
    assert gpu["thresholds_are_margin_offsets"] is False
    assert records[0]["memory_temperature_c"] == 44
    assert records[0]["utilization_percent"] is None  # N/A with MIG
    assert records[0]["ecc_corrected_volatile"] == 0  # sram + dram


def test_a100_mig_v11_old_element_names():
    """netdata's A100 40GB (GPL-3.0): power_readings with enforced_power_limit."""
    facts, (record,) = parse("a100-sxm4-40gb-mig_510.47.03.xml", shared=True)
    assert facts["gpus"][0]["power_limit_w"] == 400.0
    assert record["power_w"] == 66.9
    assert record["ecc_corrected_volatile"] is None  # N/A while MIG instances exist
    assert record["ecc_corrected_aggregate"] == 0
    assert record["remapped_rows_pending"] is None  # <remapped_rows>N/A</remapped_rows>


def test_v13_average_power_and_new_ecc_names():
    facts, (record,) = parse("rtx-3080_595.58.03.xml")
    assert facts["cuda_version"] == "13.2"
    assert record["power_w"] == 139.6
    assert record["power_limit_w"] == 320.0
    assert record["ecc_corrected_volatile"] is None  # GeForce
    assert record["pstate"] == 2


def test_two_gpus_in_one_document():
    facts, records = parse("rtx-a5000-x2_590.44.01.xml")
    assert [g["index"] for g in facts["gpus"]] == [0, 1]
    assert records[0]["processes"][0]["gpu_memory_mib"] == 22430
    assert records[0]["clock_event_sw_power_cap_us"] == 31637354094


def test_no_doctype_prerelease_board():
    facts, (record,) = parse("gtx-1660-ti-prerelease_418.43_no-doctype.xml")
    assert facts["gpus"][0]["name"] == "Graphics Device"
    assert record["clock_event_reasons"] == ["gpu_idle"]
    assert (record["pcie_gen"], record["pcie_max_gen"]) == (1, 3)


def test_vgpu_guest_has_processes_but_no_power():
    facts, (record,) = parse("grid-p4-1q-vgpu_513.46.xml")
    assert facts["gpus"][0]["name"] == "GRID P4-1Q"
    assert record["power_w"] is None
    assert len(record["processes"]) == 13
    assert all(p["gpu_memory_mib"] is None for p in record["processes"])


def test_tesla_t4_processes_and_half_width_link():
    facts, (record,) = parse("tesla-t4_515.105.01.xml")
    assert record["processes"][0] == {
        "pid": 675,
        "name": "/usr/lib/xorg/Xorg",
        "gpu_memory_mib": 22,
    }
    assert (record["pcie_width"], record["pcie_max_width"]) == (8, 16)


def test_windows_wddm_document():
    """netdata's RTX 2080 on Windows (GPL-3.0): 26 processes, used_memory N/A."""
    facts, (record,) = parse("rtx-2080_windows_516.59.xml", shared=True)
    assert len(record["processes"]) == 26
    assert record["fan_percent"] == 37


def test_not_nvidia_smi_xml_is_a_value_error():
    with pytest.raises(ValueError):
        parse_smi_xml("<html></html>")
    with pytest.raises(ValueError):
        parse_smi_xml(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        )
