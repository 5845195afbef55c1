"""Which series a window is filled from, and the range queries that ask for them.

dltui's own exporter first (its series carry the node's name as dltui knows it, ``node``),
else dcgm-exporter's and node_exporter's: each field has one expression per family, and where
both answer for a point, dltui's wins (``fetch.merge``). One query a family: every field's
expression tagged with a ``dltui_field`` label and joined with ``or``, so a window is three
round trips whatever the number of fields."""

from __future__ import annotations

from dataclasses import dataclass

from .plan import Plan, promql_duration

MIB = 1024.0 * 1024.0
GPU, IB, NIC, UNIT, DRIVE, HOST = "gpu", "ib", "nic", "unit", "drive", "host"
# The labels that tell a family's devices apart, by scope (the host is one: none).
DEVICE_LABELS: dict[str, tuple[str, ...]] = {
    GPU: ("gpu",), IB: ("device", "port"), NIC: ("device",), UNIT: ("unit",), DRIVE: ("device",), HOST: (),
}


@dataclass(frozen=True)
class Field:
    """One field of the replayed samples and where it comes from. ``reduce``: how a step's
    points become one (``max`` for heat and counters, ``min`` for clocks, utilisation and
    link state: the worst case, as the charts pick); ``dltui`` / ``other``: the expression per
    family (``{s}``: the node's selector, ``{o}``: the *_over_time range, ``{r}``: the rate
    range), None where the family has no such series."""

    name: str
    scope: str
    reduce: str
    dltui: str | None
    other: str | None


# Templates: ``{s}`` the node's matchers, ``{o}`` the *_over_time range, ``{r}`` the rate range.
def _m(metric: str, reduce: str, post: str = "", own: str = "") -> str:
    """``reduce``_over_time of ``metric`` (``own``: matchers of its own), then ``post``."""
    return f"{reduce}_over_time({metric}{{{{{own}{{s}}}}}}[{{o}}]){post}"


def _vendor(names: str, gpu_label: str, reduce: str, post: str = "") -> str:
    """" or " the series ``names`` (a regex of metric names) of another vendor's exporter,
    its GPU label (``gpu_label``) copied to ``gpu`` as dcgm-exporter's is named: AMD's
    device-metrics-exporter (``gpu_id``; names as the live source reads them, queries.AMD_FIELDS)
    and Intel Gaudi's metric exporter (``id``; queries.GAUDI_FIELDS, scaled by ``post``)."""
    inner = f'{reduce}_over_time({{{{__name__=~"{names}",{{s}}}}}}[{{o}}]){post}'
    return f' or label_replace({inner}, "gpu", "$1", "{gpu_label}", "(.*)")'


def _amd(names: str, reduce: str) -> str:
    return _vendor(f"(amd_)?({names})", "gpu_id", reduce)


def _gaudi(name: str, reduce: str, post: str = "") -> str:
    return _vendor(f"habanalabs_{name}", "id", reduce, post)


FIELDS: tuple[Field, ...] = (
    Field(
        "temperature_c", GPU, "max",
        _m("dltui_gpu_temperature_celsius", "max"),
        _m("DCGM_FI_DEV_GPU_TEMP", "max") + _amd("gpu_edge_temperature", "max")
        + _gaudi("temperature_onchip", "max"),
    ),
    Field(
        "memory_temperature_c", GPU, "max",
        _m("dltui_gpu_memory_temperature_celsius", "max"), _m("DCGM_FI_DEV_MEMORY_TEMP", "max"),
    ),
    Field("temperature_margin_c", GPU, "min", _m("dltui_gpu_temperature_margin_celsius", "min"), None),
    Field(
        "power_w", GPU, "max",
        _m("dltui_gpu_power_watts", "max"),
        _m("DCGM_FI_DEV_POWER_USAGE", "max") + _amd("gpu_package_power|gpu_average_package_power", "max")
        + _gaudi("power_mW", "max", " / 1000"),
    ),
    Field(
        "power_limit_w", GPU, "max",
        _m("dltui_gpu_power_limit_watts", "max"), _m("DCGM_FI_DEV_POWER_MGMT_LIMIT", "max"),
    ),
    Field(
        "sm_clock_mhz", GPU, "min", _m("dltui_gpu_sm_clock_hertz", "min", " / 1e6"), _m("DCGM_FI_DEV_SM_CLOCK", "min")
    ),
    Field("sm_clock_max_mhz", GPU, "max", _m("dltui_gpu_sm_clock_max_hertz", "max", " / 1e6"), None),
    Field(
        "utilization_percent", GPU, "min",
        _m("dltui_gpu_utilization_ratio", "min", " * 100"),
        _m("DCGM_FI_DEV_GPU_UTIL", "min") + _amd("gpu_gfx_activity", "min") + _gaudi("utilization", "min"),
    ),
    Field(
        "memory_used_mib", GPU, "max",
        _m("dltui_gpu_memory_used_bytes", "max", f" / {MIB:g}"), _m("DCGM_FI_DEV_FB_USED", "max"),
    ),
    Field("memory_total_mib", GPU, "max", _m("dltui_gpu_memory_total_bytes", "max", f" / {MIB:g}"), None),
    # the mask as a number: max keeps the step's highest reason bit, not every bit it saw
    Field(
        "clock_event_reasons_mask", GPU, "max",
        _m("dltui_gpu_clock_event_reasons", "max"), _m("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "max"),
    ),
    # 1 when the port stayed ACTIVE (state 4, or 5 ACTIVE_DEFER) through the whole step
    Field("up", IB, "min", _m("dltui_infiniband_port_up", "min"), _m("node_infiniband_state_id", "min", " >= bool 4")),
    Field(
        "link_downed_total", IB, "max",
        _m("dltui_infiniband_port_errors_total", "max", own='counter="link_downed",'),
        _m("node_infiniband_link_downed_total", "max"),
    ),
    Field(
        "rx_bytes_per_s", NIC, "max",
        _m("dltui_network_receive_bytes_per_second", "max"), "rate(node_network_receive_bytes_total{{{s}}}[{r}])",
    ),
    # the training unit, from dltui's exporter only (node_exporter's systemd collector is off by default)
    Field("failed", UNIT, "max", _m("dltui_unit_state", "max", own='state="failed",'), None),
    Field("active", UNIT, "min", _m("dltui_unit_active", "min"), None),
    Field("restarts_total", UNIT, "max", _m("dltui_unit_restarts_total", "max"), None),
    Field(
        "tx_bytes_per_s", NIC, "max",
        _m("dltui_network_transmit_bytes_per_second", "max"), "rate(node_network_transmit_bytes_total{{{s}}}[{r}])",
    ),
    # drives' SMART, from dltui's exporter only (smartctl_exporter's sit on an instance of their
    # own, which the node's selectors do not reach): what drive_failing / _wear / _errors read
    Field("smart_passed", DRIVE, "min", _m("dltui_drive_smart_passed", "min"), None),
    Field("critical_warning_mask", DRIVE, "max", _m("dltui_drive_critical_warning", "max"), None),
    Field(
        "available_spare_percent", DRIVE, "min", _m("dltui_drive_available_spare_ratio", "min", " * 100"), None
    ),
    Field(
        "available_spare_threshold_percent", DRIVE, "max",
        _m("dltui_drive_available_spare_threshold_ratio", "max", " * 100"), None,
    ),
    Field(
        "endurance_used_percent", DRIVE, "max", _m("dltui_drive_endurance_used_ratio", "max", " * 100"), None
    ),
    Field("media_errors_total", DRIVE, "max", _m("dltui_drive_media_errors_total", "max"), None),
    Field("reallocated_sectors_total", DRIVE, "max", _m("dltui_drive_reallocated_sectors_total", "max"), None),
    Field("pending_sectors", DRIVE, "max", _m("dltui_drive_pending_sectors", "max"), None),
    Field(
        "offline_uncorrectable_sectors", DRIVE, "max", _m("dltui_drive_offline_uncorrectable_sectors", "max"), None
    ),
    Field("drive_temperature_c", DRIVE, "max", _m("dltui_drive_temperature_celsius", "max"), None),
    # the host: what host_memory_low and the starvation causes read. node_exporter's pressure is
    # a stall counter, so its rate over the step stands in for the kernel's 10 s average.
    Field(
        "memory.total_bytes", HOST, "max",
        _m("dltui_memory_total_bytes", "max"), _m("node_memory_MemTotal_bytes", "max"),
    ),
    Field(
        "memory.available_bytes", HOST, "min",
        _m("dltui_memory_available_bytes", "min"), _m("node_memory_MemAvailable_bytes", "min"),
    ),
    Field(
        "memory.swap_used_bytes", HOST, "max",
        _m("dltui_memory_swap_used_bytes", "max"),
        _m("node_memory_SwapTotal_bytes", "max", " - " + _m("node_memory_SwapFree_bytes", "min")),
    ),
    Field(
        "cpu.iowait_percent", HOST, "max",
        _m("dltui_cpu_utilization_ratio", "max", " * 100", own='mode="iowait",'),
        'avg by (instance) (rate(node_cpu_seconds_total{{mode="iowait",{s}}}[{r}])) * 100',
    ),
    *(
        Field(
            f"pressure.{res}_{kind}_avg10_percent", HOST, "max",
            _m("dltui_pressure_avg10_ratio", "max", " * 100", own=f'resource="{res}",kind="{kind}",'),
            f"rate(node_pressure_{res}_{counter}_seconds_total{{{{{{s}}}}}}[{{r}}]) * 100" if counter else None,
        )
        for res, kind, counter in (
            ("memory", "full", "stalled"), ("memory", "some", "waiting"),
            ("io", "full", "stalled"), ("io", "some", "waiting"), ("cpu", "some", "waiting"),
        )
    ),
)
FIELD = {f.name: f for f in FIELDS}


def family_query(family: str, selector: str, p: Plan, scopes: tuple[str, ...]) -> str | None:
    """The one range query of ``family`` ("dltui", or "other": dcgm-exporter's for GPU,
    node_exporter's for the host) for the node ``selector`` picks, every field of ``scopes``
    it has, tagged ``dltui_field``, each reduced by device; None where it has none."""
    parts = []
    over, rate = promql_duration(p.over_s), promql_duration(p.rate_s)
    for f in FIELDS:
        source = f.dltui if family == "dltui" else f.other
        if source is None or f.scope not in scopes:
            continue
        inner = source.format(s=selector, o=over, r=rate)
        by = DEVICE_LABELS[f.scope]
        expr = f"{f.reduce} by ({', '.join(by)}) ({inner})" if by else f"{f.reduce}({inner})"
        parts.append(f'label_replace({expr}, "dltui_field", "{f.name}", "", "")')
    return " or ".join(parts) if parts else None
