"""AMD Instinct on the node: every real capture parses (amd-smi static, rocm-smi of ROCm 5 and
6), the derived amd-smi metric / process documents in both JSON shapes, the kernel-files source
over a sysfs tree, and the source chosen once: files, then amd-smi, then rocm-smi (fakes on PATH)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from dltui.node.probe import amd_json, amd_sysfs
from dltui.node.probe.amd import open_amd
from dltui.node.probe.amd_sysfs import dpm, find_cards, ras_counts
from dltui.node.probe.collect import Collector
from dltui.node.probe.gpu import which
from dltui.node.probe.gpu_records import GPU_FACT_FIELDS
from dltui.node.probe.problems import Problems
from dltui.node.schema import GPU_FIELDS
from tests import sysfs_tree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "amd"
FAKES = Path(__file__).resolve().parents[1] / "fakes"


def load(name: str):
    return json.loads((FIXTURES / name).read_text())


def test_amd_smi_static_mi210_capture_gives_the_vendors_limits_and_identity():
    (gpu,) = amd_json.static_facts(load("amd-smi-static-mi210.json"))
    assert set(gpu) == set(GPU_FACT_FIELDS)
    assert gpu["vendor"] == "amd" and gpu["index"] == 0
    assert gpu["name"] == "AMD Instinct MI210"
    assert (gpu["temperature_slowdown_c"], gpu["temperature_shutdown_c"]) == (99.0, 99.0)
    assert (gpu["hotspot_temperature_slowdown_c"], gpu["hotspot_temperature_shutdown_c"]) == (100.0, 105.0)
    assert (gpu["memory_temperature_max_c"], gpu["memory_temperature_shutdown_c"]) == (94.0, 99.0)
    assert (gpu["power_limit_w"], gpu["power_limit_max_w"], gpu["power_limit_min_w"]) == (300.0, 300.0, 0.0)
    assert (gpu["pcie_max_gen"], gpu["pcie_max_width"]) == (4, 16)
    assert gpu["memory_total_mib"] == 65520.0
    assert gpu["ecc_enabled"] is True  # the UMC block's ECC state
    assert gpu["driver_version"] == "kernel 6.14.0-24-generic"  # the in-box driver's banner
    assert gpu["serial"] is None  # the capture's "0"
    assert gpu["uuid"] is None and gpu["bus_id"] is None  # redacted in the capture: n/a, not invented
    assert gpu["compute_capability"] == "gfx90a"


def test_rocm_smi_rocm5_capture_reads_old_key_spellings():
    doc = load("rocm-smi-showallinfo-mi250.json")
    records = amd_json.rocm_smi_records(doc)
    assert [r["index"] for r in records] == [0, 1]
    first = records[0]
    assert set(first) == set(GPU_FIELDS)
    assert first["name"] == "AMD INSTINCT MI250 (MCM) OAM AC MBA"
    assert (first["temperature_c"], first["hotspot_temperature_c"], first["memory_temperature_c"]) == (32.0, 35.0, 43.0)
    assert (first["power_w"], first["power_limit_w"]) == (89.0, 560.0)
    assert [r["utilization_percent"] for r in records] == [10.0, 20.0]
    assert first["memory_utilization_percent"] == 0.0  # "GPU memory use (%)", ROCm 5's name
    assert first["pcie_replay_count"] == 147
    assert (first["sm_clock_mhz"], first["sm_clock_max_mhz"]) == (800.0, 1700.0)
    assert (first["memory_clock_mhz"], first["memory_clock_max_mhz"]) == (1600.0, 1600.0)
    # what rocm-smi -a does not report stays n/a
    assert first["memory_used_mib"] is None and first["ecc_corrected_volatile"] is None
    assert first["xgmi_errors_total"] is None and first["throttled"] is None
    driver, facts = amd_json.rocm_smi_facts(doc)
    assert driver == "6.2.4"
    assert facts[0]["serial"] == "PCB052715-0065" and facts[0]["bus_id"] == "0000:2F:00.0"
    assert facts[0]["firmware_version"] == "SMC 00.68.59.00"


def test_rocm_smi_rocm6_capture_reads_new_key_spellings():
    (record,) = amd_json.rocm_smi_records(load("rocm-smi-showallinfo-mi250-rocm6.json"))
    assert record["name"] == "AMD INSTINCT MI250 (MCM) OAM AC MBA"  # "Device Name"
    temperatures = (record["temperature_c"], record["hotspot_temperature_c"], record["memory_temperature_c"])
    assert temperatures == (43.0, 44.0, 53.0)
    assert record["power_w"] == 91.0
    assert record["memory_utilization_percent"] == 0.0  # "GPU Memory Read/Write Activity (%)"
    assert record["pcie_replay_count"] == 3824
    assert record["uuid"] == "0x1f9de0957d137942"


def test_derived_amd_smi_metric_rocm6_list_mi300x_has_no_edge_sensor():
    records = amd_json.metric_records(load("derived_amd-smi-metric-mi300x-x2_rocm6-list.json"))
    assert [r["index"] for r in records] == [0, 1]
    gpu = records[0]
    assert gpu["temperature_c"] is None  # "N/A": MI300X has no edge sensor; never 0
    assert (gpu["hotspot_temperature_c"], gpu["memory_temperature_c"]) == (71.0, 62.0)
    assert (gpu["power_w"], gpu["utilization_percent"]) == (642.0, 100.0)
    assert (gpu["memory_used_mib"], gpu["memory_total_mib"]) == (181234.0, 196592.0)
    assert (gpu["pcie_gen"], gpu["pcie_width"], gpu["pcie_replay_count"]) == (5, 16, 0)
    assert (gpu["sm_clock_mhz"], gpu["sm_clock_max_mhz"]) == (2100.0, 2100.0)
    assert gpu["xgmi_errors_total"] == 0 and gpu["throttled"] is False
    assert gpu["fan_percent"] is None  # passive OAM: "N/A"


def test_derived_amd_smi_metric_26x_gpu_data_shape_reads_the_same():
    (gpu,) = amd_json.metric_records(load("derived_amd-smi-metric-mi210_26x-gpu-data.json"))
    assert gpu["temperature_c"] == 74.0 and gpu["hotspot_temperature_c"] == 88.0
    assert gpu["throttled"] is True
    assert (gpu["ecc_corrected_volatile"], gpu["ecc_uncorrected_volatile"]) == (2, 0)
    assert gpu["xgmi_errors_total"] is None  # a PCIe card without XGMI: n/a, not 0
    assert gpu["pcie_gen"] == 4


def test_derived_amd_smi_process_lists_per_gpu():
    by_gpu = amd_json.process_lists(load("derived_amd-smi-process-mi300x-x2_rocm6-list.json"))
    assert by_gpu == {0: [{"pid": 41712, "name": "python3", "gpu_memory_mib": 180224.0}], 1: []}


@pytest.mark.parametrize("doc", ["N/A", None, [], {"gpu_data": "N/A"}, [{"gpu": 0, "usage": "N/A"}]])
def test_odd_amd_smi_documents_give_no_values_rather_than_fail(doc):
    records, facts = amd_json.metric_records(doc), amd_json.static_facts(doc)
    assert len(records) == len(facts) == (1 if isinstance(doc, list) and doc else 0)
    assert all(r["utilization_percent"] is None and r["vendor"] == "amd" for r in records)
    assert all(f["name"] is None for f in facts)


def test_sysfs_helpers_read_the_drivers_formats():
    assert dpm("0: 500Mhz\n1: 800Mhz *\n2: 1700Mhz\n") == (800.0, 1700.0)
    assert dpm(None) == (None, None)
    assert ras_counts("ue: 1\nce: 7\n") == (7, 1)
    assert ras_counts(None) == (None, None)


def test_sysfs_tree_fake_two_cards_read_from_kernel_files(tmp_path, monkeypatch):
    root = sysfs_tree.amd_cards(tmp_path / "sys", count=2)
    cards = find_cards(str(root))
    assert [c.bus_id for c in cards] == ["0000:29:00.0", "0000:2a:00.0"]  # card0-DP-1 skipped
    collector = open_amd(Problems(), 1.0, str(root), lambda name: None)
    assert collector is not None and collector.source == "amd-sysfs"
    facts = collector.facts()["gpus"]
    assert facts[0]["name"] == "AMD INSTINCT MI250 (MCM) OAM AC MBA"
    assert (facts[0]["hotspot_temperature_slowdown_c"], facts[0]["hotspot_temperature_shutdown_c"]) == (110.0, 115.0)
    assert facts[0]["power_limit_w"] == 560.0
    records = collector.sample()
    first = records[0]
    assert (first["temperature_c"], first["hotspot_temperature_c"], first["memory_temperature_c"]) == (43.0, 44.0, 53.0)
    assert (first["power_w"], first["power_limit_w"]) == (91.0, 560.0)
    assert (first["pcie_gen"], first["pcie_width"], first["pcie_replay_count"]) == (4, 16, 3824)
    assert (first["memory_used_mib"], first["memory_total_mib"]) == (10.0, 65536.0)
    assert (first["ecc_corrected_volatile"], first["xgmi_errors_total"]) == (0, 0)
    assert first["throttled"] is None  # the files carry no throttle status: n/a
    sysfs_tree.write(sysfs_tree.amd_file(root, 1, "hwmon/hwmon{n}/temp2_input"), "97000")
    sysfs_tree.write(sysfs_tree.amd_file(root, 1, "ras/xgmi_wafl_err_count"), "ue: 0\nce: 12")
    second = collector.sample()[1]
    assert second["hotspot_temperature_c"] == 97.0  # read every sample
    assert second["xgmi_errors_total"] == 0  # a counter: read every SLOW_REFRESH_S, repeated between
    monkeypatch.setattr(amd_sysfs, "SLOW_REFRESH_S", 0.0)
    assert collector.sample()[1]["xgmi_errors_total"] == 12
    collector.close()


def _bin(tmp_path: Path, *fakes: str) -> str:
    """A PATH directory holding only the named fakes (links to tests/fakes)."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    for name in fakes:
        os.symlink(FAKES / name, directory / name)
    return str(directory)


def test_fake_amd_smi_on_path_is_the_source_without_amd_files(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _bin(tmp_path, "amd-smi", "rocm-smi") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setenv("FAKE_AMD_SMI_PROCESS", str(FIXTURES / "derived_amd-smi-process-mi300x-x2_rocm6-list.json"))
    collector = open_amd(Problems(), 0.5, str(tmp_path / "no-sys"), which)
    assert collector is not None and collector.source == "amd-smi"  # amd-smi before rocm-smi
    try:
        facts = collector.facts()["gpus"]
        assert facts[0]["name"] == "AMD Instinct MI210"
        (record,) = collector.sample()
        assert record["name"] == "AMD Instinct MI210"  # from facts where metric has none
        assert record["power_limit_w"] == 300.0
        assert (record["hotspot_temperature_c"], record["throttled"]) == (88.0, True)
        # processes arrive from their own slower poll
        collector.processes.latest(10)
        assert collector.sample()[0]["processes"][0]["pid"] == 41712
    finally:
        collector.close()


def test_fake_rocm_smi_alone_is_read_at_its_lower_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _bin(tmp_path, "rocm-smi") + os.pathsep + "/usr/bin:/bin")
    collector = open_amd(Problems(), 0.5, str(tmp_path / "no-sys"), which)
    assert collector is not None and collector.source == "rocm-smi"
    try:
        assert collector.metrics.every_s == 5.0
        facts = collector.facts()["gpus"]
        assert facts[0]["driver_version"] == "6.2.4"
        (record,) = collector.sample()
        assert record["pcie_replay_count"] == 3824 and record["vendor"] == "amd"
    finally:
        collector.close()


def test_failing_fake_amd_smi_reports_a_problem_and_no_values(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _bin(tmp_path, "amd-smi") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setenv("FAKE_AMD_SMI_FAIL", "1")
    problems = Problems()
    collector = open_amd(problems, 0.5, str(tmp_path / "no-sys"), which)
    assert collector is not None
    try:
        assert collector.facts()["gpus"] == []
        assert collector.sample() == []
        assert any("amd-smi static failed" in message for _, message in problems.drain())
    finally:
        collector.close()


def test_collector_on_a_fake_nvidia_and_fake_amd_node_reports_both(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _bin(tmp_path, "nvidia-smi", "amd-smi") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SMI_CAPTURE", str(FAKES / "capture.csv"))
    monkeypatch.setattr("dltui.node.probe.gpu.nvml_library_loads", lambda: False)
    collector = Collector(0.5, sys_dir=str(tmp_path / "no-sys"))
    try:
        facts = collector.facts()
        assert facts["gpu_source"] == "nvidia-smi+amd-smi"
        assert [(g["index"], g["vendor"]) for g in facts["gpus"]] == [(0, "nvidia"), (1, "amd")]
        sample = collector.sample()
        assert [(g["index"], g["vendor"]) for g in sample["gpus"]] == [(0, "nvidia"), (1, "amd")]
        assert sample["gpus"][1]["hotspot_temperature_c"] == 88.0
        assert sample["gpus"][0]["hotspot_temperature_c"] is None  # NVIDIA has no junction sensor
    finally:
        collector.close()


def _fake_proc(root: Path) -> Path:
    """A /proc with one process holding card 1's render node twice (one DRM client: dup'ed fds)
    and a second client, and one process with no GPU; fdinfo in the kernel's DRM usage-stats
    layout (Documentation/gpu/drm-usage-stats.rst), values invented."""
    def fd(pid: int, n: int, target: str, info: str) -> None:
        (root / str(pid) / "fd").mkdir(parents=True, exist_ok=True)
        (root / str(pid) / "fdinfo").mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / str(pid) / "fd" / str(n))
        (root / str(pid) / "fdinfo" / str(n)).write_text(info)

    drm = "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t{c}\ndrm-pdev:\t0000:2a:00.0\n" \
          "drm-total-vram:\t{kib} KiB\ndrm-engine-gfx:\t123456 ns\n"
    fd(4242, 5, "/dev/dri/renderD129", drm.format(c=7, kib=2 * 1024 * 1024))
    fd(4242, 6, "/dev/dri/renderD129", drm.format(c=7, kib=2 * 1024 * 1024))  # the same client
    fd(4242, 9, "/dev/dri/renderD129", drm.format(c=8, kib=512 * 1024))
    (root / "4242" / "comm").write_text("python3\n")
    fd(77, 3, "/var/log/syslog", "pos:\t0\n")
    (root / "77" / "comm").write_text("rsyslogd\n")
    (root / "self").mkdir()
    return root


def test_fdinfo_scan_of_a_fake_proc_tree_counts_each_drm_client_once():
    from dltui.node.probe import amd_fdinfo

    with tempfile.TemporaryDirectory() as tmp:
        found = amd_fdinfo.scan(str(_fake_proc(Path(tmp))))
    assert found == {(0, 0x2A, 0): [{"pid": 4242, "name": "python3", "gpu_memory_mib": 2560.0}]}


def test_sysfs_source_without_amd_smi_lists_processes_from_the_fake_proc_tree(tmp_path):
    root = sysfs_tree.amd_cards(tmp_path / "sys", count=2)
    proc = _fake_proc(tmp_path / "proc")
    collector = open_amd(Problems(), 1.0, str(root), lambda name: None, str(proc))
    assert collector is not None and collector.fdinfo is not None
    try:
        collector.facts()
        assert collector.fdinfo.scanned.wait(10)  # its own thread: the sample never waits for it
        records = collector.sample()
        assert records[0]["processes"] == []
        assert [p["pid"] for p in records[1]["processes"]] == [4242]
    finally:
        collector.close()
