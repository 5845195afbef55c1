"""AMD GPUs through the AMD SMI library (``libamd_smi.so``) and its Python binding ``amdsmi``.

The binding (ctypes, MIT) is shipped beside the probe as pynvml is, and imported only where
ROCm's ``lib/libamd_smi.so`` exists: a node without it pays for neither. In process, like
NVML: one library call per value, no tool started per sample.

The binding's ctypes structures are generated from one ROCm release's headers and the
library does not check them, so it is used only where the node's ROCm has the binding's
major.minor version (``/opt/rocm/.info/version``); elsewhere the kernel's files are read.

Units are the library's: °C, W, MB for VRAM, MHz, PCIe speed in MT/s.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any, Callable

from .amd_json import LIMIT_FIELDS, TEMP_LABELS, VENDOR, gen_of
from .gpu_records import Record, error_record, new_gpu_facts, new_gpu_record
from .infiniband import read_attribute as read

LIBRARY = "lib/libamd_smi.so"
VERSION_FILE = ".info/version"
SLOW_REFRESH_S = 10.0  # PCIe link state, counters, clocks' top: as the sysfs source's slow set
TEMPERATURES = (("EDGE", "edge"), ("HOTSPOT", "junction"), ("VRAM", "mem"))  # library -> sysfs label
UNSUPPORTED = (2, 3)  # AMDSMI_STATUS_NOT_SUPPORTED, _NOT_YET_IMPLEMENTED: n/a, not an error


def rocm_root() -> str:
    """Where ROCm is: the binding looks in ROCM_HOME, then ROCM_PATH, then /opt/rocm."""
    return os.environ.get("ROCM_HOME") or os.environ.get("ROCM_PATH") or "/opt/rocm"


def binding_version() -> str | None:
    """The shipped binding's version (``7.0.2``): bundle.py writes it, its metadata does not travel."""
    try:
        from .amdsmi_binding import AMDSMI_BINDING_VERSION

        return AMDSMI_BINDING_VERSION
    except ImportError:
        pass
    try:
        from importlib import metadata
    except ImportError:
        return None
    try:
        return metadata.version("amdsmi")
    except metadata.PackageNotFoundError:
        return None


def same_release(binding: str | None, rocm: str | None) -> bool:
    """Whether a binding built for ``binding`` (7.0.2) matches ROCm ``rocm`` (7.0.1-23): major.minor."""
    if not binding or not rocm:
        return False
    return binding.split(".")[:2] == rocm.split("-")[0].split(".")[:2]


def load_binding(root: str) -> tuple[Any, str | None]:
    """-> (the initialised ``amdsmi`` module or None, why not in words or None).

    (None, None): no AMD SMI library on this node, nothing to say."""
    if not os.path.exists(os.path.join(root, LIBRARY)):
        return None, None
    rocm = read(os.path.join(root, VERSION_FILE))
    binding = binding_version()
    if not same_release(binding, rocm):
        return None, "AMD SMI library of ROCm %s, binding for %s: reading the kernel's files instead" % (
            rocm or "unknown", binding or "none")
    # The binding prints to stdout when the library does not load: stdout is the wire.
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            import amdsmi

            amdsmi.amdsmi_init(amdsmi.AmdSmiInitFlags.INIT_AMD_GPUS)
        except Exception as exc:  # a library that will not load or init: the kernel's files then
            return None, "AMD SMI library not usable (%s): reading the kernel's files instead" % _words(exc)
    return amdsmi, None


def _words(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _number(value: Any) -> float | None:
    """A library value, or None for its "N/A" (the binding's word for an all-ones field)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class LibraryGpu:
    """One GPU's handle and the calls that read it; a call the GPU does not support is None."""

    def __init__(self, smi: Any, index: int, handle: Any) -> None:
        self.smi = smi
        self.index = index
        self.handle = handle
        self.slow: Record = {}
        self.slow_at: float | None = None

    def call(self, name: str, *args: Any) -> Any:
        """The call's answer; None where this GPU does not support it. Any other failure
        (the GPU gone, a driver error) is raised: the GPU's record becomes an error record."""
        try:
            return getattr(self.smi, name)(self.handle, *args)
        except self.smi.AmdSmiLibraryException as exc:
            if exc.get_error_code() in UNSUPPORTED:
                return None
            raise

    def temperature(self, sensor: str, metric: str) -> float | None:
        return _number(self.call("amdsmi_get_temp_metric", self.smi.AmdSmiTemperatureType[sensor],
                                 self.smi.AmdSmiTemperatureMetric[metric]))

    def facts(self) -> Record:
        facts = new_gpu_facts(self.index, VENDOR)
        facts["bus_id"] = self.call("amdsmi_get_gpu_device_bdf")
        facts["uuid"] = self.call("amdsmi_get_gpu_device_uuid") or None
        asic = self.call("amdsmi_get_gpu_asic_info") or {}
        name = asic.get("market_name")
        facts["name"] = name if name and name != "N/A" else None
        driver = self.call("amdsmi_get_gpu_driver_info") or {}
        version = driver.get("driver_version")
        facts["driver_version"] = version if version and version != "N/A" else None
        vram = self.call("amdsmi_get_gpu_vram_usage") or {}
        facts["memory_total_mib"] = _number(vram.get("vram_total"))
        power = self.call("amdsmi_get_power_info") or {}
        facts["power_limit_w"] = _number(power.get("power_limit"))
        pcie = (self.call("amdsmi_get_pcie_info") or {}).get("pcie_static", {})
        facts["pcie_max_gen"] = _gen(pcie.get("max_pcie_speed"))
        facts["pcie_max_width"] = _int(pcie.get("max_pcie_width"))
        for sensor, label in TEMPERATURES:
            slowdown, shutdown = LIMIT_FIELDS[label]
            facts[slowdown] = self.temperature(sensor, "CRITICAL")
            facts[shutdown] = self.temperature(sensor, "EMERGENCY")
        facts["thresholds_are_margin_offsets"] = False
        return facts

    def sample(self, now: float) -> Record:
        if self.slow_at is None or now - self.slow_at >= SLOW_REFRESH_S:
            self.slow, self.slow_at = self._slow(), now
        record = new_gpu_record(self.index, VENDOR)
        record.update(self.slow)
        activity = self.call("amdsmi_get_gpu_activity") or {}
        record["utilization_percent"] = _number(activity.get("gfx_activity"))
        record["memory_utilization_percent"] = _number(activity.get("umc_activity"))
        vram = self.call("amdsmi_get_gpu_vram_usage") or {}
        record["memory_used_mib"] = _number(vram.get("vram_used"))
        record["memory_total_mib"] = _number(vram.get("vram_total"))
        for sensor, label in TEMPERATURES:
            record[TEMP_LABELS[label]] = self.temperature(sensor, "CURRENT")
        power = self.call("amdsmi_get_power_info") or {}
        record["power_w"] = _number(power.get("socket_power"))
        record["power_limit_w"] = _number(power.get("power_limit"))
        clock = self.call("amdsmi_get_clock_info", self.smi.AmdSmiClkType.GFX) or {}
        record["sm_clock_mhz"] = _number(clock.get("clk"))
        record["sm_clock_max_mhz"] = _number(clock.get("max_clk"))
        return record

    def _slow(self) -> Record:
        out: Record = {}
        pcie = self.call("amdsmi_get_pcie_info") or {}
        link, top = pcie.get("pcie_metric", {}), pcie.get("pcie_static", {})
        out["pcie_gen"], out["pcie_width"] = _gen(link.get("pcie_speed")), _int(link.get("pcie_width"))
        out["pcie_max_gen"], out["pcie_max_width"] = _gen(top.get("max_pcie_speed")), _int(top.get("max_pcie_width"))
        out["pcie_replay_count"] = _int(link.get("pcie_replay_count"))
        memory = self.call("amdsmi_get_clock_info", self.smi.AmdSmiClkType.MEM) or {}
        out["memory_clock_mhz"] = _number(memory.get("clk"))
        out["memory_clock_max_mhz"] = _number(memory.get("max_clk"))
        ecc = self.call("amdsmi_get_gpu_total_ecc_count") or {}
        out["ecc_corrected_volatile"] = _int(ecc.get("correctable_count"))
        out["ecc_uncorrected_volatile"] = _int(ecc.get("uncorrectable_count"))
        return out


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _gen(mts: Any) -> int | None:
    """PCIe generation from the library's link speed in MT/s (16000 -> Gen 4)."""
    number = _number(mts)
    return None if number is None else gen_of(number / 1000.0)


class AmdLibrary:
    """Every AMD GPU the library sees, in its order; ``sample`` never raises."""

    def __init__(self, smi: Any) -> None:
        self.smi = smi
        self.gpus = [LibraryGpu(smi, i, h) for i, h in enumerate(smi.amdsmi_get_processor_handles())]

    def facts(self) -> list[Record]:
        out = []
        for gpu in self.gpus:
            try:
                out.append(gpu.facts())
            except Exception:  # a GPU that fails now: known by its place; its records say why
                out.append(new_gpu_facts(gpu.index, VENDOR))
        return out

    def sample(self, now: float, facts: list[Record]) -> list[Record]:
        records = []
        for gpu, fact in zip(self.gpus, facts):
            try:
                records.append(gpu.sample(now))
            except Exception as exc:  # a GPU gone mid-read: its error record, the others go on
                records.append(error_record(gpu.index, fact.get("uuid"), fact.get("name"), _words(exc), VENDOR))
        return records

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.smi.amdsmi_shut_down()


def open_library(report: Callable[[str], None], root: str | None = None) -> AmdLibrary | None:
    """The library source, or None (no library, another ROCm, no GPU it can see: said through
    ``report`` where there is something to say)."""
    smi, why_not = load_binding(root or rocm_root())
    if smi is None:
        if why_not:
            report(why_not)
        return None
    try:
        library = AmdLibrary(smi)
    except Exception as exc:
        report("AMD SMI library lists no GPU (%s): reading the kernel's files instead" % _words(exc))
        return None
    if not library.gpus:
        library.close()
        return None
    return library
