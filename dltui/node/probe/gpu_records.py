"""The shapes of the GPU records and facts every GPU source returns (NVML, nvidia-smi CSV,
``-q -x`` and ``-q`` text), and whether NVML loads at all: a leaf the sources import, so
``gpu.py`` (which picks a source) and the sources do not import each other."""

from __future__ import annotations

import sys
from typing import Any, Dict, Protocol

from ..schema import GPU_FIELDS

Record = Dict[str, Any]  # one GPU's record (GPU_FIELDS), or its facts (GPU_FACT_FIELDS)


class GpuSource(Protocol):
    """What a GPU source (NVML, the nvidia-smi loop) answers."""

    interval_s: float

    def facts(self) -> dict[str, Any]: ...

    def sample(self) -> list[Record]: ...

    def close(self) -> None: ...


GPU_LOST = "GPU is lost (fell off the bus?)"
GPU_NEEDS_RESET = "GPU needs a reset (NVML: GPU requires restart)"

# Keys of one GPU in the facts dict; the same names as dltui.core.models.GpuFacts.
GPU_FACT_FIELDS = (
    "index",
    "name",
    "uuid",
    "bus_id",
    "serial",
    "vbios_version",
    "memory_total_mib",
    "pcie_max_gen",
    "pcie_max_width",
    "pcie_gpu_max_gen",
    "pcie_host_max_gen",
    "persistence_mode",
    "ecc_enabled",
    "mig_enabled",
    "power_limit_w",
    "power_limit_default_w",
    "power_limit_min_w",
    "power_limit_max_w",
    "temperature_shutdown_c",
    "temperature_slowdown_c",
    "temperature_max_operating_c",
    "memory_temperature_max_c",
    "thresholds_are_margin_offsets",
    "compute_capability",
    "vendor",
    "driver_version",
    "firmware_version",
    "hotspot_temperature_slowdown_c",
    "hotspot_temperature_shutdown_c",
    "memory_temperature_shutdown_c",
)

THRESHOLD_FIELDS = (
    "temperature_shutdown_c",
    "temperature_slowdown_c",
    "temperature_max_operating_c",
    "memory_temperature_max_c",
    "thresholds_are_margin_offsets",
)


def new_gpu_record(index: int, vendor: str = "nvidia") -> Record:
    """A GPU record with every field of GPU_FIELDS, nothing known yet but its vendor."""
    record = dict.fromkeys(GPU_FIELDS)
    record["index"] = index
    record["vendor"] = vendor
    record["utilization_samples_percent"] = []
    record["processes"] = []
    return record


def new_gpu_facts(index: int, vendor: str = "nvidia") -> Record:
    facts = dict.fromkeys(GPU_FACT_FIELDS)
    facts["index"] = index
    facts["vendor"] = vendor
    return facts


def error_record(
    index: int, uuid: str | None, name: str | None, error: str | None, vendor: str = "nvidia"
) -> Record:
    """The record of a GPU that could not be read: who it is and why, no values."""
    record = new_gpu_record(index, vendor)
    record.update(uuid=uuid, name=name, error=error)
    return record


def nvml_library_loads() -> bool:
    """Whether libnvidia-ml loads. Asked before the NVML collector (and the ``pynvml`` it
    compiles, ~0.1 s of CPU) is even imported: a node without a driver pays for neither."""
    if "pynvml" in sys.modules or not sys.platform.startswith("linux"):
        return True  # already imported (or another OS, where pynvml finds the library itself)
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True
