"""Choosing the GPU source: NVML, else nvidia-smi, else "no NVIDIA driver found" (a fact).

This machine has no GPU: the real pynvml's nvmlInit raises NVMLError_LibraryNotFound."""

import os
import sys
from pathlib import Path

import pynvml

from dltui.core.models import GpuFacts
from dltui.node.probe.gpu import NO_DRIVER, open_gpu
from dltui.node.probe.gpu_records import GPU_FACT_FIELDS
from dltui.node.probe.nvml import NvmlCollector
from dltui.node.probe.problems import Problems
from dltui.node.probe.smi import SmiCollector
from tests.fakes.fake_nvml import install_fake_nvml

REPO = Path(__file__).resolve().parents[2]
FAKES = REPO / "tests" / "fakes"
H100 = (
    REPO / "tests" / "fixtures" / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
)


def test_no_nvml_library_and_no_nvidia_smi_is_a_fact_not_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    problems = Problems()
    assert open_gpu(problems, 1.0) == (None, None, NO_DRIVER)
    assert NO_DRIVER == "no NVIDIA driver found"
    assert problems.drain() == []


def test_no_pynvml_at_all_and_no_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    assert open_gpu(Problems(), 1.0) == (None, None, NO_DRIVER)


def test_nvidia_smi_is_the_fallback_fake_smi(monkeypatch):
    monkeypatch.setenv("PATH", "%s%s%s" % (FAKES, os.pathsep, os.environ["PATH"]))
    collector, source, note = open_gpu(Problems(), 1.0)
    try:
        assert isinstance(collector, SmiCollector)
        assert source == "nvidia-smi"
        assert note == "NVML not usable (NVML Shared Library Not Found): reading nvidia-smi instead"
    finally:
        collector.close()


def test_nvml_is_preferred_fake_nvml(monkeypatch):
    install_fake_nvml(monkeypatch, H100, gpu_count=2)
    monkeypatch.setenv("PATH", "%s%s%s" % (FAKES, os.pathsep, os.environ["PATH"]))
    collector, source, note = open_gpu(Problems(), 1.0)
    assert isinstance(collector, NvmlCollector)
    assert (source, note) == ("nvml", None)
    collector.close()


def test_a_broken_driver_without_nvidia_smi_is_reported(monkeypatch, tmp_path):
    def mismatch():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)

    monkeypatch.setattr(pynvml, "nvmlInit", mismatch)
    monkeypatch.setenv("PATH", str(tmp_path))
    problems = Problems()
    reason = "NVML: RM has detected an NVML/RM version mismatch."
    assert open_gpu(problems, 1.0) == (None, None, reason)
    assert problems.drain() == [("gpu", reason)]


def test_gpu_fact_keys_are_the_model_fields():
    assert GPU_FACT_FIELDS == tuple(GpuFacts.__dataclass_fields__)
