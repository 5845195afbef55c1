"""``nvidia-smi -q`` (text) -> GPU records (the fields of ``GPU_FIELDS``) and facts.

The layout (as in the captures in tests/fixtures/nvidia-smi-text/): ``Key : value`` lines with the colon at column 34 or
55 (so split on the first `` : ``), 4-space nesting, a key without a value opens a section.
Spellings change by release (``Clocks Throttle Reasons`` -> ``Clocks Event Reasons``,
``GPU T.Limit Temp`` -> ``GPU Current T.Limit Temp``, ``Gpu`` -> ``GPU``), R610 appends
``[Deprecated; …]`` to the driver version, and some drivers print damaged keys such as
``Invalid HW Slowdown``: a key we do not know is lost, never the GPU. The default table
(``nvidia-smi`` without ``-q``) is a different format: do not feed it here.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from .. import schema as s
from ..schema import decode_clock_event_reasons
from . import values as v
from .gpu_records import new_gpu_facts, new_gpu_record

_DEPRECATED = re.compile(r"\s*\[Deprecated[^\]]*\]\s*$")

# Keys of the clock-event ("throttle") reason section -> their bits.
_REASON_BITS = {
    "idle": s.GPU_IDLE,
    "applications clocks setting": s.APPLICATIONS_CLOCKS_SETTING,
    "sw power cap": s.SW_POWER_CAP,
    "hw slowdown": s.HW_SLOWDOWN,
    "sync boost": s.SYNC_BOOST,
    "sw thermal slowdown": s.SW_THERMAL_SLOWDOWN,
    "hw thermal slowdown": s.HW_THERMAL_SLOWDOWN,
    "hw power brake slowdown": s.HW_POWER_BRAKE_SLOWDOWN,
    "display clock setting": s.DISPLAY_CLOCK_SETTING,
}
_REASON_COUNTERS = {
    "sw power capping": "clock_event_sw_power_cap_us",
    "sync boost": "clock_event_sync_boost_us",
    "sw thermal slowdown": "clock_event_sw_thermal_us",
    "hw thermal slowdown": "clock_event_hw_thermal_us",
    "hw power braking": "clock_event_hw_power_brake_us",
}


class _Node:
    """One line of the output: its key, its value (None for a section) and what it nests."""

    __slots__ = ("key", "value", "children", "_index")

    def __init__(self, key: str, value: str | None) -> None:
        self.key = key
        self.value = value
        self.children: list[_Node] = []
        self._index: dict[str, _Node] | None = None

    def child(self, *keys: str) -> _Node | None:
        """The first child named by one of ``keys`` (case-insensitive), or None."""
        if self._index is None:
            self._index = {}
            for node in self.children:
                self._index.setdefault(node.key.lower(), node)
        for key in keys:
            found = self._index.get(key.lower())
            if found is not None:
                return found
        return None

    def get(self, *path: str | tuple[str, ...]) -> str | None:
        """The value at ``path``; each step may be a tuple of alternative spellings."""
        node: _Node | None = self
        for step in path:
            node = node.child(*(step if isinstance(step, tuple) else (step,))) if node else None
        return node.value if node is not None else None

    def walk(self) -> Iterator[_Node]:
        for node in self.children:
            yield node
            yield from node.walk()

    def find(self, key: str) -> _Node | None:
        """The first descendant named ``key`` at any depth (for sections that moved in R610)."""
        key = key.lower()
        for node in self.walk():
            if node.key.lower() == key:
                return node
        return None


def _tree(text: str) -> _Node:
    root = _Node("", None)
    stack = [root]  # stack[d] = the latest node at depth d - 1
    for line in text.splitlines():
        body = line.strip()
        if not body or body.startswith("="):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4
        key, sep, value = body.partition(" : ")
        node = _Node(key.strip(), value.strip() if sep else None)
        del stack[depth + 1 :]
        stack[-1].children.append(node)
        stack.append(node)
    return root


def _without_deprecation(raw: str | None) -> str | None:
    return v.text(_DEPRECATED.sub("", raw)) if raw is not None else None


def parse(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """-> (facts, records): facts holds ``driver_version``, ``cuda_version`` and ``gpus``
    (dicts with the keys of ``GpuFacts``); records are GPU records in the order printed."""
    root = _tree(text)
    facts: dict[str, Any] = {
        "driver_version": _without_deprecation(root.get("Driver Version")) or v.text(root.get("KMD Version")),
        "cuda_version": _without_deprecation(root.get("CUDA Version")) or v.text(root.get("CUDA UMD Version")),
        "gpus": [],
    }
    records: list[dict[str, Any]] = []
    sections = [n for n in root.children if n.value is None and n.key.startswith("GPU ")]
    for index, section in enumerate(sections):
        records.append(_record(section, index))
        facts["gpus"].append(_facts(section, index))
    return facts, records


def _record(gpu: _Node, index: int) -> dict[str, Any]:
    rec = new_gpu_record(index)
    rec["uuid"] = v.text(gpu.get("GPU UUID"))
    rec["name"] = v.text(gpu.get("Product Name"))
    rec["utilization_percent"] = v.number(gpu.get("Utilization", "GPU"))
    rec["memory_utilization_percent"] = v.number(gpu.get("Utilization", "Memory"))
    rec["memory_used_mib"] = v.number(gpu.get("FB Memory Usage", "Used"))
    rec["memory_total_mib"] = v.number(gpu.get("FB Memory Usage", "Total"))
    rec["temperature_c"] = v.number(gpu.get("Temperature", "GPU Current Temp"))
    rec["memory_temperature_c"] = v.number(gpu.get("Temperature", "Memory Current Temp"))
    rec["temperature_margin_c"] = v.number(gpu.get("Temperature", ("GPU Current T.Limit Temp", "GPU T.Limit Temp")))
    power = gpu.child("GPU Power Readings", "Power Readings") or _Node("", None)
    # "Power Draw" until R550; then an average (preferred, as --query-gpu's power.draw) and an
    # instantaneous reading, either of which may be N/A.
    rec["power_w"] = _first_watts(power, "Power Draw", "Average Power Draw", "Instantaneous Power Draw")
    rec["power_limit_w"] = _limit(power, "Current Power Limit", "Enforced Power Limit")
    rec["sm_clock_mhz"] = v.number(gpu.get("Clocks", "SM"))
    rec["memory_clock_mhz"] = v.number(gpu.get("Clocks", "Memory"))
    rec["sm_clock_max_mhz"] = v.number(gpu.get("Max Clocks", "SM"))
    rec["memory_clock_max_mhz"] = v.number(gpu.get("Max Clocks", "Memory"))
    rec["pstate"] = v.pstate(gpu.get("Performance State"))
    rec["fan_percent"] = v.number(gpu.get("Fan Speed"))
    rec["clock_event_reasons_mask"] = _reason_mask(gpu.child("Clocks Event Reasons", "Clocks Throttle Reasons"))
    rec["clock_event_reasons"] = decode_clock_event_reasons(rec["clock_event_reasons_mask"])
    counters = gpu.child("Clocks Event Reasons Counters", "Clocks Throttle Reasons Counters")
    for node in counters.children if counters else ():
        field = _REASON_COUNTERS.get(node.key.lower())
        if field:
            rec[field] = v.number(node.value)
    link = ("PCI", "GPU Link Info")
    rec["pcie_gen"] = v.number(gpu.get(*link, "PCIe Generation", ("Device Current", "Current")))
    rec["pcie_max_gen"] = v.number(gpu.get(*link, "PCIe Generation", "Max"))
    rec["pcie_width"] = v.number(gpu.get(*link, "Link Width", "Current"))
    rec["pcie_max_width"] = v.number(gpu.get(*link, "Link Width", "Max"))
    rec["pcie_replay_count"] = v.number(gpu.get("PCI", "Replays Since Reset"))
    ecc = gpu.child("ECC Errors")
    if ecc is not None:
        rec["ecc_corrected_volatile"], rec["ecc_uncorrected_volatile"] = _ecc_totals(ecc.child("Volatile"))
        rec["ecc_corrected_aggregate"], rec["ecc_uncorrected_aggregate"] = _ecc_totals(ecc.child("Aggregate"))
    rows = ("Remapped Rows",)
    rec["remapped_rows_correctable"] = v.number(gpu.get(*rows, "Correctable Error"))
    rec["remapped_rows_uncorrectable"] = v.number(gpu.get(*rows, "Uncorrectable Error"))
    rec["remapped_rows_pending"] = v.flag(gpu.get(*rows, "Pending"))
    rec["remapped_rows_failure"] = v.flag(gpu.get(*rows, "Remapping Failure Occurred"))
    rec["retired_pages_pending"] = v.flag(
        gpu.get("Retired Pages", ("Pending Page Blacklist", "Pending Page Retirement"))
    )
    rec["processes"] = _processes(gpu.child("Processes"))
    return rec


def _facts(gpu: _Node, index: int) -> dict[str, Any]:
    facts = new_gpu_facts(index)
    facts["name"] = v.text(gpu.get("Product Name"))
    facts["uuid"] = v.text(gpu.get("GPU UUID"))
    facts["bus_id"] = v.text(gpu.get("PCI", "Bus Id")) or gpu.key.split(" ", 1)[1]
    facts["serial"] = v.text(gpu.get("Serial Number"))
    facts["vbios_version"] = v.text(gpu.get("VBIOS Version"))
    facts["memory_total_mib"] = v.number(gpu.get("FB Memory Usage", "Total"))
    link = ("PCI", "GPU Link Info")
    facts["pcie_max_gen"] = v.number(gpu.get(*link, "PCIe Generation", "Max"))
    facts["pcie_max_width"] = v.number(gpu.get(*link, "Link Width", "Max"))
    facts["pcie_gpu_max_gen"] = v.number(gpu.get(*link, "PCIe Generation", "Device Max"))
    facts["pcie_host_max_gen"] = v.number(gpu.get(*link, "PCIe Generation", "Host Max"))
    facts["persistence_mode"] = v.flag(gpu.get("Persistence Mode"))
    facts["ecc_enabled"] = v.flag(gpu.get("ECC Mode", "Current"))
    facts["mig_enabled"] = v.flag(gpu.get("MIG Mode", "Current"))
    power = gpu.child("GPU Power Readings", "Power Readings") or _Node("", None)
    facts["power_limit_w"] = _limit(power, "Current Power Limit", "Enforced Power Limit")
    facts["power_limit_default_w"] = _limit(power, "Default Power Limit")
    facts["power_limit_min_w"] = _limit(power, "Min Power Limit")
    facts["power_limit_max_w"] = _limit(power, "Max Power Limit")
    facts.update(_thresholds(gpu.child("Temperature")))
    return facts


def _first_watts(power: _Node, *keys: str) -> float | None:
    for key in keys:
        watts = v.watts(power.get(key))
        if watts is not None:
            return watts
    return None


def _limit(power: _Node, *keys: str) -> float | None:
    """A power limit, also where R610 nests it under ``GPU Ceiling Power Limit``."""
    for key in keys:
        node = power.find(key)
        watts = v.watts(node.value) if node is not None else None
        if watts is not None:
            return watts
    return None


def _thresholds(temperature: _Node | None) -> dict[str, Any]:
    """Absolute thresholds (``GPU Shutdown Temp``) or offsets from the T.Limit margin
    (``GPU Shutdown T.Limit Temp``), whichever this driver prints with a value."""
    out: dict[str, Any] = {
        "temperature_shutdown_c": None,
        "temperature_slowdown_c": None,
        "temperature_max_operating_c": None,
        "memory_temperature_max_c": None,
        "thresholds_are_margin_offsets": None,
    }
    if temperature is None:
        return out
    for offsets, infix in ((True, " T.Limit"), (False, "")):
        found: dict[str, Any] = {
            "temperature_shutdown_c": v.number(temperature.get("GPU Shutdown%s Temp" % infix)),
            "temperature_slowdown_c": v.number(temperature.get("GPU Slowdown%s Temp" % infix)),
            "temperature_max_operating_c": v.number(temperature.get("GPU Max Operating%s Temp" % infix)),
            "memory_temperature_max_c": v.number(temperature.get("Memory Max Operating%s Temp" % infix)),
        }
        if any(value is not None for value in found.values()):
            found["thresholds_are_margin_offsets"] = offsets
            return found
    return out


def _reason_mask(section: _Node | None) -> int | None:
    """The active-reason bits, or None when any reason line is missing or unreadable: a
    damaged key (``Invalid HW Slowdown``) leaves its bit unknown, and a mask must not lie."""
    if section is None:
        return None
    mask, seen = 0, 0
    for node in section.walk():
        bit = _REASON_BITS.get(node.key.lower())
        active = v.flag(node.value)
        if bit is None or active is None:
            continue
        seen |= bit
        if active:
            mask |= bit
    return mask if seen == sum(_REASON_BITS.values()) else None


def _ecc_totals(section: _Node | None) -> tuple[float | None, float | None]:
    """(corrected, uncorrected) summed over the locations printed; None where none has a value.

    Layouts: ``SRAM/DRAM Correctable|Uncorrectable[ Parity|SEC-DED]`` (Ampere+), or
    ``Single Bit`` / ``Double Bit`` sections with a ``Total`` (Volta and older).
    """
    if section is None:
        return None, None
    single, double = section.child("Single Bit"), section.child("Double Bit")
    if single is not None or double is not None:
        return (
            v.number(single.get("Total")) if single else None,
            v.number(double.get("Total")) if double else None,
        )
    corrected: float | None = None
    uncorrected: float | None = None
    for node in section.children:
        key, count = node.key.lower(), v.number(node.value)
        if count is None:
            continue
        if "uncorrectable" in key:
            uncorrected = (uncorrected or 0) + count
        elif "correctable" in key:
            corrected = (corrected or 0) + count
    return corrected, uncorrected


def _processes(section: _Node | None) -> list[dict[str, Any]]:
    """Compute processes (type ``C`` or ``C+G``) as ``{"pid", "name", "gpu_memory_mib"}``."""
    out: list[dict[str, Any]] = []
    for node in section.children if section else ():
        if node.key.lower() != "process id" or "C" not in (node.get("Type") or ""):
            continue
        pid = v.number(node.value)
        if isinstance(pid, int):
            out.append(
                {
                    "pid": pid,
                    "name": v.text(node.get("Name")),
                    "gpu_memory_mib": v.number(node.get("Used GPU Memory")),
                }
            )
    return out
