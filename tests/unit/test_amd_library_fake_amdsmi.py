"""The AMD SMI library source: the real ``amdsmi`` binding over a FAKE libamd_smi.so
(tests/fakes/fake_amdsmi.py: values from a real rocm-smi capture of an MI250)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dltui.node import bundle
from dltui.node.probe import amd_library
from dltui.node.probe.amd import open_amd
from dltui.node.probe.problems import Problems
from tests import sysfs_tree
from tests.fakes import fake_amdsmi


@pytest.fixture
def fake(monkeypatch, tmp_path):
    lib = fake_amdsmi.FakeLibAmdSmi(gpu_count=2)
    fake_amdsmi.install(monkeypatch, lib, tmp_path / "rocm")
    yield lib
    fake_amdsmi.forget()


def _open(tmp_path, sys_dir=None):
    return open_amd(Problems(), 1.0, str(sys_dir or tmp_path / "no-sys"), lambda name: None, str(tmp_path / "no-proc"))


def test_the_fake_library_is_read_first_through_the_real_binding(fake, tmp_path):
    # sysfs cards are there too: the library, where it loads, is chosen over them
    collector = _open(tmp_path, sysfs_tree.amd_cards(tmp_path / "sys", count=2))
    try:
        assert collector.source == "amdsmi"
        assert fake.initialised and fake.calls["amdsmi_init"] == 1
        facts = collector.facts()
        gpus = facts["gpus"]
        assert [g["bus_id"] for g in gpus] == ["0000:2f:00.0", "0000:30:00.0"]
        assert [g["name"] for g in gpus] == ["AMD INSTINCT MI250 (MCM) OAM AC MBA"] * 2
        assert gpus[0]["uuid"] != gpus[1]["uuid"]
        assert facts["amd_driver_version"] == "6.2.4"
        records = collector.sample()
        first = records[0]
        # the capture's own readings, in the library's units
        temperatures = (first["temperature_c"], first["hotspot_temperature_c"], first["memory_temperature_c"])
        assert temperatures == (32.0, 35.0, 43.0)
        assert (first["utilization_percent"], first["power_w"], first["power_limit_w"]) == (10.0, 89.0, 560.0)
        assert (first["sm_clock_mhz"], first["sm_clock_max_mhz"], first["memory_clock_mhz"]) == (800.0, 1700.0, 1600.0)
        assert first["pcie_replay_count"] == 147
        # what the capture does not hold is n/a, never 0
        assert first["memory_used_mib"] is None and first["memory_total_mib"] is None
        assert first["ecc_uncorrected_volatile"] is None and first["pcie_gen"] is None
        assert first["vendor"] == "amd" and first["name"] == "AMD INSTINCT MI250 (MCM) OAM AC MBA"
    finally:
        collector.close()
    assert not fake.initialised  # shut down with the collector


def test_limits_vram_pcie_and_ecc_from_the_fake_library(fake, tmp_path):
    for gpu in fake.gpus:
        gpu.values.update({
            "temp.HOTSPOT.CRITICAL": 100, "temp.HOTSPOT.EMERGENCY": 105, "temp.EDGE.CRITICAL": 99,
            "vram_total": 65520, "vram_used": 1024, "max_pcie_speed": 16000, "max_pcie_width": 16,
            "pcie_speed": 8000, "pcie_width": 16, "ecc_corrected": 3, "ecc_uncorrected": 0,
        })
    collector = _open(tmp_path)
    try:
        gpu = collector.facts()["gpus"][1]
        assert (gpu["hotspot_temperature_slowdown_c"], gpu["hotspot_temperature_shutdown_c"]) == (100.0, 105.0)
        assert gpu["temperature_slowdown_c"] == 99.0 and gpu["temperature_shutdown_c"] is None
        assert (gpu["memory_total_mib"], gpu["pcie_max_gen"], gpu["pcie_max_width"]) == (65520.0, 4, 16)
        record = collector.sample()[1]
        assert (record["memory_used_mib"], record["memory_total_mib"]) == (1024.0, 65520.0)
        assert (record["pcie_gen"], record["pcie_width"], record["pcie_max_gen"]) == (3, 16, 4)
        assert (record["ecc_corrected_volatile"], record["ecc_uncorrected_volatile"]) == (3, 0)
    finally:
        collector.close()


def test_a_gpu_lost_on_the_fake_library_is_an_error_record_and_the_others_read(fake, tmp_path):
    collector = _open(tmp_path)
    try:
        collector.facts()
        fake.lose(1)
        records = collector.sample()
        assert records[0]["error"] is None and records[0]["temperature_c"] == 32.0
        assert "AMDSMI_STATUS_DRM_ERROR" in records[1]["error"]
        assert records[1]["temperature_c"] is None and records[1]["name"] == "AMD INSTINCT MI250 (MCM) OAM AC MBA"
    finally:
        collector.close()


def test_a_fake_library_of_another_rocm_release_is_left_alone(monkeypatch, tmp_path):
    lib = fake_amdsmi.FakeLibAmdSmi(gpu_count=2)
    fake_amdsmi.install(monkeypatch, lib, tmp_path / "rocm", rocm_version="6.2.4")
    try:
        collector = _open(tmp_path, sysfs_tree.amd_cards(tmp_path / "sys", count=2))
        try:
            assert collector.source == "amd-sysfs"
            assert "ROCm 6.2.4-40, binding for 7.0" in collector.note
            assert lib.calls == {} and "amdsmi" not in sys.modules  # never imported, never called
        finally:
            collector.close()
    finally:
        fake_amdsmi.forget()


def test_no_library_means_no_binding_imported(monkeypatch, tmp_path):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    fake_amdsmi.forget()
    assert _open(tmp_path) is None
    assert "amdsmi" not in sys.modules


def test_binding_release_matches_rocm_by_major_and_minor():
    assert amd_library.same_release("7.0.2", "7.0.1-23")
    assert not amd_library.same_release("7.0.2", "7.1.0")
    assert not amd_library.same_release("7.0.2", None)
    assert not amd_library.same_release(None, "7.0.2")


def test_the_binding_is_shipped_beside_the_probe_with_its_version():
    mods = bundle.sources()
    assert {"amdsmi", "amdsmi.amdsmi_wrapper", "amdsmi.amdsmi_interface", "amdsmi.amdsmi_exception"} <= set(mods)
    assert "amdsmi.setup" not in mods
    assert "amdsmi" in bundle.packages(mods)  # relative imports inside it resolve on the node
    namespace: dict = {}
    exec(mods["dltui.node.probe.amdsmi_binding"], namespace)
    assert namespace["AMDSMI_BINDING_VERSION"].split(".")[:2] == ["7", "0"]


def test_the_shipped_binding_reads_the_fake_library_through_the_bundle_loader(tmp_path):
    """The binding as sent (docstrings out, xz), loaded by the node's loader in ``python -I -S``
    (no site-packages: amdsmi can only come from the bundle), over the FAKE library."""
    blob = tmp_path / "blob"
    blob.write_bytes(bundle.compress(bundle.sources()))
    rocm = tmp_path / "rocm"
    script = (
        "import sys\nD=open(%r,'rb').read()\n" % str(blob)
        + bundle.importer(bundle.packages(bundle.sources()))
        + "sys.path.append(%r)\n" % str(Path(__file__).resolve().parents[2])
        + "import ctypes, pathlib\n"
        "from tests.fakes import fake_amdsmi\n"
        "lib = fake_amdsmi.FakeLibAmdSmi(gpu_count=2)\n"
        "class Patch:\n"
        " def setattr(self, obj, name, value): setattr(obj, name, value)\n"
        " def setenv(self, name, value): __import__('os').environ[name] = value\n"
        " def delenv(self, name, raising=True): __import__('os').environ.pop(name, None)\n"
        "fake_amdsmi.install(Patch(), lib, pathlib.Path(%r))\n" % str(rocm)
        + "from dltui.node.probe.amd_library import open_library\n"
        "source = open_library(print)\n"
        "import amdsmi\n"
        "assert amdsmi.__spec__.origin is None or 'site-packages' not in str(amdsmi.__spec__.origin)\n"
        "facts = source.facts()\n"
        "print([f['bus_id'] for f in facts], source.sample(0.0, facts)[1]['hotspot_temperature_c'])\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['0000:2f:00.0', '0000:30:00.0'] 35.0"


def test_the_probe_reports_the_library_as_its_gpu_source_beside_nvidia(fake, monkeypatch, tmp_path):
    from dltui.node.probe.collect import Collector
    from tests.fakes.fake_nvml import install_fake_nvml

    capture = Path(__file__).resolve().parents[1] / "fakes" / "capture.csv"
    install_fake_nvml(monkeypatch, capture, gpu_count=1)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    collector = Collector(0.5, sys_dir=str(tmp_path / "no-sys"))
    try:
        facts = collector.facts()
        assert facts["gpu_source"] == "nvml+amdsmi"
        assert [(g["index"], g["vendor"]) for g in facts["gpus"]] == [(0, "nvidia"), (1, "amd"), (2, "amd")]
        sample = collector.sample()
        assert [g["hotspot_temperature_c"] for g in sample["gpus"]] == [None, 35.0, 35.0]
    finally:
        collector.close()
