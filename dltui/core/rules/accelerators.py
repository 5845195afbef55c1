"""Rules for what AMD Instinct and Intel Gaudi report in their own way: temperatures against
the vendor's own slowdown and shutdown limits (``amd-smi static``'s limit section), the vendor's
throttle status, power at its cap where no clock-event mask says why, and XGMI (AMD's NVLink)
link errors. NVIDIA's counterparts (T.Limit margin, clock-event bits, NVLink) have their own
rules; each rule here is N/A on a GPU whose vendor does not report its signal.
"""

from __future__ import annotations

from typing import TypedDict

from ..models import GpuSample
from ..timeline import CRITICAL, INFO, WARNING
from ..vendors import vendor
from .base import CLEAR, GPU, HOLD, Finding, Rule, rise_since_last
from .memory import GpuMemory

# sensor field -> (its name in words, the facts' slowdown / shutdown limits)
_SENSORS = (
    ("temperature_c", None, "temperature_slowdown_c", "temperature_shutdown_c"),
    ("hotspot_temperature_c", "junction (hotspot)", "hotspot_temperature_slowdown_c", "hotspot_temperature_shutdown_c"),
)


def vendor_temp_limit(g: GpuSample, mem: GpuMemory, p: VendorTempLimitParams) -> object:
    """The hottest sensor relative to the slowdown limit the vendor itself publishes."""
    f = mem.facts
    if f is None:
        return None
    worst = None
    for field, words, slowdown_field, shutdown_field in _SENSORS:
        t, slowdown = getattr(g, field), getattr(f, slowdown_field)
        if t is None or slowdown is None:
            continue
        left = slowdown - t
        if worst is None or left < worst[0]:
            worst = (left, t, slowdown, getattr(f, shutdown_field), words or vendor(g.vendor).core_sensor)
    if worst is None:
        return None
    left, t, slowdown, shutdown, name = worst
    if left > p["warning_below"]:
        return CLEAR if left > p["warning_below"] + p["hysteresis"] else HOLD
    who = vendor(g.vendor)
    limits = f"{who.label} slows clocks at {slowdown:g} °C" + (
        f" and shuts the GPU down at {shutdown:g} °C" if shutdown is not None else ""
    )
    return Finding(
        CRITICAL if left <= 0 else WARNING,
        f"{name} {t:.0f} °C, {max(left, 0):.0f} °C below the slowdown limit" if left > 0
        else f"{name} {t:.0f} °C at or over the slowdown limit",
        f"check airflow, fans and inlet temperature; `{who.tool} metric --temperature` shows every sensor",
        limits,
        {"temperature_c": t, "slowdown_c": slowdown, "shutdown_c": shutdown},
    )


def vendor_throttled(g: GpuSample, mem: GpuMemory, p: VendorThrottledParams) -> object:
    """The vendor's own "clocks held back" flag (AMD ``throttle_status``)."""
    if g.throttled is None:
        return None
    if not g.throttled:
        return CLEAR
    who = vendor(g.vendor)
    power = f"power {g.power_w:.0f} of {g.power_limit_w:.0f} W" if g.power_w and g.power_limit_w else ""
    hot = f"junction {g.hotspot_temperature_c:.0f} °C" if g.hotspot_temperature_c is not None else ""
    return Finding(
        WARNING,
        f"{who.label} reports the GPU throttled",
        f"`{who.tool} metric --throttle` names the limit (power, thermal, PROCHOT, HBM); "
        "check cooling and the power cap",
        ", ".join(x for x in (power, hot) if x),
        {"power_w": g.power_w, "hotspot_temperature_c": g.hotspot_temperature_c},
    )


def power_at_cap(g: GpuSample, mem: GpuMemory, p: PowerAtCapParams) -> object:
    """Power held at the cap under load, for GPUs without NVIDIA's clock-event mask to say so."""
    if g.clock_event_reasons_mask is not None:
        return None  # an NVIDIA-like source: power_capped reads the mask's SW power cap bit
    power, cap, util = g.power_w, g.power_limit_w, g.utilization_percent
    if power is None or not cap or util is None:
        return None
    if not (power >= p["ratio"] * cap and util > p["busy_util"]):
        return CLEAR
    who = vendor(g.vendor)
    return Finding(
        INFO,
        f"holding power at the cap: {power:.0f} of {cap:.0f} W at {util:.0f} % utilisation",
        f"expected at full load; raise the cap (`{who.tool}`) only if the PSU and cooling allow",
        evidence={"power_w": power, "power_limit_w": cap},
    )


def xgmi_errors(g: GpuSample, mem: GpuMemory, p: XgmiErrorsParams) -> object:
    """A rise in the XGMI links' error count (the RAS counts of AMD's XGMI_WAFL block)."""
    now = g.xgmi_errors_total
    if now is None:
        return None
    rise = rise_since_last(mem, "xgmi_errors_total", now)
    if not rise:
        return CLEAR
    return Finding(
        CRITICAL,
        f"XGMI link errors +{rise:.0f} ({now} since the driver loaded)",
        "a GPU-to-GPU link is failing: drain the node, check `amd-smi xgmi -m` and the "
        "XGMI_WAFL block of `amd-smi metric --ecc-blocks`, run the ROCm Validation Suite's xgmi test",
        evidence={"rise": rise, "xgmi_errors_total": now},
        immediate=True,
    )


class VendorTempLimitParams(TypedDict):
    """``[rules.vendor_temp_limit]`` (its defaults in RULES below)."""

    warning_below: float
    hysteresis: float
    for_s: float
    clear_s: float
    enabled: bool


class VendorThrottledParams(TypedDict):
    """``[rules.vendor_throttled]`` (its defaults in RULES below)."""

    for_s: float
    clear_s: float
    enabled: bool


class XgmiErrorsParams(TypedDict):
    """``[rules.xgmi_errors]`` (its defaults in RULES below)."""

    clear_s: float
    enabled: bool


class PowerAtCapParams(TypedDict):
    """``[rules.power_at_cap]`` (its defaults in RULES below)."""

    ratio: float
    busy_util: float
    for_s: float
    clear_s: float
    enabled: bool


OTHER_VENDORS = ("amd", "intel")

RULES = (
    Rule(
        "vendor_temp_limit",
        GPU,
        vendor_temp_limit,
        {"warning_below": 5, "hysteresis": 3, "for_s": 30, "clear_s": 60},
        "AMD / Gaudi edge and junction temperatures within warning_below °C of the vendor's own "
        "slowdown limit (critical at it)",
        slow=True,
        vendors=OTHER_VENDORS,  # NVIDIA's: the T.Limit margin rules, against the driver's own limit
    ),
    Rule(
        "vendor_throttled",
        GPU,
        vendor_throttled,
        {"for_s": 10, "clear_s": 60},
        "the vendor's own throttle status (AMD throttle_status) says clocks are held back",
        concerns="clocks",
        vendors=OTHER_VENDORS,  # NVIDIA's: the clock-event reasons, by their own rules
    ),
    Rule(
        "power_at_cap",
        GPU,
        power_at_cap,
        {"ratio": 0.98, "busy_util": 90, "for_s": 60, "clear_s": 60},
        "power ≥ ratio × the cap under load on a GPU without clock-event reasons (info)",
        slow=True,
        vendors=OTHER_VENDORS,  # NVIDIA's: power_capped, from the clock-event mask
    ),
    Rule(
        "xgmi_errors",
        GPU,
        xgmi_errors,
        {"clear_s": 600},
        "a rise in AMD's XGMI link error count (RAS, XGMI_WAFL block)",
        vendors=("amd",),  # NVLink and Gaudi's links have rules of their own
    ),
)
