"""AMD Instinct telemetry as ``amd-smi … --json`` and ``rocm-smi -a --json`` print it, made
into the GPU records and facts every source returns (``gpu_records``).

``amd-smi`` (ROCm 6+): ``static`` / ``metric`` / ``process`` print a top-level list of GPUs in
ROCm 6.x and ``{"gpu_data": [...]}`` from amd-smi 26.x (ROCm 7). A value is
``{"value": N, "unit": "…"}``, a bare number, or the string ``"N/A"`` where the GPU does not
report it (MI300X has no edge sensor): that is None here, never 0.

``rocm-smi -a --json`` (deprecated, still the only tool on older installs): ``{"card0": {…},
"system": {…}}`` with every value a string and the unit in the key; ROCm 6 renamed keys
(``Card series`` -> ``Card Series``, ``GPU memory use (%)`` -> ``GPU Memory Read/Write Activity
(%)``), so each field lists its spellings, newest first.
"""

from __future__ import annotations

import re
from typing import Any

from .gpu_records import Record, new_gpu_facts, new_gpu_record

VENDOR = "amd"
# AMD's PCI vendor id as sysfs writes it (gpu.amd_present has it too: it checks for AMD cards
# without importing any AMD module; importing it from there made an import cycle)
AMD_PCI_VENDOR = "0x1002"
# hwmon temperature labels (amdgpu's) -> the record field that means the same
TEMP_LABELS = {"edge": "temperature_c", "junction": "hotspot_temperature_c", "mem": "memory_temperature_c"}
# AMD's temperature sensors (hwmon labels) -> the GPU facts fields of their crit / emergency
# limits (slowdown, shutdown): one table for the files and the library
LIMIT_FIELDS = {
    "edge": ("temperature_slowdown_c", "temperature_shutdown_c"),
    "junction": ("hotspot_temperature_slowdown_c", "hotspot_temperature_shutdown_c"),
    "mem": ("memory_temperature_max_c", "memory_temperature_shutdown_c"),
}

# PCIe transfer rate (GT/s) -> generation: what the link's speed means in the NVIDIA fields.
GEN_BY_GTS = ((2.5, 1), (5.0, 2), (8.0, 3), (16.0, 4), (32.0, 5), (64.0, 6))

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def gen_of(gts: float | None) -> int | None:
    if gts is None:
        return None
    for speed, gen in GEN_BY_GTS:
        if abs(gts - speed) < 0.05:
            return gen
    return None


def gpu_list(doc: Any) -> list[dict[str, Any]]:
    """Either amd-smi JSON shape -> its list of per-GPU dicts (anything else: [])."""
    if isinstance(doc, dict):
        doc = doc.get("gpu_data")
    if not isinstance(doc, list):
        return []
    return [g for g in doc if isinstance(g, dict)]


def num(value: Any) -> int | float | None:
    """``{"value": 99, "unit": "C"}``, ``99``, ``"99 C"``, ``"500 MHz"`` -> 99 / 500;
    ``"N/A"``, ``{"value": "N/A"}``, anything else -> None. Booleans are not numbers."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        match = _NUMBER.match(value.strip())
        if match is None:
            return None
        digits = match.group(0)
        return float(digits) if "." in digits else int(digits)
    return None


def text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value in ("", "N/A", "n/a") else value


def section(gpu: dict[str, Any], name: str) -> dict[str, Any]:
    value = gpu.get(name)
    return value if isinstance(value, dict) else {}


def mib(value: Any) -> float | None:
    """A memory size with its unit (amd-smi says MB and means MiB) -> MiB."""
    amount = num(value)
    if amount is None:
        return None
    unit = value.get("unit", "MB") if isinstance(value, dict) else "MB"
    scale = {"B": 1.0 / 2**20, "KB": 1.0 / 1024, "MB": 1.0, "GB": 1024.0}.get(str(unit).upper(), 1.0)
    return round(float(amount) * scale, 1)


# -- amd-smi static ---------------------------------------------------------------------------


def static_facts(doc: Any) -> list[Record]:
    """``amd-smi static --json`` -> one GPU facts record per GPU (GPU_FACT_FIELDS)."""
    out = []
    for position, gpu in enumerate(gpu_list(doc)):
        index = gpu.get("gpu")
        facts = new_gpu_facts(index if isinstance(index, int) else position, VENDOR)
        asic, bus, limit = section(gpu, "asic"), section(gpu, "bus"), section(gpu, "limit")
        board, driver, vram = section(gpu, "board"), section(gpu, "driver"), section(gpu, "vram")
        facts["name"] = text(asic.get("market_name")) or text(board.get("product_name"))
        facts["uuid"] = text(asic.get("asic_serial"))
        facts["bus_id"] = text(bus.get("bdf"))
        serial = text(board.get("product_serial"))
        facts["serial"] = None if serial in (None, "0") else serial
        facts["vbios_version"] = text(section(gpu, "vbios").get("version")) or text(
            section(gpu, "vbios").get("name")
        )
        facts["memory_total_mib"] = mib(vram.get("size"))
        facts["pcie_max_gen"] = gen_of(_float(num(bus.get("max_pcie_speed"))))
        facts["pcie_max_width"] = _int(num(bus.get("max_pcie_width")))
        facts["power_limit_w"] = _watts(num(limit.get("socket_power")) or num(limit.get("max_power")))
        facts["power_limit_max_w"] = _watts(num(limit.get("max_power")))
        facts["power_limit_min_w"] = _watts(num(limit.get("min_power")))
        facts["temperature_slowdown_c"] = _float(num(limit.get("slowdown_edge_temperature")))
        facts["temperature_shutdown_c"] = _float(num(limit.get("shutdown_edge_temperature")))
        facts["hotspot_temperature_slowdown_c"] = _float(num(limit.get("slowdown_hotspot_temperature")))
        facts["hotspot_temperature_shutdown_c"] = _float(num(limit.get("shutdown_hotspot_temperature")))
        facts["memory_temperature_max_c"] = _float(num(limit.get("slowdown_vram_temperature")))
        facts["memory_temperature_shutdown_c"] = _float(num(limit.get("shutdown_vram_temperature")))
        facts["thresholds_are_margin_offsets"] = False
        facts["ecc_enabled"] = _ecc_enabled(section(gpu, "ras"))
        facts["driver_version"] = _driver_version(driver)
        facts["compute_capability"] = text(asic.get("target_graphics_version"))
        out.append(facts)
    return out


def _driver_version(driver: dict[str, Any]) -> str | None:
    """The amdgpu version; an in-box driver reports the kernel banner instead (as in the
    MI210 capture, spaces squeezed out): the kernel release is the version that means."""
    version = text(driver.get("version"))
    if version is None:
        return None
    match = re.match(r"Linux\s*version\s*(\S+?)\(", version)
    return "kernel " + match.group(1) if match else version[:64]


def _ecc_enabled(ras: dict[str, Any]) -> bool | None:
    blocks = ras.get("ecc_block_state")
    if not isinstance(blocks, dict):
        return None
    umc = text(blocks.get("UMC"))  # the HBM's memory controller: "ECC on" as NVIDIA means it
    return None if umc is None else umc.upper() == "ENABLED"


# -- amd-smi metric ---------------------------------------------------------------------------


def metric_records(doc: Any) -> list[Record]:
    """``amd-smi metric --json`` -> one GPU record per GPU (GPU_FIELDS)."""
    out = []
    for position, gpu in enumerate(gpu_list(doc)):
        index = gpu.get("gpu")
        record = new_gpu_record(index if isinstance(index, int) else position, VENDOR)
        usage, power = section(gpu, "usage"), section(gpu, "power")
        temp, mem, pcie = section(gpu, "temperature"), section(gpu, "mem_usage"), section(gpu, "pcie")
        ecc, clock = section(gpu, "ecc"), section(gpu, "clock")
        record["utilization_percent"] = _float(num(usage.get("gfx_activity")))
        record["memory_utilization_percent"] = _float(num(usage.get("umc_activity")))
        record["memory_used_mib"] = mib(mem.get("used_vram"))
        record["memory_total_mib"] = mib(mem.get("total_vram"))
        record["temperature_c"] = _float(num(temp.get("edge")))
        record["hotspot_temperature_c"] = _float(num(temp.get("hotspot")))
        record["memory_temperature_c"] = _float(num(temp.get("mem")))
        record["power_w"] = _watts(num(power.get("socket_power")) or num(power.get("average_socket_power")))
        record["sm_clock_mhz"], record["sm_clock_max_mhz"] = _clock(clock, "gfx_0")
        record["memory_clock_mhz"], record["memory_clock_max_mhz"] = _clock(clock, "mem_0")
        record["pcie_width"] = _int(num(pcie.get("width")))
        record["pcie_gen"] = gen_of(_float(num(pcie.get("speed"))))
        record["pcie_replay_count"] = _int(num(pcie.get("replay_count")))
        record["ecc_corrected_volatile"] = _int(num(ecc.get("total_correctable_count")))
        record["ecc_uncorrected_volatile"] = _int(num(ecc.get("total_uncorrectable_count")))
        record["xgmi_errors_total"] = _block_errors(section(gpu, "ecc_blocks"), "XGMI_WAFL")
        record["throttled"] = _throttled(power.get("throttle_status"))
        fan = num(section(gpu, "fan").get("usage"))
        record["fan_percent"] = _float(fan)
        out.append(record)
    return out


def _clock(clock: dict[str, Any], name: str) -> tuple[float | None, float | None]:
    entry = clock.get(name)
    if not isinstance(entry, dict):
        return None, None
    return _float(num(entry.get("clk"))), _float(num(entry.get("max_clk")))


def _block_errors(blocks: dict[str, Any], name: str) -> int | None:
    block = blocks.get(name)
    if not isinstance(block, dict):
        return None
    counts = [_int(num(block.get(k))) for k in ("correctable_count", "uncorrectable_count")]
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def _throttled(status: Any) -> bool | None:
    """amd-smi's ``throttle_status``: "THROTTLED" / "UNTHROTTLED" (or a bool-ish number)."""
    word = text(status) if isinstance(status, str) else None
    if word is not None:
        upper = word.upper()
        if upper == "UNTHROTTLED":
            return False
        if upper == "THROTTLED":
            return True
        return None
    value = num(status)
    return None if value is None else bool(value)


# -- amd-smi process --------------------------------------------------------------------------


def process_lists(doc: Any) -> dict[int, list[Record]]:
    """``amd-smi process --json`` -> {GPU index: [{"pid", "name", "gpu_memory_mib"}]}."""
    out: dict[int, list[Record]] = {}
    for position, gpu in enumerate(gpu_list(doc)):
        index = gpu.get("gpu")
        index = index if isinstance(index, int) else position
        items = gpu.get("process_list")
        procs: list[Record] = []
        for item in items if isinstance(items, list) else ():
            info = item.get("process_info") if isinstance(item, dict) else None
            if not isinstance(info, dict):
                continue  # amd-smi writes "No running processes detected" here
            pid = num(info.get("pid"))
            if not isinstance(pid, int):
                continue
            memory = info.get("mem_usage") or section(info, "memory_usage").get("vram_mem")
            procs.append({"pid": pid, "name": text(info.get("name")), "gpu_memory_mib": mib(memory)})
        out[index] = procs
    return out


# -- rocm-smi -a --json -----------------------------------------------------------------------

# Record field -> (keys, newest spelling first). Values are strings with the unit in the key.
ROCM_SMI_SAMPLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("utilization_percent", ("GPU use (%)",)),
    ("memory_utilization_percent", ("GPU Memory Read/Write Activity (%)", "GPU memory use (%)")),
    ("temperature_c", ("Temperature (Sensor edge) (C)",)),
    ("hotspot_temperature_c", ("Temperature (Sensor junction) (C)",)),
    ("memory_temperature_c", ("Temperature (Sensor memory) (C)",)),
    (
        "power_w",
        ("Current Socket Graphics Package Power (W)", "Average Graphics Package Power (W)"),
    ),
    ("power_limit_w", ("Max Graphics Package Power (W)",)),
    ("sm_clock_mhz", ("sclk clock speed:",)),
    ("memory_clock_mhz", ("mclk clock speed:",)),
    ("pcie_replay_count", ("PCIe Replay Count",)),
)
ROCM_SMI_NAME = ("Device Name", "Card Series", "Card series", "Card SKU")
_CARD = re.compile(r"^card(\d+)$")
_RANGE_MAX = re.compile(r"-\s*(\d+(?:\.\d+)?)\s*Mhz", re.IGNORECASE)
_VRAM_USED = ("VRAM Total Used Memory (B)",)
_VRAM_TOTAL = ("VRAM Total Memory (B)",)


def rocm_smi_cards(doc: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(doc, dict):
        return []
    cards = []
    for key, value in doc.items():
        match = _CARD.match(key)
        if match and isinstance(value, dict):
            cards.append((int(match.group(1)), value))
    return sorted(cards, key=lambda item: item[0])


def _first(card: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in card:
            return card[key]
    return None


def rocm_smi_records(doc: Any) -> list[Record]:
    """``rocm-smi -a --json`` -> one GPU record per card."""
    out = []
    for index, card in rocm_smi_cards(doc):
        record = new_gpu_record(index, VENDOR)
        record["name"] = text(_first(card, ROCM_SMI_NAME))
        record["uuid"] = text(card.get("Unique ID"))
        for field, keys in ROCM_SMI_SAMPLE:
            value = _first(card, keys)
            if isinstance(value, str):
                value = value.strip("()")  # "(800Mhz)"
            record[field] = _float(num(value))
        record["pcie_replay_count"] = _int(record["pcie_replay_count"])
        record["sm_clock_max_mhz"] = _range_max(card.get("Valid sclk range"))
        record["memory_clock_max_mhz"] = _range_max(card.get("Valid mclk range"))
        used, total = num(_first(card, _VRAM_USED)), num(_first(card, _VRAM_TOTAL))
        record["memory_used_mib"] = None if used is None else round(used / 2**20, 1)
        record["memory_total_mib"] = None if total is None else round(total / 2**20, 1)
        if record["power_w"] is not None:
            record["power_w"] = round(record["power_w"], 1)
        out.append(record)
    return out


def rocm_smi_facts(doc: Any) -> tuple[str | None, list[Record]]:
    """-> (driver version, one GPU facts record per card)."""
    system = doc.get("system") if isinstance(doc, dict) else None
    driver = text(system.get("Driver version")) if isinstance(system, dict) else None
    out = []
    for index, card in rocm_smi_cards(doc):
        facts = new_gpu_facts(index, VENDOR)
        facts["name"] = text(_first(card, ROCM_SMI_NAME))
        facts["uuid"] = text(card.get("Unique ID"))
        facts["serial"] = text(card.get("Serial Number"))
        facts["bus_id"] = text(card.get("PCI Bus"))
        facts["vbios_version"] = text(card.get("VBIOS version"))
        facts["firmware_version"] = _smc(card)
        facts["power_limit_w"] = _watts(num(card.get("Max Graphics Package Power (W)")))
        facts["compute_capability"] = text(card.get("GFX Version"))
        facts["driver_version"] = driver
        out.append(facts)
    return driver, out


def _smc(card: dict[str, Any]) -> str | None:
    smc = text(card.get("SMC firmware version"))
    return None if smc is None else "SMC " + smc


def _range_max(value: Any) -> float | None:
    match = _RANGE_MAX.search(value) if isinstance(value, str) else None
    return float(match.group(1)) if match else None


def _float(value: int | float | None) -> float | None:
    return None if value is None else float(value)


def _int(value: int | float | None) -> int | None:
    return None if value is None else int(value)


def _watts(value: int | float | None) -> float | None:
    return None if value is None else round(float(value), 1)

