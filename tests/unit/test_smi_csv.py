"""nvidia-smi CSV parsing against real captures.

Only MIT-licensed captures are used, copied in ``tests/fixtures/nvidia-smi/`` (see
PROVENANCE.md; ``test_fixtures.py`` checks their digests).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.node.probe import values
from dltui.node.schema import GPU_FIELDS
from dltui.node.probe.smi import (
    COMPUTE_APPS_FIELDS,
    FACT_QUERY,
    SAMPLE_QUERY,
    choose_fields,
    describe_failure,
    gpu_record,
    parse_compute_apps_csv,
    parse_help_query_gpu,
    parse_query_csv,
    processes_by_uuid,
    read_row,
    same_bus_id,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi"
FAKE_SMI = REPO / "tests" / "fakes" / "nvidia-smi"

H100 = "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
H100_MIG = "h100-80gb-hbm3-mig_590.48.01_load_query-gpu-all.csv"
L40S = "l40s_595.80_load_query-gpu-all.csv"
RTX4080 = "rtx-4080-super_595.71.05_idle_query-gpu-all.csv"
RTX2080_WIN = "rtx-2080-super_windows_610.62_load_query-gpu-all.csv"
APPS_H100_MIG = "h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv"
APPS_WINDOWS = "rtx-2080-super_windows_591.86_load_query-compute-apps.csv"


def read(path):
    return path.read_text(encoding="utf-8")


def record_of(name, processes=None):
    table = parse_query_csv(read(FIXTURES / name))
    chosen = choose_fields(SAMPLE_QUERY, set(table.fields))
    return gpu_record(table.rows[0], chosen, processes or {})


def facts_of(name):
    table = parse_query_csv(read(FIXTURES / name))
    return read_row(table.rows[0], FACT_QUERY, choose_fields(FACT_QUERY, set(table.fields)))


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*query-gpu*.csv")), ids=lambda p: p.name)
def test_every_query_gpu_capture_parses_whole(path):
    table = parse_query_csv(read(path))
    assert table.rows and table.dropped == 0
    assert all(len(row) == len(table.fields) for row in table.rows)
    assert all("[" not in field for field in table.fields)  # units are gone from names


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*compute-apps*.csv")), ids=lambda p: p.name
)
def test_every_compute_apps_capture_parses_whole(path):
    table = parse_compute_apps_csv(read(path))
    assert table.rows and table.dropped == 0
    assert all(row["pid"].isdigit() for row in table.rows)


def test_h100_under_load_values():
    record = record_of(H100)
    assert set(record) == set(GPU_FIELDS)
    raw = parse_query_csv(read(FIXTURES / H100)).rows[0]
    assert values.number(raw["power.draw"]) == 631.95
    assert record["power_w"] == 632.0  # rounded to 0.1 W for the wire
    assert record["memory_used_mib"] == 19818
    assert record["memory_total_mib"] == 81559
    assert record["utilization_percent"] == 100
    assert record["memory_utilization_percent"] == 11
    assert (record["pcie_gen"], record["pcie_width"]) == (5, 16)
    assert (record["pcie_max_gen"], record["pcie_max_width"]) == (5, 16)
    assert record["temperature_c"] == 59
    assert record["memory_temperature_c"] == 54
    assert record["temperature_margin_c"] == 26
    assert record["power_limit_w"] == 700.0
    assert (record["sm_clock_mhz"], record["memory_clock_mhz"]) == (1980, 2619)
    assert record["pstate"] == 0
    assert record["fan_percent"] is None  # [N/A]: passive SXM module
    assert record["clock_event_reasons_mask"] == 0
    assert record["clock_event_reasons"] == []
    assert record["clock_event_hw_thermal_us"] == 0
    assert record["ecc_uncorrected_aggregate"] == 0
    assert record["remapped_rows_pending"] is False
    assert record["retired_pages_pending"] is None  # [N/A] on Hopper
    assert record["utilization_samples_percent"] == []  # nvidia-smi has no sub-second samples
    assert record["error"] is None


def test_h100_facts():
    facts = facts_of(H100)
    assert facts["driver_version"] == "590.48.01"
    assert facts["bus_id"] == "00000000:00:09.0"
    assert facts["vbios_version"] == "96.00.A5.00.01"
    assert facts["persistence_mode"] is True
    assert facts["ecc_enabled"] is True
    assert facts["mig_enabled"] is False
    assert facts["pcie_gpu_max_gen"] == 5
    assert facts["pcie_host_max_gen"] is None
    assert (facts["power_limit_min_w"], facts["power_limit_max_w"]) == (200.0, 700.0)
    assert facts["compute_capability"] == "9.0"


def test_mig_hides_utilisation_and_remapping():
    record = record_of(H100_MIG)
    assert record["utilization_percent"] is None
    assert record["remapped_rows_correctable"] is None
    assert record["memory_used_mib"] == 11125
    assert record["power_w"] == 433.8
    assert facts_of(H100_MIG)["mig_enabled"] is True


def test_l40s_passive_card_without_hbm():
    record = record_of(L40S)
    assert record["fan_percent"] is None
    assert record["memory_temperature_c"] is None  # bare N/A
    assert record["temperature_margin_c"] == 34
    assert record["clock_event_sw_power_cap_us"] == 204642816
    assert record["remapped_rows_correctable"] == 0


def test_idle_rtx_4080_reports_the_idle_reason_and_a_slow_link():
    record = record_of(RTX4080)
    assert record["clock_event_reasons_mask"] == 1
    assert record["clock_event_reasons"] == ["gpu_idle"]
    assert record["pstate"] == 8
    assert (record["pcie_gen"], record["pcie_max_gen"]) == (1, 4)
    assert record["ecc_corrected_volatile"] is None  # GeForce: no ECC
    facts = facts_of(RTX4080)
    assert (facts["pcie_gpu_max_gen"], facts["pcie_host_max_gen"]) == (4, 5)


def test_windows_capture_with_function_not_found():
    raw = parse_query_csv(read(FIXTURES / RTX2080_WIN)).rows[0]
    assert raw["bbx.time_run"] == "[Function Not Found]"
    assert values.text(raw["bbx.time_run"]) is None
    record = record_of(RTX2080_WIN)
    assert record["fan_percent"] == 38
    assert record["pstate"] == 2
    assert record["clock_event_sw_power_cap_us"] == 834002687


def test_noheader_rows_with_units_need_the_field_list():
    """The H100 capture without its header row: what ``--format=csv,noheader`` prints (units
    stay in the values)."""
    text = read(FIXTURES / H100)
    fields = parse_query_csv(text).fields
    table = parse_query_csv(text.split("\n", 1)[1], fields)
    assert len(table.rows) == 1 and table.dropped == 0
    row = table.rows[0]
    assert row["pci.bus_id"] == "00000000:00:09.0"
    assert row["power.draw"].endswith(" W")
    assert values.watts(row["power.draw"]) == 632.0
    assert values.number(row["memory.total"]) == 81559
    assert parse_query_csv(text.split("\n", 1)[1]).rows == []  # no header: fields are needed


def test_nounits_output_keeps_units_in_the_header_only_fake_smi():
    """``--format=csv,nounits`` as the fake ``nvidia-smi`` renders the H100 capture."""
    query = "name,uuid,fan.speed,pstate,memory.used,power.draw,clocks.current.sm"
    text = subprocess.run(
        [sys.executable, str(FAKE_SMI), "--query-gpu=" + query, "--format=csv,nounits"],
        env={"FAKE_SMI_CAPTURE": str(FIXTURES / H100), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert text.splitlines()[0].endswith("power.draw [W], clocks.current.sm [MHz]")
    table = parse_query_csv(text)
    assert table.fields == tuple(query.split(","))
    assert table.rows[0]["power.draw"] == "631.95"  # "631.95 W" in the capture
    typed = read_row(table.rows[0], SAMPLE_QUERY, choose_fields(SAMPLE_QUERY, set(table.fields)))
    assert typed["power_w"] == 632.0
    assert typed["memory_used_mib"] == 19818
    assert typed["sm_clock_mhz"] == 1980
    assert typed["pstate"] == 0
    assert typed["index"] is None  # not queried: such a row cannot become a GPU record
    assert gpu_record(table.rows[0], choose_fields(SAMPLE_QUERY, set(table.fields)), {}) is None


def test_header_is_recognised_when_fields_are_given():
    text = read(FIXTURES / H100)
    fields = parse_query_csv(text).fields
    with_header = parse_query_csv(text, fields)
    assert len(with_header.rows) == 1 and with_header.dropped == 0


def test_interleaved_lines_in_loop_output_are_dropped_and_counted():
    fields = ("index", "temperature.gpu", "power.draw")
    # A loop's output with a driver message in between (typed: the shape, not a capture).
    text = (
        "0, 59, 631.95\n"
        "1, 61, 640.10\n"
        "Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
        "0, 60, 629.00\n"
    )
    table = parse_query_csv(text, fields)
    assert [row["temperature.gpu"] for row in table.rows] == ["59", "61", "60"]
    assert table.dropped == 1


def test_compute_apps_names_with_spaces_and_commas():
    table = parse_compute_apps_csv(read(FIXTURES / APPS_WINDOWS))
    names = [row["process_name"] for row in table.rows]
    assert len(names) == 12
    assert "C:\\Program Files\\NZXT CAM\\NZXT CAM.exe" in names
    assert {row["used_gpu_memory"] for row in table.rows} == {"[N/A]"}
    typed = "4242, 2048, GPU-00000000-0000-0000-0000-000000000000, python train.py --tags a,b\n"
    (row,) = parse_compute_apps_csv(typed, COMPUTE_APPS_FIELDS).rows
    assert row["process_name"] == "python train.py --tags a,b"


def test_processes_are_grouped_by_gpu_uuid():
    table = parse_compute_apps_csv(read(FIXTURES / APPS_H100_MIG))
    by_uuid = processes_by_uuid(table.rows)
    assert by_uuid == {
        "GPU-00000000-0000-0000-0000-000000000000": [
            {"pid": 21180, "name": "/root/tools/memhog", "gpu_memory_mib": 2296},
            {"pid": 21181, "name": "/root/tools/memhog", "gpu_memory_mib": 1272},
            {"pid": 21198, "name": "./gpu_burn", "gpu_memory_mib": 7484},
        ]
    }
    record = record_of(H100, by_uuid)
    assert [p["pid"] for p in record["processes"]] == [21180, 21181, 21198]


# The shape of `nvidia-smi --help-query-gpu` (typed, abridged): a quoted name or several
# aliases per line, then a description.
HELP_R590 = """List of valid properties to query for the switch "--query-gpu":

"clocks_event_reasons.active" or "clocks_throttle_reasons.active"
Bitmask of active clock event reasons.

"pcie.link.gen.gpucurrent"
The current link generation of the GPU.

"pcie.link.gen.current"
Deprecated.

"clocks.current.sm" or "clocks.sm"
Current frequency of SM (Streaming Multiprocessor) clock.
"""
HELP_R470 = """List of valid properties to query for the switch "--query-gpu":

"clocks_throttle_reasons.active"
Bitmask of active clock throttle reasons.

"pcie.link.gen.current"
The current PCI-E link generation.
"""


def test_field_names_follow_what_the_driver_lists():
    new = choose_fields(SAMPLE_QUERY, parse_help_query_gpu(HELP_R590))
    assert new["clock_event_reasons_mask"] == "clocks_event_reasons.active"
    assert new["pcie_gen"] == "pcie.link.gen.gpucurrent"
    assert new["sm_clock_mhz"] == "clocks.current.sm"
    assert new["power_w"] is None  # not listed: not queried, so one unknown name can't fail all
    old = choose_fields(SAMPLE_QUERY, parse_help_query_gpu(HELP_R470))
    assert old["clock_event_reasons_mask"] == "clocks_throttle_reasons.active"
    assert old["pcie_gen"] == "pcie.link.gen.current"


def test_failures_in_plain_words():
    assert "couldn't communicate with the NVIDIA driver" in describe_failure(
        9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    mismatch = describe_failure(
        18,
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.161",
    )
    assert mismatch.startswith("NVIDIA driver/library version mismatch")
    lost = describe_failure(
        15,
        "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU",
    )
    assert lost == "GPU 0000:3B:00.0 is lost (fell off the bus?): reboot to recover it"
    assert "libnvidia-ml.so" in describe_failure(
        12, "NVIDIA-SMI couldn't find libnvidia-ml.so library"
    )
    assert (
        describe_failure(None, "nvidia-smi not found")
        == "nvidia-smi could not run: nvidia-smi not found"
    )
    assert describe_failure(255, "Unknown Error") == "nvidia-smi failed (exit 255): Unknown Error"


def test_bus_ids_compare_across_domain_widths():
    assert same_bus_id("00000000:3B:00.0", "0000:3b:00.0")
    assert not same_bus_id("00000000:3B:00.0", "0000:3C:00.0")
    assert not same_bus_id(None, "0000:3b:00.0")
