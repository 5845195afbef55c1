"""``nvidia-smi -q -x`` parsing against every real capture we have (DTD v11, v12, v13).

Only MIT-licensed captures are used (``tests/fixtures/nvidia-smi/``, see PROVENANCE.md); the
GPL-3.0 ones (netdata's) stay out of the project.
"""

from pathlib import Path

import pytest

from dltui.node.probe.gpu_records import GPU_FACT_FIELDS
from dltui.node.schema import GPU_FIELDS
from dltui.node.probe.smi_xml import parse_smi_xml

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi"


def parse(name):
    return parse_smi_xml((FIXTURES / name).read_bytes())


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.xml")), ids=lambda p: p.name)
def test_every_capture_parses_into_complete_records(path):
    facts, records = parse_smi_xml(path.read_bytes())
    assert facts["driver_version"] and facts["cuda_version"]
    assert len(facts["gpus"]) == len(records) >= 1
    for gpu, record in zip(facts["gpus"], records):
        assert set(gpu) == set(GPU_FACT_FIELDS)
        assert set(record) == set(GPU_FIELDS)
        assert gpu["uuid"].startswith("GPU-") and record["uuid"] == gpu["uuid"]
        assert record["memory_total_mib"] > 0


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


def test_v11_old_element_names():
    """Tesla T4 on 515: enforced_power_limit in power_readings, a clocks_throttle_reasons block."""
    facts, (record,) = parse("tesla-t4_515.105.01.xml")
    assert facts["gpus"][0]["power_limit_w"] == 70.0
    assert record["power_w"] == 26.8
    assert record["clock_event_reasons"] == []  # every throttle reason "Not Active"
    assert facts["driver_version"] == "515.105.01" and facts["cuda_version"] == "11.7"


def test_not_nvidia_smi_xml_is_a_value_error():
    with pytest.raises(ValueError):
        parse_smi_xml("<html></html>")
    with pytest.raises(ValueError):
        parse_smi_xml(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        )
