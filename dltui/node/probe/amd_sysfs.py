"""AMD GPUs from the amdgpu kernel driver's own files: the cheapest source there is (a few
small reads per GPU per sample, no process, no ROCm install needed).

Per card, ``/sys/class/drm/cardN/device/`` (a link to the PCI device) holds
``gpu_busy_percent``, ``mem_busy_percent``, ``mem_info_vram_used/total`` (bytes),
``current_link_speed/width`` and ``max_link_speed/width`` ("16.0 GT/s PCIe", "16"),
``pcie_replay_count``, ``pp_dpm_sclk`` / ``pp_dpm_mclk`` (levels, the current one starred),
``ras/<block>_err_count`` ("ue: 0" / "ce: 0") where RAS is enabled, and ``hwmon/hwmonM/``
with ``temp*_input`` (millidegrees; ``temp*_label`` edge / junction / mem), ``temp*_crit``
(slowdown) and ``temp*_emergency`` (shutdown), ``power1_average`` or ``power1_input`` and
``power1_cap`` (µW). A file the card does not have is None, never 0.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .amd_json import AMD_PCI_VENDOR, LIMIT_FIELDS, TEMP_LABELS, VENDOR, gen_of
from .amd_metrics import throttled
from .gpu_records import Record, new_gpu_facts, new_gpu_record
from .infiniband import Attributes  # sysfs files kept open and re-read with pread
from .infiniband import read_attribute as read

SLOW_REFRESH_S = 10.0  # counters and limits (replays, RAS, caps, link maxima) are read this often
_CARD = re.compile(r"^card(\d+)$")
_DPM = re.compile(r"^\s*\d+:\s*(\d+)\s*Mhz(\s*\*)?", re.IGNORECASE)
_GTS = re.compile(r"^(\d+(?:\.\d+)?)\s*GT/s")
_RAS = re.compile(r"^(ue|ce):\s*(\d+)", re.MULTILINE)



def read_int(path: str) -> int | None:
    return to_int(read(path))


def to_int(value: str | None) -> int | None:
    try:
        return int(value, 0) if value is not None else None
    except ValueError:
        return None


class AmdCard:
    """One amdgpu card's files, located once."""

    def __init__(self, index: int, device_dir: str) -> None:
        self.index = index
        self.dir = device_dir
        self.bus_id = os.path.basename(os.path.realpath(device_dir))
        self.temps: dict[str, str] = {}  # label -> temp*_input path
        self.hwmon: str | None = None
        hwmon_root = os.path.join(device_dir, "hwmon")
        for name in sorted(_listdir(hwmon_root)):
            self.hwmon = os.path.join(hwmon_root, name)
            for entry in sorted(_listdir(self.hwmon)):
                if entry.startswith("temp") and entry.endswith("_label"):
                    label = read(os.path.join(self.hwmon, entry))
                    if label in TEMP_LABELS:
                        self.temps[label] = os.path.join(self.hwmon, entry[: -len("label")] + "input")
            break  # amdgpu registers one hwmon device per card
        self.power_path = self._first_hwmon("power1_average", "power1_input")
        self.slow: Record = {}
        self.slow_at: float | None = None
        self.files = Attributes()  # the per-sample files, kept open (pread)
        self.busy = self.file("gpu_busy_percent")
        self.mem_busy = self.file("mem_busy_percent")
        self.vram_used = self.file("mem_info_vram_used")
        self.sclk = self.file("pp_dpm_sclk")
        metrics = self.file("gpu_metrics")  # binary: the throttle status (amd_metrics)
        self.metrics = metrics if os.path.exists(metrics) else None  # older kernels: no open per sample

    def _first_hwmon(self, *names: str) -> str | None:
        for name in names:
            if self.hwmon is not None and os.path.exists(os.path.join(self.hwmon, name)):
                return os.path.join(self.hwmon, name)
        return None

    def file(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def sample(self, now: float) -> Record:
        """A record: what moves each sample read now, the cumulative counters and limits
        every SLOW_REFRESH_S (as the NVML source reads its slow set), repeated between."""
        if self.slow_at is None or now - self.slow_at >= SLOW_REFRESH_S:
            self.slow, self.slow_at = self._slow(), now
        record = new_gpu_record(self.index, VENDOR)
        record.update(self.slow)
        read = self.files.read
        record["utilization_percent"] = _float(to_int(read(self.busy)))
        record["memory_utilization_percent"] = _float(to_int(read(self.mem_busy)))
        used = to_int(read(self.vram_used))
        record["memory_used_mib"] = None if used is None else round(used / 2**20, 1)
        for label, field in TEMP_LABELS.items():
            path = self.temps.get(label)
            milli = to_int(read(path)) if path is not None else None
            record[field] = None if milli is None else milli / 1000.0
        micro = to_int(read(self.power_path)) if self.power_path is not None else None
        record["power_w"] = None if micro is None else round(micro / 1e6, 1)
        record["sm_clock_mhz"], record["sm_clock_max_mhz"] = dpm(read(self.sclk))
        record["throttled"] = throttled(self.files.raw(self.metrics)) if self.metrics is not None else None
        return record

    def _slow(self) -> Record:
        """Counters and limits: they move rarely, and a rise is judged across samples anyway."""
        out: Record = {}
        total = read_int(self.file("mem_info_vram_total"))
        out["memory_total_mib"] = None if total is None else round(total / 2**20, 1)
        cap = read_int(os.path.join(self.hwmon, "power1_cap")) if self.hwmon is not None else None
        out["power_limit_w"] = None if cap is None else round(cap / 1e6, 1)
        out["pcie_max_gen"] = gen_of(gts(read(self.file("max_link_speed"))))
        out["pcie_max_width"] = read_int(self.file("max_link_width"))
        out["pcie_replay_count"] = read_int(self.file("pcie_replay_count"))
        # the link trains down at idle and up under load: a link stuck low lasts, and is judged
        # over pcie_degraded's for_s, so it is read with the slow set
        out["pcie_gen"] = gen_of(gts(read(self.file("current_link_speed"))))
        out["pcie_width"] = read_int(self.file("current_link_width"))
        out["memory_clock_mhz"], out["memory_clock_max_mhz"] = dpm(read(self.file("pp_dpm_mclk")))
        umc = ras_counts(read(self.file("ras/umc_err_count")))
        out["ecc_corrected_volatile"], out["ecc_uncorrected_volatile"] = umc
        xgmi = ras_counts(read(self.file("ras/xgmi_wafl_err_count")))
        out["xgmi_errors_total"] = None if xgmi == (None, None) else (xgmi[0] or 0) + (xgmi[1] or 0)
        return out

    def close(self) -> None:
        self.files.close()

    def facts(self) -> Record:
        facts = new_gpu_facts(self.index, VENDOR)
        facts["bus_id"] = self.bus_id
        device = read(self.file("device"))
        facts["name"] = read(self.file("product_name")) or ("AMD GPU %s" % device if device else None)
        facts["uuid"] = read(self.file("unique_id"))
        facts["serial"] = read(self.file("serial_number"))
        facts["vbios_version"] = read(self.file("vbios_version"))
        total = read_int(self.file("mem_info_vram_total"))
        facts["memory_total_mib"] = None if total is None else round(total / 2**20, 1)
        facts["pcie_max_gen"] = gen_of(gts(read(self.file("max_link_speed"))))
        facts["pcie_max_width"] = read_int(self.file("max_link_width"))
        if self.hwmon is not None:
            cap = read_int(os.path.join(self.hwmon, "power1_cap"))
            facts["power_limit_w"] = None if cap is None else round(cap / 1e6, 1)
            top = read_int(os.path.join(self.hwmon, "power1_cap_max"))
            facts["power_limit_max_w"] = None if top is None else round(top / 1e6, 1)
            for label, path in self.temps.items():
                slowdown, shutdown = LIMIT_FIELDS[label]
                for field, suffix in ((slowdown, "crit"), (shutdown, "emergency")):
                    milli = read_int(path[: -len("input")] + suffix)
                    facts[field] = None if milli is None else milli / 1000.0
        facts["thresholds_are_margin_offsets"] = False
        facts["driver_version"] = read(os.path.join(self.dir, "driver", "module", "version"))
        return facts


def find_cards(sys_dir: str) -> list[AmdCard]:
    """The amdgpu cards under ``sys_dir``/class/drm (connectors like card0-DP-1 skipped)."""
    drm = os.path.join(sys_dir, "class", "drm")
    cards = []
    for name in _listdir(drm):
        match = _CARD.match(name)
        device = os.path.join(drm, name, "device")
        if match is None or read(os.path.join(device, "vendor")) != AMD_PCI_VENDOR:
            continue
        if not os.path.exists(os.path.join(device, "gpu_busy_percent")):
            continue  # not an amdgpu compute/graphics device
        cards.append((int(match.group(1)), device))
    cards.sort()
    return [AmdCard(position, device) for position, (_, device) in enumerate(cards)]


def dpm(text: str | None) -> tuple:
    """``pp_dpm_sclk`` ("0: 500Mhz\\n1: 800Mhz *\\n2: 1700Mhz") -> (current, highest) MHz."""
    current, highest = None, None
    for line in (text or "").splitlines():
        match = _DPM.match(line)
        if match is None:
            continue
        mhz = float(match.group(1))
        highest = mhz if highest is None else max(highest, mhz)
        if match.group(2):
            current = mhz
    return current, highest


def gts(text: str | None) -> float | None:
    match = _GTS.match(text or "")
    return float(match.group(1)) if match else None


def ras_counts(text: str | None) -> tuple:
    """``"ue: 0\\nce: 3"`` -> (corrected 3, uncorrected 0); (None, None) without the file."""
    found: dict[str, int] = {kind: int(count) for kind, count in _RAS.findall(text or "")}
    return found.get("ce"), found.get("ue")


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
