"""``nvidia-smi -q -x`` -> facts (and a sample), for every DTD seen in the wild.

Read at most once per connect: it takes ~0.4 s on one GPU and ~6 s on an 8-GPU server. It
is used for what ``--query-gpu`` cannot give: temperature thresholds and the CUDA version.

Spellings differ by release and all are accepted: DTD v11 (<= R516), v12 (R535), v13
(R590+), with or without the DOCTYPE line; ``clocks_throttle_reasons`` vs
``clocks_event_reasons``; ``power_readings`` vs ``gpu_power_readings``; thresholds as
absolute ``gpu_temp_*_threshold`` or, on GPUs with a T.Limit margin, as
``gpu_temp_*_tlimit_threshold`` offsets from that margin; pre-Ampere
``single_bit``/``double_bit`` ECC counts vs ``sram_*``/``dram_*``. Text carries units
(``36 C``, ``16x``); "no value" is a bare ``N/A``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import Any, Iterable

from .. import schema as s
from ..schema import decode_clock_event_reasons
from . import values
from .gpu_records import new_gpu_facts, new_gpu_record

# Element-name suffix of each clock-event ("throttle") reason -> its bit.
_REASON_BITS = {
    "gpu_idle": s.GPU_IDLE,
    "applications_clocks_setting": s.APPLICATIONS_CLOCKS_SETTING,
    "sw_power_cap": s.SW_POWER_CAP,
    "hw_slowdown": s.HW_SLOWDOWN,
    "sync_boost": s.SYNC_BOOST,
    "sw_thermal_slowdown": s.SW_THERMAL_SLOWDOWN,
    "hw_thermal_slowdown": s.HW_THERMAL_SLOWDOWN,
    "hw_power_brake_slowdown": s.HW_POWER_BRAKE_SLOWDOWN,
    "display_clocks_setting": s.DISPLAY_CLOCK_SETTING,
}

_COUNTERS = (
    ("clock_event_sw_power_cap_us", "sw_power_cap"),
    ("clock_event_sync_boost_us", "sync_boost"),
    ("clock_event_sw_thermal_us", "sw_therm_slowdown"),
    ("clock_event_hw_thermal_us", "hw_therm_slowdown"),
    ("clock_event_hw_power_brake_us", "hw_power_brake"),
)

# GpuFacts key -> (absolute element, T.Limit offset element) under <temperature>.
_THRESHOLDS = (
    ("temperature_shutdown_c", "gpu_temp_max_threshold", "gpu_temp_max_tlimit_threshold"),
    ("temperature_slowdown_c", "gpu_temp_slow_threshold", "gpu_temp_slow_tlimit_threshold"),
    (
        "temperature_max_operating_c",
        "gpu_temp_max_gpu_threshold",
        "gpu_temp_max_gpu_tlimit_threshold",
    ),
    (
        "memory_temperature_max_c",
        "gpu_temp_max_mem_threshold",
        "gpu_temp_max_mem_tlimit_threshold",
    ),
)


def parse_smi_xml(text: str | bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """-> (facts, records): facts as the collectors give them (``driver_version``,
    ``cuda_version``, ``nvml_version``, ``gpus``) and one GPU record per GPU.

    Raises ValueError when the text is not an ``nvidia_smi_log`` document.
    """
    if isinstance(text, str):
        text = text.encode("utf-8")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise ValueError("not XML: %s" % exc) from None
    if root.tag != "nvidia_smi_log":
        raise ValueError("not nvidia-smi -q -x output (root <%s>)" % root.tag)
    facts: dict[str, Any] = {
        "driver_version": values.text(_text(root, "driver_version")),
        "cuda_version": values.text(_text(root, "cuda_version")),
        "nvml_version": None,
        "gpus": [],
    }
    records: list[dict[str, Any]] = []
    for index, gpu in enumerate(root.findall("gpu")):
        facts["gpus"].append(_gpu_facts(index, gpu))
        records.append(_gpu_record(index, gpu))
    return facts, records


def _text(element: ElementTree.Element, path: str) -> str | None:
    """Text of the element at ``path`` below ``element``, None where it is absent."""
    found = element.find(path)
    return None if found is None else found.text


def _first(element: ElementTree.Element, *paths: str) -> str | None:
    """Text of the first of ``paths`` that exists (spellings differ by release)."""
    for path in paths:
        found = element.find(path)
        if found is not None:
            return found.text
    return None


def _power_readings(gpu: ElementTree.Element) -> ElementTree.Element | None:
    readings = gpu.find("gpu_power_readings")
    return readings if readings is not None else gpu.find("power_readings")


def _gpu_facts(index: int, gpu: ElementTree.Element) -> dict[str, Any]:
    facts = new_gpu_facts(index)
    link = "pci/pci_gpu_link_info/"
    power = _power_readings(gpu)
    facts.update(
        name=values.text(_text(gpu, "product_name")),
        uuid=values.text(_text(gpu, "uuid")),
        bus_id=values.text(_text(gpu, "pci/pci_bus_id")) or values.text(gpu.get("id")),
        serial=values.text(_text(gpu, "serial")),
        vbios_version=values.text(_text(gpu, "vbios_version")),
        memory_total_mib=values.number(_text(gpu, "fb_memory_usage/total")),
        pcie_max_gen=values.number(_text(gpu, link + "pcie_gen/max_link_gen")),
        pcie_max_width=values.number(_text(gpu, link + "link_widths/max_link_width")),
        pcie_gpu_max_gen=values.number(_text(gpu, link + "pcie_gen/max_device_link_gen")),
        pcie_host_max_gen=values.number(_text(gpu, link + "pcie_gen/max_host_link_gen")),
        persistence_mode=values.flag(_text(gpu, "persistence_mode")),
        ecc_enabled=values.flag(_text(gpu, "ecc_mode/current_ecc")),
        mig_enabled=values.flag(_text(gpu, "mig_mode/current_mig")),
    )
    if power is not None:
        facts.update(
            power_limit_w=values.watts(
                _first(power, "enforced_power_limit", "current_power_limit")
            ),
            power_limit_default_w=values.watts(_text(power, "default_power_limit")),
            power_limit_min_w=values.watts(_text(power, "min_power_limit")),
            power_limit_max_w=values.watts(_text(power, "max_power_limit")),
        )
    facts.update(_thresholds(gpu.find("temperature")))
    return facts


def _thresholds(temperature: ElementTree.Element | None) -> dict[str, Any]:
    """Thresholds in the form this driver gives them; offsets win where both exist."""
    if temperature is None:
        return {}
    for offsets in (True, False):
        found: dict[str, Any] = {
            key: values.number(_text(temperature, offset if offsets else absolute))
            for key, absolute, offset in _THRESHOLDS
        }
        if any(value is not None for value in found.values()):
            found["thresholds_are_margin_offsets"] = offsets
            return found
    return {}


def _gpu_record(index: int, gpu: ElementTree.Element) -> dict[str, Any]:
    record = new_gpu_record(index)
    link = "pci/pci_gpu_link_info/"
    power = _power_readings(gpu)
    record.update(
        uuid=values.text(_text(gpu, "uuid")),
        name=values.text(_text(gpu, "product_name")),
        utilization_percent=values.number(_text(gpu, "utilization/gpu_util")),
        memory_utilization_percent=values.number(_text(gpu, "utilization/memory_util")),
        memory_used_mib=values.number(_text(gpu, "fb_memory_usage/used")),
        memory_total_mib=values.number(_text(gpu, "fb_memory_usage/total")),
        temperature_c=values.number(_text(gpu, "temperature/gpu_temp")),
        memory_temperature_c=values.number(_text(gpu, "temperature/memory_temp")),
        temperature_margin_c=values.number(_text(gpu, "temperature/gpu_temp_tlimit")),
        sm_clock_mhz=values.number(_text(gpu, "clocks/sm_clock")),
        memory_clock_mhz=values.number(_text(gpu, "clocks/mem_clock")),
        sm_clock_max_mhz=values.number(_text(gpu, "max_clocks/sm_clock")),
        memory_clock_max_mhz=values.number(_text(gpu, "max_clocks/mem_clock")),
        pstate=values.pstate(_text(gpu, "performance_state")),
        fan_percent=values.number(_text(gpu, "fan_speed")),
        pcie_gen=values.number(
            _first(
                gpu, link + "pcie_gen/device_current_link_gen", link + "pcie_gen/current_link_gen"
            )
        ),
        pcie_width=values.number(_text(gpu, link + "link_widths/current_link_width")),
        pcie_max_gen=values.number(_text(gpu, link + "pcie_gen/max_link_gen")),
        pcie_max_width=values.number(_text(gpu, link + "link_widths/max_link_width")),
        pcie_replay_count=values.number(_text(gpu, "pci/replay_counter")),
        remapped_rows_correctable=values.number(_text(gpu, "remapped_rows/remapped_row_corr")),
        remapped_rows_uncorrectable=values.number(_text(gpu, "remapped_rows/remapped_row_unc")),
        remapped_rows_pending=values.flag(_text(gpu, "remapped_rows/remapped_row_pending")),
        remapped_rows_failure=values.flag(_text(gpu, "remapped_rows/remapped_row_failure")),
        retired_pages_pending=values.flag(_text(gpu, "retired_pages/pending_retirement")),
    )
    if power is not None:
        record["power_w"] = values.watts(_first(power, "power_draw", "average_power_draw"))
        record["power_limit_w"] = values.watts(
            _first(power, "enforced_power_limit", "current_power_limit")
        )
    mask = _reason_mask(gpu)
    record["clock_event_reasons_mask"] = mask
    record["clock_event_reasons"] = decode_clock_event_reasons(mask)
    for field, suffix in _COUNTERS:
        record[field] = values.number(
            _text(gpu, "clocks_event_reasons_counters/clocks_event_reasons_counters_" + suffix)
        )
    for kind in ("volatile", "aggregate"):
        corrected, uncorrected = _ecc_totals(gpu.find("ecc_errors/" + kind))
        record["ecc_corrected_" + kind] = corrected
        record["ecc_uncorrected_" + kind] = uncorrected
    record["processes"] = _processes(gpu.find("processes"))
    return record


def _reason_mask(gpu: ElementTree.Element) -> int | None:
    """The active clock-event reasons as NVML's bit mask, or None where none is reported."""
    block = gpu.find("clocks_event_reasons")
    prefix = "clocks_event_reason_"
    if block is None:
        block = gpu.find("clocks_throttle_reasons")
        prefix = "clocks_throttle_reason_"
    if block is None:
        return None
    mask: int | None = None
    for child in block:
        bit = _REASON_BITS.get(child.tag[len(prefix) :]) if child.tag.startswith(prefix) else None
        active = values.flag(child.text)
        if bit is None or active is None:
            continue
        mask = (mask or 0) | (bit if active else 0)
    return mask


def _ecc_totals(block: ElementTree.Element | None) -> tuple[float | None, float | None]:
    """(corrected, uncorrected) for one of <volatile>/<aggregate>; None where not reported."""
    if block is None:
        return None, None
    if block.find("single_bit") is not None:  # pre-Ampere layout
        return (
            values.number(_text(block, "single_bit/total")),
            values.number(_text(block, "double_bit/total")),
        )
    corrected = _sum(block, ("sram_correctable", "dram_correctable"))
    uncorrected = _sum(
        block,
        (
            "sram_uncorrectable",
            "sram_uncorrectable_parity",
            "sram_uncorrectable_secded",
            "dram_uncorrectable",
        ),
    )
    return corrected, uncorrected


def _sum(block: ElementTree.Element, names: Iterable[str]) -> float | None:
    read = [values.number(_text(block, name)) for name in names]
    numbers = [n for n in read if n is not None]
    return sum(numbers) if numbers else None


def _processes(block: ElementTree.Element | None) -> list[dict[str, Any]]:
    if block is None:
        return []
    processes: list[dict[str, Any]] = []
    for info in block.findall("process_info"):
        pid = values.number(_text(info, "pid"))
        if isinstance(pid, int):
            processes.append(
                {
                    "pid": pid,
                    "name": values.text(_text(info, "process_name")),
                    "gpu_memory_mib": values.number(_text(info, "used_memory")),
                }
            )
    return processes
