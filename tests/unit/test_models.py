"""The models and the probe's field tables describe the same records, and survive JSON."""

import dataclasses
import json

from dltui.core import models
from dltui.core.field_types import RECORD_MODELS
from dltui.node import schema


def test_every_schema_table_matches_its_dataclass_field_for_field():
    assert set(RECORD_MODELS) == set(schema.RECORD_FIELDS)  # the decoder's type checks cover every kind
    for kind, cls in RECORD_MODELS.items():
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "cores")
        assert names == schema.RECORD_FIELDS[kind], kind


def test_the_stack_fact_matches_its_dataclass_field_for_field():
    assert tuple(f.name for f in dataclasses.fields(models.StackFacts)) == schema.STACK_FIELDS


def test_units_live_in_field_names():
    unitless = {"index", "uuid", "name", "pstate", "error", "processes", "mountpoint", "device", "fstype",
                "clock_event_reasons", "clock_event_reasons_mask", "load_1", "load_5", "load_15",
                "running", "blocked_io", "d_state_processes", "pcie_gen", "pcie_width", "pcie_max_gen",
                "pcie_max_width", "pcie_replay_count", "remapped_rows_pending", "remapped_rows_failure",
                "retired_pages_pending", "utilization_samples_percent",
                # systemd's own words and ids; the checkpoint's path and epoch mtime
                "load_state", "active_state", "sub_state", "result", "main_pid", "exec_main_status",
                "invocation_id", "glob", "newest_path", "newest_mtime", "matched_files",
                # the drive's own words and masks; SMART counts in sectors; the epoch of a reading
                "type", "protocol", "model", "serial", "smart_passed", "critical_warning_mask",
                "critical_warnings", "read_time"}
    # an HCA port's names and states; a GPU's NVLink counts and per-link states
    unitless |= {"port", "state", "phys_state", "rate_detail", "link_layer", "hca_type", "netdev",
                 "gpu", "links_active", "links_total", "links_up"}
    unitless |= {"vendor", "throttled"}  # which maker's GPU; the vendor's own throttle flag
    # a unit's Restart= and a container's engine words, ids, times as the engine writes them
    unitless |= {"restart_policy", "engine", "id", "image", "oom_killed", "health", "exit_code", "started_at",
                 "finished_at"}
    suffixes = ("_percent", "_bytes", "_bytes_per_s", "_per_s", "_iops", "_mib", "_c", "_w", "_mhz", "_ms",
                "_us", "_total", "_depth", "_volatile", "_aggregate", "_correctable", "_uncorrectable",
                "_gbps", "_sectors", "_hours")
    for kind, fields in schema.RECORD_FIELDS.items():
        for name in fields:
            assert name in unitless or name.endswith(suffixes), f"{kind}.{name} has no unit in its name"


def _full_sample():
    return models.Sample(
        time=1764680000.25,
        cpu=models.CpuSample(12.5, 10.0, 2.0, 0.5, 0.0, 1.5, 1.2, 0.9,
                             cores=[models.CoreSample(0, 20.0, 15.0, 5.0, 0.0, 0.0)]),
        memory=models.MemorySample(64 << 30, 20 << 30, 40 << 30, 10 << 30, 1 << 20, 2 << 30, 0, 0),
        pressure=models.PressureSample(io_some_avg10_percent=41.2),
        tasks=models.TaskSample(3, 1, 2),
        disks=[models.DiskSample("nvme0n1", 1.5e9, 0.0, 12000.0, 0.0, 99.0, 31.5, 2.5)],
        filesystems=[models.FilesystemSample("/", "/dev/nvme0n1p2", "ext4", 100, 50, 50, 50.0, None)],
        networks=[models.NetworkSample("eth0", 1e6, 2e6, 100.0, 200.0, 0, 0, 3, 0)],
        gpus=[
            models.GpuSample(
                index=0, uuid="GPU-1", name="NVIDIA H100 80GB HBM3", utilization_percent=100.0,
                utilization_samples_percent=[100, 0, 0, 97], utilization_sample_period_ms=166.7,
                memory_used_mib=19818.0, memory_total_mib=81559.0, temperature_c=59.0,
                memory_temperature_c=None, power_w=631.95, clock_event_reasons_mask=0x88,
                clock_event_reasons=["hw_slowdown", "hw_power_brake_slowdown"],
                processes=[models.GpuProcess(4242, "python", 19000.0)],
            )
        ],
        drives=[models.DriveSample("/dev/nvme0", "nvme", "NVMe", smart_passed=False, critical_warning_mask=0x10,
                                   critical_warnings=["volatile_memory_backup_failed"], media_errors_total=0)],
    )


def test_sample_round_trips_through_json_without_loss():
    sample = _full_sample()
    again = models.Sample.from_dict(json.loads(json.dumps(sample.to_dict())))
    assert again == sample
    assert again.gpus[0].memory_temperature_c is None  # not reported stays null, not 0


def test_facts_round_trip_and_ignore_unknown_keys_from_newer_probes():
    facts = models.NodeFacts(hostname="gpu01", kernel="6.1.0", gpus=[models.GpuFacts(0, name="H100", pcie_max_gen=5)],
                             nics=[models.NicFacts("eth0", 100000)], block_devices=[models.BlockDeviceFacts("nvme0n1", 1 << 40)],
                             stack=models.StackFacts("dpkg", ["nvidia-driver-535"], [], "535.183.01", True,
                                                     reboot_reasons=["kernel 6.1.0-21 installed, 6.1.0-18 running"]))
    data = json.loads(json.dumps(facts.to_dict()))
    data["something_new"] = 1
    data["stack"]["something_newer"] = 2
    assert models.NodeFacts.from_dict(data) == facts


def test_clock_event_reasons_decode_every_bit_and_keep_unknown_ones():
    assert schema.decode_clock_event_reasons(0x88) == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert schema.decode_clock_event_reasons(0) == []
    assert schema.decode_clock_event_reasons(None) is None
    assert schema.decode_clock_event_reasons(0x1 | 0x1000) == ["gpu_idle", "0x1000"]


def test_gpu_memory_used_percent_is_none_when_total_unknown():
    assert models.GpuSample(0, memory_used_mib=10.0).memory_used_percent is None
    assert models.GpuSample(0, memory_used_mib=20.0, memory_total_mib=80.0).memory_used_percent == 25.0
