"""The GPU's readings, declared once: what each is called, its unit, whether it is kept as
history, exported to Prometheus, offered as a fleet filter key, shown on the GPU pane's and the
text report's generic line.

The generic places read this table (``state`` records the ``history`` rows, ``export.metrics``
renders the ``export`` rows, ``ui.fleet_query`` offers the ``filter`` rows, the GPU pane and
``report_text`` list the ``detail`` rows), so a new reading is one row here, its field in the
wire schema and the model (``node/schema.py``, ``core/models.py``), the probe source(s) that
read it, and, if kept as history, its ``Metric`` (``series.py``). What reads it for a verdict
stays explicit: a rule, the burn-in's fold and charts.

Rows are in the exporter's order (its families are written in it); history and filters keep
their own orders as subsequences of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from . import format as fmt
from .models import GpuSample
from .series import Metric


@dataclass(frozen=True, slots=True)
class Exported:
    """A Prometheus family: the name in base units (``export.metrics`` scales the value from the
    field's unit: % to a 0-1 ratio, MiB to bytes, MHz to hertz), its type and help."""

    name: str
    help: str
    type: str = "gauge"


@dataclass(frozen=True, slots=True)
class GpuField:
    attr: str  # the GpuSample attribute (the wire field of node/schema.GPU_FIELDS, or a property)
    unit: str  # "%", "MiB", "MHz", "°C", "W", or "" for a count, a state, a mask
    label: str  # in words, for the filter's help and the generic lines
    history: Metric | None = None  # kept as a per-GPU series under this metric
    export: Exported | None = None
    filter: str | None = None  # the fleet filter's key (a GPU key: holds when any GPU does)
    detail: bool = False  # listed on the GPU pane's and the report's generic line when reported
    short: str = ""  # its tag on those lines (a word or two)
    digits: int = 0  # decimals shown on the generic line

    def format(self, value: Any) -> str:
        """The value as the generic lines show it: ``n/a`` when not reported."""
        return fmt.pct(value) if self.unit == "%" else fmt.num(value, self.digits, self.unit)


GPU_FIELDS: tuple[GpuField, ...] = (
    GpuField(
        "utilization_percent", "%", "GPU utilisation",
        history=Metric.GPU_UTILIZATION_PERCENT,
        export=Exported("dltui_gpu_utilization_ratio", "GPU busy time over the last sample period (0-1)."),
        filter="util",
    ),
    GpuField(
        "memory_utilization_percent", "%", "GPU memory controller busy",
        export=Exported("dltui_gpu_memory_utilization_ratio", "GPU memory controller busy time (0-1)."),
    ),
    GpuField("memory_used_percent", "%", "GPU memory used", history=Metric.GPU_MEMORY_USED_PERCENT, filter="gpumem"),
    GpuField(
        "memory_used_mib", "MiB", "GPU memory used",
        export=Exported("dltui_gpu_memory_used_bytes", "GPU framebuffer memory in use."),
    ),
    GpuField(
        "memory_total_mib", "MiB", "GPU memory size",
        export=Exported("dltui_gpu_memory_total_bytes", "GPU framebuffer memory size."),
    ),
    GpuField(
        "temperature_c", "°C", "GPU core temperature",
        history=Metric.GPU_TEMPERATURE_C,
        export=Exported("dltui_gpu_temperature_celsius", "GPU core temperature."),
        filter="temp",
    ),
    GpuField(
        "memory_temperature_c", "°C", "GPU memory (HBM) temperature",
        history=Metric.GPU_MEMORY_TEMPERATURE_C,
        export=Exported("dltui_gpu_memory_temperature_celsius", "GPU memory (HBM) temperature."),
        filter="hbm",
    ),
    GpuField(
        "hotspot_temperature_c", "°C", "GPU junction (hotspot) temperature",
        history=Metric.GPU_HOTSPOT_TEMPERATURE_C,
        export=Exported(
            "dltui_gpu_hotspot_temperature_celsius",
            "GPU junction (hotspot) temperature, the hottest of the die's sensors (AMD; NVIDIA reports none).",
        ),
        filter="hotspot",
        detail=True,
        short="hotspot",  # amd-smi's word for it (rocm-smi says junction)
    ),
    GpuField(
        "temperature_margin_c", "°C", "GPU T.Limit margin",
        history=Metric.GPU_TEMPERATURE_MARGIN_C,
        export=Exported("dltui_gpu_temperature_margin_celsius", "Degrees left before the GPU slows down."),
        filter="margin",
    ),
    GpuField(
        "power_w", "W", "GPU power",
        history=Metric.GPU_POWER_W,
        export=Exported("dltui_gpu_power_watts", "GPU power draw."),
        filter="power",
    ),
    GpuField(
        "power_limit_w", "W", "GPU power limit",
        export=Exported("dltui_gpu_power_limit_watts", "GPU enforced power limit."),
    ),
    GpuField(
        "sm_clock_mhz", "MHz", "GPU SM clock",
        history=Metric.GPU_SM_CLOCK_MHZ,
        export=Exported("dltui_gpu_sm_clock_hertz", "GPU SM clock."),
    ),
    GpuField(
        "memory_clock_mhz", "MHz", "GPU memory clock",
        export=Exported("dltui_gpu_memory_clock_hertz", "GPU memory clock."),
    ),
    GpuField(
        "sm_clock_max_mhz", "MHz", "GPU maximum SM clock",
        export=Exported("dltui_gpu_sm_clock_max_hertz", "GPU maximum SM clock."),
    ),
    GpuField(
        "pstate", "", "GPU performance state",
        export=Exported("dltui_gpu_performance_state", "GPU performance state (0 fastest, 15 slowest)."),
    ),
    GpuField(
        "fan_percent", "%", "GPU fan",
        export=Exported("dltui_gpu_fan_ratio", "GPU fan speed as a share of its maximum (0-1)."),
    ),
    GpuField(
        "clock_event_reasons_mask", "", "GPU clock-event reasons",
        export=Exported(
            "dltui_gpu_clock_event_reasons",
            "Bitmask of active clock-event (throttle) reasons, as NVML defines the bits.",
        ),
    ),
    GpuField(
        "pcie_gen", "", "PCIe link generation",
        export=Exported("dltui_gpu_pcie_link_generation", "Current PCIe link generation."),
    ),
    GpuField(
        "pcie_width", "", "PCIe link width",
        export=Exported("dltui_gpu_pcie_link_width", "Current PCIe link width (lanes)."),
    ),
    GpuField(
        "pcie_replay_count", "", "PCIe replays",
        export=Exported("dltui_gpu_pcie_replays_total", "PCIe replays since the driver loaded.", "counter"),
    ),
    GpuField(
        "xgmi_errors_total", "", "XGMI link errors",
        export=Exported(
            "dltui_gpu_xgmi_errors_total",
            "AMD XGMI (GPU-to-GPU) link errors since the driver loaded: RAS counts of the XGMI_WAFL block.",
            "counter",
        ),
        detail=True,
        short="XGMI errors",
    ),
    GpuField(
        "throttled", "", "GPU throttled (vendor status)",
        export=Exported(
            "dltui_gpu_throttled",
            "1 while the vendor's own throttle status holds the clocks back (AMD); NVIDIA's reasons are "
            "dltui_gpu_clock_event_reasons.",
        ),
    ),
    GpuField(
        "remapped_rows_correctable", "", "rows remapped (correctable)",
        export=Exported("dltui_gpu_remapped_rows_correctable", "Rows remapped for correctable errors."),
    ),
    GpuField(
        "remapped_rows_uncorrectable", "", "rows remapped (uncorrectable)",
        export=Exported("dltui_gpu_remapped_rows_uncorrectable", "Rows remapped for uncorrectable errors."),
    ),
    GpuField(
        "remapped_rows_pending", "", "row remap pending",
        export=Exported("dltui_gpu_remapped_rows_pending", "1 when a row remap waits for a GPU reset."),
    ),
    GpuField(
        "remapped_rows_failure", "", "row remap failed",
        export=Exported("dltui_gpu_remapped_rows_failure", "1 when a row remap failed."),
    ),
    GpuField(
        "retired_pages_pending", "", "page retirement pending",
        export=Exported("dltui_gpu_retired_pages_pending", "1 when a page retirement waits for a reset."),
    ),
)

BY_ATTR: dict[str, GpuField] = {f.attr: f for f in GPU_FIELDS}
# Utilisation is recorded first and beside its sub-second minimum (``state``); the other
# per-GPU series follow in the table's order.
HISTORY: tuple[GpuField, ...] = tuple(
    f for f in GPU_FIELDS if f.history is not None and f.history is not Metric.GPU_UTILIZATION_PERCENT
)
HISTORY_ROW = attrgetter(*(f.attr for f in HISTORY))  # a GPU's values of HISTORY, in one call
EXPORTED: tuple[GpuField, ...] = tuple(f for f in GPU_FIELDS if f.export is not None)
FILTERS: tuple[GpuField, ...] = tuple(f for f in GPU_FIELDS if f.filter is not None)
DETAILS: tuple[GpuField, ...] = tuple(f for f in GPU_FIELDS if f.detail)


def details(g: GpuSample) -> list[tuple[str, str]]:
    """(tag, value) of the ``detail`` readings this GPU reports (a vendor's extra sensors), for
    the generic lines: none when it reports none, so a GPU without them shows no such line."""
    return [(f.short or f.attr, f.format(v)) for f in DETAILS if (v := getattr(g, f.attr)) is not None]
