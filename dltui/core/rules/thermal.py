"""Thermal and power rules.

The temperature model: the T.Limit margin is the primary signal where the GPU reports one;
core temperature against a configured limit is the only one where it does not; HBM against
its own limit; clock-event bits and counters prove a slowdown happened. Messages name the
sensor ("core 87 °C", "margin 4 °C", "HBM 92 °C") and say when the one we want is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median
from typing import Any, NamedTuple, TypedDict

from dltui.node.schema import HW_POWER_BRAKE_SLOWDOWN as HW_POWER_BRAKE
from dltui.node.schema import HW_SLOWDOWN, SW_POWER_CAP
from dltui.node.schema import HW_THERMAL_SLOWDOWN as HW_THERMAL
from dltui.node.schema import SW_THERMAL_SLOWDOWN as SW_THERMAL

from ..models import GpuSample, Sample
from ..timeline import CRITICAL, INFO, WARNING, Severity
from ..vendors import vendor
from .base import CLEAR, GPU, GPUS, HOLD, NVIDIA_ONLY, Finding, Rule, Verdict, delta
from .memory import GpuMemory, NodeMemory

_ANY_REASON = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE
_COOLING = "check airflow, fans and inlet temperature"
_PSU = "check PSU and power cabling"


def _temps(g: GpuSample) -> str:
    """The thermal readings this GPU has, in words: "core 87 °C, margin 4 °C, HBM 80 °C"
    (the main sensor by its vendor's name: AMD's "edge", Gaudi's "AIP")."""
    parts = []
    if g.temperature_c is not None:
        parts.append(f"{vendor(g.vendor).core_sensor} {g.temperature_c:.0f} °C")
    if g.hotspot_temperature_c is not None:
        parts.append(f"junction {g.hotspot_temperature_c:.0f} °C")
    if g.temperature_margin_c is not None:
        parts.append(f"margin {g.temperature_margin_c:.0f} °C")
    if g.memory_temperature_c is not None:
        parts.append(f"HBM {g.memory_temperature_c:.0f} °C")
    return ", ".join(parts) or "no temperature reported"


def _clocks(g: GpuSample) -> str:
    if g.sm_clock_mhz is None:
        return ""
    if g.sm_clock_max_mhz:
        return f"SM {g.sm_clock_mhz:.0f} of {g.sm_clock_max_mhz:.0f} MHz"
    return f"SM {g.sm_clock_mhz:.0f} MHz"


def _reasons(mask: int, g: GpuSample) -> str:
    names = ", ".join(g.clock_event_reasons or ())
    return f"{mask:#x}: {names}" if names else f"{mask:#x}"


def gpu_temp_high(g: GpuSample, mem: GpuMemory, p: GpuTempHighParams) -> object:
    t = g.temperature_c
    if t is None:
        return None
    warning = p["warning"]
    if t < warning:
        return CLEAR if t < warning - p["hysteresis"] else HOLD
    margin = g.temperature_margin_c
    # With a margin, the margin rule is the judge; core temperature only warns.
    critical = margin is None and t >= p["critical"]
    threshold = p["critical"] if critical else warning
    who = vendor(g.vendor)
    if margin is not None:
        detail = f"T.Limit margin {margin:.0f} °C"
    elif who.key != "nvidia":
        detail = f"{who.label} reports no T.Limit margin, so the {who.core_sensor} temperature is judged here"
    else:
        detail = "this GPU reports no T.Limit margin, so core temperature is the only thermal signal"
    f = mem.facts
    if f is not None and f.thresholds_are_margin_offsets is False and f.temperature_slowdown_c is not None:
        detail += f"; the driver slows clocks at {f.temperature_slowdown_c:g} °C"
    return Finding(
        CRITICAL if critical else WARNING,
        f"{who.core_sensor} {t:.0f} °C ≥ {threshold:g} °C",
        _COOLING,
        detail,
        {"temperature_c": t, "threshold_c": threshold, "temperature_margin_c": margin},
    )


def thermal_margin_low(g: GpuSample, mem: GpuMemory, p: ThermalMarginLowParams) -> object:
    m = g.temperature_margin_c
    if m is None:
        return None
    if m > p["warning"]:
        return CLEAR if m >= p["warning"] + p["hysteresis"] else HOLD
    critical = m <= p["critical"]
    detail = f"core {g.temperature_c:.0f} °C" if g.temperature_c is not None else "core temperature not reported"
    f = mem.facts
    if f is not None and f.thresholds_are_margin_offsets and f.temperature_slowdown_c is not None:
        detail += f"; HW slowdown at margin {f.temperature_slowdown_c:g} °C"
        if f.temperature_shutdown_c is not None:
            detail += f", shutdown at {f.temperature_shutdown_c:g} °C"
    return Finding(
        CRITICAL if critical else WARNING,
        f"margin {m:.0f} °C to T.Limit ≤ {p['critical'] if critical else p['warning']:g} °C",
        _COOLING + "; the driver caps clocks at margin 0",
        detail,
        {"temperature_margin_c": m, "temperature_c": g.temperature_c},
    )


def hbm_temp_high(g: GpuSample, mem: GpuMemory, p: HbmTempHighParams) -> object:
    t = g.memory_temperature_c
    if t is None:
        return None
    f = mem.facts
    if f is not None and f.thresholds_are_margin_offsets is False and f.memory_temperature_max_c is not None:
        limit, source = f.memory_temperature_max_c, "the driver's memory limit"
    else:
        limit, source = p["memory_max"], "default limit: the driver gives no absolute memory limit"
    warning = limit - p["warning_below_max"]
    if t < warning:
        return CLEAR if t < warning - p["hysteresis"] else HOLD
    return Finding(
        CRITICAL if t >= limit else WARNING,
        f"HBM {t:.0f} °C, limit {limit:g} °C",
        _COOLING,
        f"{source}; {_temps(g)}",
        {"memory_temperature_c": t, "limit_c": limit},
    )


def thermal_slowdown(g: GpuSample, mem: GpuMemory, p: ThermalSlowdownParams) -> object:
    mask, prev = g.clock_event_reasons_mask, mem.prev
    if (
        mask is not None
        and not mask & (HW_THERMAL | SW_THERMAL)
        and (
            prev is None
            or (g.clock_event_sw_thermal_us, g.clock_event_hw_thermal_us)
            == (prev.clock_event_sw_thermal_us, prev.clock_event_hw_thermal_us)
        )
    ):
        if mem.rule_state:
            mem.rule_state.pop("sw_thermal_since", None)
        return CLEAR  # the common case, decided without building anything
    rise_sw = rise_hw = None
    if prev is not None:
        rise_sw = delta(g.clock_event_sw_thermal_us, prev.clock_event_sw_thermal_us)
        rise_hw = delta(g.clock_event_hw_thermal_us, prev.clock_event_hw_thermal_us)
    if mask is None and rise_sw is None and rise_hw is None:
        return None
    bits = mask or 0
    hw = bool(bits & HW_THERMAL) or bool(rise_hw)
    sw = bool(bits & SW_THERMAL) or bool(rise_sw)
    state = mem.rule_state
    if not hw and not sw:
        state.pop("sw_thermal_since", None)
        return CLEAR
    if hw:
        state.pop("sw_thermal_since", None)
        level: Severity = CRITICAL
    else:  # software slowdown alone: a warning for its first minute, then critical
        since = state.setdefault("sw_thermal_since", mem.now)
        level = CRITICAL if mem.now - since >= p["sw_warning_s"] else WARNING
    what = " and ".join(k for k, on in (("HW", hw), ("SW", sw)) if on) + " thermal slowdown"
    if bits & (HW_THERMAL | SW_THERMAL):
        what += f" active ({_reasons(bits, g)})"
    shares = share_of_time(mem, "thermal_slowdown_run", {"HW": rise_hw, "SW": rise_sw}, p["clear_s"])
    # the kinds happening, by their counters; one flat while its bit is set does not count
    on = {"HW": hw, "SW": sw}
    shares = {k: v for k, v in shares.items() if on[k] and v}
    detail = [_temps(g), _clocks(g)]
    share = max(shares.values()) if shares else None
    if len({round(v * 100) for v in shares.values()}) > 1:  # HW and SW, each its own share
        detail.insert(0, " and ".join(f"{k} {v * 100:.0f} %" for k, v in shares.items()) + " of the time")
        share = None
    return Finding(
        level,
        what,
        "the GPU is cutting clocks to stay under its temperature limit: " + _COOLING,
        ", ".join(x for x in detail if x),
        {"mask": mask, "sw_thermal_rise_us": rise_sw, "hw_thermal_rise_us": rise_hw},
        immediate=not bits & (HW_THERMAL | SW_THERMAL),  # counter rise alone: already an integral
        share=share,
    )


def share_of_time(
    mem: GpuMemory, key: str, rises: Mapping[str, float | None], quiet_s: float
) -> dict[str, float]:
    """Per counter of µs spent in a state, the share of this run of findings' time it counted
    (0–1). A run starts one interval before its first finding (the first rise covers that
    interval) and ends after ``quiet_s`` without a finding (the rule's ``clear_s``). Counters
    the GPU does not report are left out."""
    counted = {k: r for k, r in rises.items() if r is not None}
    if not counted:
        return {}
    now = mem.now
    run = mem.rule_state.get(key)
    if run is None or now - run["last"] > quiet_s:
        run = mem.rule_state[key] = {"since": now - mem.node.interval_s, "last": now, "us": {}}
    run["last"] = now
    spent = run["us"]
    for k, rise in counted.items():
        spent[k] = spent.get(k, 0.0) + rise
    span = max(now - run["since"], 1e-9)
    return {k: min(1.0, us / 1e6 / span) for k, us in spent.items()}


def hw_slowdown(g: GpuSample, mem: GpuMemory, p: HwSlowdownParams) -> object:
    mask = g.clock_event_reasons_mask
    if mask is None:
        return None
    if not mask & HW_SLOWDOWN:
        return CLEAR
    if mask & HW_POWER_BRAKE:
        action = "external power brake: " + _PSU
    elif mask & HW_THERMAL:
        action = "hardware thermal slowdown: " + _COOLING
    else:
        action = "clocks cut by heat, a power brake or a power spike: check temperatures, PSU and cabling"
    return Finding(
        CRITICAL,
        f"HW slowdown active ({_reasons(mask, g)})",
        action,
        ", ".join(x for x in (_clocks(g), _temps(g)) if x),
        {
            "mask": mask,
            "sm_clock_mhz": g.sm_clock_mhz,
            "temperature_margin_c": g.temperature_margin_c,
        },
    )


def power_brake(g: GpuSample, mem: GpuMemory, p: PowerBrakeParams) -> object:
    mask, prev = g.clock_event_reasons_mask, mem.prev
    if (
        mask is not None
        and not mask & HW_POWER_BRAKE
        and (prev is None or g.clock_event_hw_power_brake_us == prev.clock_event_hw_power_brake_us)
    ):
        return CLEAR  # the common case, decided without building anything
    rise = (
        delta(g.clock_event_hw_power_brake_us, prev.clock_event_hw_power_brake_us)
        if prev is not None
        else None
    )
    if mask is None and rise is None:
        return None
    active = bool((mask or 0) & HW_POWER_BRAKE)
    if not active and not rise:
        return CLEAR
    shares = share_of_time(mem, "power_brake_run", {"brake": rise}, p["clear_s"])
    share = shares.get("brake") or (None if active else 0.0)  # flat while the bit is set: none
    power = f"power {g.power_w:.0f} W" if g.power_w is not None else ""
    return Finding(
        CRITICAL,
        "HW power brake active (0x80)" if active else "HW power brake",
        _PSU,
        ", ".join(x for x in (_clocks(g), power) if x),
        {"mask": mask, "power_brake_rise_us": rise},
        immediate=not active,
        share=share,
    )


def power_capped(g: GpuSample, mem: GpuMemory, p: PowerCappedParams) -> object:
    mask, util = g.clock_event_reasons_mask, g.utilization_percent
    if mask is None or util is None:
        return None
    if not (mask & SW_POWER_CAP and util > p["busy_util"]):
        return CLEAR
    limit = g.power_limit_w
    power = f"{g.power_w:.0f} W" if g.power_w is not None else "power n/a"
    return Finding(
        INFO,
        f"holding power at the cap: {power}"
        + (f" of {limit:.0f} W" if limit else "")
        + f" at {util:.0f} % utilisation",
        "expected at full load; raise the power limit only if the PSU and cooling allow",
        evidence={"power_w": g.power_w, "power_limit_w": limit},
    )


def clock_sag(g: GpuSample, mem: GpuMemory, p: ClockSagParams) -> object:
    sm, top, util, mask = (
        g.sm_clock_mhz,
        g.sm_clock_max_mhz,
        g.utilization_percent,
        g.clock_event_reasons_mask,
    )
    if sm is None or not top or util is None or mask is None:
        return None
    if util <= p["busy_util"] or mask & _ANY_REASON:
        return HOLD  # not loaded, or the slowdown has a named reason (its own rule)
    ratio = sm / top
    if ratio >= p["clear_ratio"]:
        return CLEAR
    if ratio >= p["ratio"]:
        return HOLD
    return Finding(
        WARNING,
        f"SM clock {sm:.0f} MHz, {ratio * 100:.0f} % of its {top:.0f} "
        f"MHz maximum at {util:.0f} % utilisation, no reason reported",
        "check this GPU's power and temperatures; one card with low clocks that also runs hot points at that card",
        _temps(g),
        {"sm_clock_mhz": sm, "sm_clock_max_mhz": top, "ratio": round(ratio, 3)},
    )


def airflow_imbalance(sample: Sample, node: NodeMemory, p: AirflowImbalanceParams) -> dict | None:
    """Each loaded GPU against the median of the others at similar load (margins if every GPU
    has one, else core temperatures). N/A with too few loaded GPUs."""
    loaded = [
        g
        for g in sample.gpus
        if g.utilization_percent is not None
        and g.utilization_percent >= p["loaded_util"]
        and (g.temperature_c is not None or g.temperature_margin_c is not None)
    ]
    if len(loaded) < p["min_gpus"]:
        return None
    by_margin = all(g.temperature_margin_c is not None for g in loaded)
    if not by_margin and any(g.temperature_c is None for g in loaded):
        return None
    # one reading per GPU, "how hot": the margin counts down, so it is negated
    heat: dict[int, float] = {}
    for g in loaded:
        margin, core = g.temperature_margin_c, g.temperature_c
        reading_c = -margin if by_margin and margin is not None else core
        if reading_c is not None:
            heat[g.index] = reading_c
    out: dict[int, Finding | Verdict] = {}
    for g in loaded:
        peers = [
            h
            for h in loaded
            if h is not g
            and abs((h.utilization_percent or 0) - (g.utilization_percent or 0)) <= p["similar_load"]
        ]
        if len(peers) < p["min_gpus"] - 1:
            continue
        typical = median(heat[h.index] for h in peers)
        hotter = heat[g.index] - typical
        if by_margin:
            reading = f"margin {-heat[g.index]:.0f} °C against a median {-typical:.0f} °C"
        else:
            reading = f"core {heat[g.index]:.0f} °C against a median {typical:.0f} °C"
        if hotter >= p["hotter"]:
            out[g.index] = Finding(
                WARNING,
                f"{hotter:.0f} °C hotter than {len(peers)} GPUs at similar load ({reading})",
                "the same slot every time points at airflow; one card that also runs low clocks points at that card",
                evidence={"hotter_c": hotter, "peers": len(peers)},
            )
        else:
            out[g.index] = CLEAR if hotter < p["clear_below"] else HOLD
    return out



class GpuTempHighParams(TypedDict):
    """``[rules.gpu_temp_high]`` (its defaults in RULES below)."""

    warning: float
    critical: float
    hysteresis: float
    for_s: float
    clear_s: float
    enabled: bool


class ThermalMarginLowParams(TypedDict):
    """``[rules.thermal_margin_low]`` (its defaults in RULES below)."""

    warning: float
    critical: float
    hysteresis: float
    for_s: float
    critical_for_s: float
    clear_s: float
    enabled: bool


class HbmTempHighParams(TypedDict):
    """``[rules.hbm_temp_high]`` (its defaults in RULES below)."""

    memory_max: float
    warning_below_max: float
    hysteresis: float
    for_s: float
    clear_s: float
    enabled: bool


class ThermalSlowdownParams(TypedDict):
    """``[rules.thermal_slowdown]`` (its defaults in RULES below)."""

    for_samples: float
    sw_warning_s: float
    clear_s: float
    enabled: bool


class HwSlowdownParams(TypedDict):
    """``[rules.hw_slowdown]`` (its defaults in RULES below)."""

    for_s: float
    clear_s: float
    enabled: bool


class PowerBrakeParams(TypedDict):
    """``[rules.power_brake]`` (its defaults in RULES below)."""

    for_samples: float
    clear_s: float
    enabled: bool


class PowerCappedParams(TypedDict):
    """``[rules.power_capped]`` (its defaults in RULES below)."""

    busy_util: float
    for_s: float
    clear_s: float
    enabled: bool


class ClockSagParams(TypedDict):
    """``[rules.clock_sag]`` (its defaults in RULES below)."""

    ratio: float
    clear_ratio: float
    busy_util: float
    for_s: float
    clear_s: float
    enabled: bool


class AirflowImbalanceParams(TypedDict):
    """``[rules.airflow_imbalance]`` (its defaults in RULES below)."""

    hotter: float
    clear_below: float
    similar_load: float
    loaded_util: float
    min_gpus: float
    for_s: float
    clear_s: float
    enabled: bool


RULES = (
    Rule(
        "gpu_temp_high",
        GPU,
        gpu_temp_high,
        {"warning": 85, "critical": 90, "hysteresis": 3, "for_s": 30, "clear_s": 60},
        "core temperature (°C); critical only where the GPU has no T.Limit margin",
        ascending=("warning", "critical"),
        slow=True,
    ),
    Rule(
        "thermal_margin_low",
        GPU,
        thermal_margin_low,
        {
            "warning": 10,
            "critical": 3,
            "hysteresis": 2,
            "for_s": 60,
            "critical_for_s": 10,
            "clear_s": 60,
        },
        "T.Limit margin (°C left before slowdown) at or below the thresholds",
        ascending=("critical", "warning"),  # a margin: lower is worse
        slow=True,
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "hbm_temp_high",
        GPU,
        hbm_temp_high,
        {"memory_max": 95, "warning_below_max": 5, "hysteresis": 3, "for_s": 60, "clear_s": 60},
        "HBM temperature against the driver's absolute memory limit, else memory_max (°C)",
        slow=True,
    ),
    Rule(
        "thermal_slowdown",
        GPU,
        thermal_slowdown,
        {"for_samples": 2, "sw_warning_s": 60, "clear_s": 120},
        "clock-event bits 0x20 (SW thermal) / 0x40 (HW thermal) or a rise in their counters",
        concerns="clocks",
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "hw_slowdown",
        GPU,
        hw_slowdown,
        {"for_s": 3, "clear_s": 120},
        "clock-event bit 0x8 (debounced: P-state changes blip it)",
        concerns="clocks",
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "power_brake",
        GPU,
        power_brake,
        {"for_samples": 2, "clear_s": 300},
        "clock-event bit 0x80 or a rise in its counter",
        concerns="clocks",
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "power_capped",
        GPU,
        power_capped,
        {"busy_util": 90, "for_s": 60, "clear_s": 60},
        "bit 0x4 under load (info)",
        slow=True,
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "clock_sag",
        GPU,
        clock_sag,
        {"ratio": 0.85, "clear_ratio": 0.9, "busy_util": 90, "for_s": 60, "clear_s": 60},
        "SM clock below ratio × max under load with no clock-event reason",
        ascending=("ratio", "clear_ratio"),
        slow=True,
        concerns="clocks",
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "airflow_imbalance",
        GPUS,
        airflow_imbalance,
        {
            "hotter": 10,
            "clear_below": 7,
            "similar_load": 20,
            "loaded_util": 50,
            "min_gpus": 3,
            "for_s": 300,
            "clear_s": 300,
        },
        "a GPU this many °C hotter than the median of its siblings at similar load",
        ascending=("clear_below", "hotter"),
        slow=True,
    ),
)

_BY_ID = {rule.id: rule for rule in RULES}


class TemperatureLimits(NamedTuple):
    """The limits gpu_temp_high and thermal_margin_low judge with: what the UI colours by, so
    a cell turns red exactly when the rule would fire."""

    temp_warning_c: float
    temp_critical_c: float
    margin_warning_c: float
    margin_critical_c: float


def temperature_limits(params: Mapping[str, Mapping[str, Any]]) -> TemperatureLimits:
    """From rule id -> parameter overrides (a config's ``[rules]``, or the engine's params for
    a node); the rules' defaults fill what is not given."""
    temp = {**_BY_ID["gpu_temp_high"].defaults, **params.get("gpu_temp_high", {})}
    margin = {**_BY_ID["thermal_margin_low"].defaults, **params.get("thermal_margin_low", {})}
    return TemperatureLimits(
        float(temp["warning"]),
        float(temp["critical"]),
        float(margin["warning"]),
        float(margin["critical"]),
    )
