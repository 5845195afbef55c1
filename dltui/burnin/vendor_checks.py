"""The burn-in's per-GPU checks of AMD and Intel Gaudi GPUs, from the probe's own readings of
each vendor's tool: the same before/after counters as on NVIDIA (ECC/RAS, PCIe replays; AMD's
XGMI link errors), AMD's throttle status under load, temperature (AMD's junction against the
slowdown limit AMD publishes) and power under load, and a GPU or AIP that stops answering."""

from __future__ import annotations

from dltui.config import BurninSection
from dltui.core.vendors import vendor

from .fold import GpuFold
from .gpu_checks import ecc_item, facts_gpu, pcie_item, thermal_item
from .items import FAIL, NOT_RUN, PASS, WARN, Item, NodeRun


def vendor_gpu_checks(key: str, index: int, gf: GpuFold, run: NodeRun,
                      cfg: BurninSection) -> list[Item]:
    """AMD and Gaudi: the same before/after counters from the probe's own readings (ECC/RAS,
    PCIe replays; AMD's XGMI errors), the vendor's throttle status under load, temperature
    and power under load, and a GPU that stopped answering (error records) fails."""
    items = [_answering(key, index, gf), ecc_item(index, gf)]
    if key == "amd":
        items += [_xgmi(index, gf), _vendor_throttle(index, gf)]
    items += [_vendor_thermal(key, index, gf, run, cfg), _vendor_power(index, gf)]
    last = gf.load_last
    if last is not None and last.pcie_gen is not None:
        items.append(pcie_item(index, gf, cfg))
    elif last is not None and last.pcie_replay_count is not None:
        items.append(_replays(index, gf, cfg))  # rocm-smi: replays without the link state
    return items  # hl-smi -Q gives neither: no PCIe item


def _replays(index: int, gf: GpuFold, cfg: BurninSection) -> Item:
    d = gf.delta("pcie_replay_count")
    step = "reseat the GPU or its riser/cable"
    if d and d > cfg.pcie_replay_max:
        return Item("pcie", FAIL, f"{d} PCIe replays during the run", step, index)
    if d:
        return Item("pcie", WARN, f"{d} PCIe replays during the run (ideally 0)",
                    "watch it; reseat if it grows", index)
    if d is None:
        return Item("pcie", NOT_RUN, "no PCIe replay count over the run", "", index)
    return Item("pcie", PASS, "no PCIe replays (link state not reported)", "", index)


def _answering(key: str, index: int, gf: GpuFold) -> Item:
    if gf.error_n:
        who = vendor(key)
        what = "AIP" if key == "intel" else "GPU"
        return Item("answering", FAIL,
                    f"{what} stopped answering in {gf.error_n} of {gf.load_n} samples under "
                    f"load: {gf.last_error}",
                    f"{who.lost}; reseat, then RMA if it comes back", index)
    return Item("answering", PASS, f"answered all {gf.load_n} samples under load", "", index)


def _xgmi(index: int, gf: GpuFold) -> Item:
    d = gf.delta("xgmi_errors_total")
    if d:
        return Item("xgmi", FAIL, f"XGMI link errors +{d} during the run",
                    "reseat the GPU (its XGMI links to the others); RMA if they keep rising",
                    index)
    if d is None:
        return Item("xgmi", NOT_RUN, "this GPU reports no XGMI error counter", "", index)
    return Item("xgmi", PASS, "no XGMI link errors", "", index)


def _vendor_throttle(index: int, gf: GpuFold) -> Item:
    if not gf.throttle_seen:
        return Item("throttle", NOT_RUN,
                    "this GPU's source reports no throttle status (only amd-smi gives it)",
                    "", index)
    if gf.throttled_n:
        # AMD's status does not say why (power cap or thermal): a warning, with where to look
        return Item("throttle", WARN,
                    f"AMD reported the GPU throttled in {gf.throttled_n} of {gf.load_n} "
                    "samples under load",
                    "amd-smi metric --throttle names the limit; fix airflow or power if "
                    "thermal", index)
    return Item("throttle", PASS, "never throttled under load", "", index)


def _vendor_thermal(key: str, index: int, gf: GpuFold, run: NodeRun,
                    cfg: BurninSection) -> Item:
    """The core (AMD edge, Gaudi AIP) as on NVIDIA, then AMD's junction against the slowdown
    limit AMD publishes for the GPU (amd-smi static), as close as NVIDIA's margin may come."""
    who = vendor(key)
    item = thermal_item(index, gf, run, cfg, who.core_sensor)
    hot = gf.hotspot_max
    if hot is None or item.status == FAIL:
        return item
    slowdown = facts_gpu(run, index, "hotspot_temperature_slowdown_c")
    if slowdown is not None and hot >= slowdown - cfg.margin_min_c:
        return Item("thermal", FAIL,
                    f"junction {hot:g} °C, {who.label} slows clocks at {slowdown:g} °C",
                    "fix airflow, or lower the power limit or clocks, then rerun", index)
    said = f"junction max {hot:g} °C"
    if item.status == NOT_RUN:  # MI300X: no edge sensor, the junction is its temperature
        return Item("thermal", PASS, said, "", index)
    return Item("thermal", item.status, f"{item.evidence}, {said}", item.next_step, index)


def _vendor_power(index: int, gf: GpuFold) -> Item:
    late = gf.after_ramp()
    if not late.power.n or late.power_limit is None:
        return Item("power", NOT_RUN, "no power or power limit reported", "", index)
    return Item("power", PASS,
                f"median {late.power.median():.0f} W of {late.power_limit:.0f} W under load",
                "", index)
