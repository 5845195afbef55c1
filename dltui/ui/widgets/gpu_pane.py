"""One GPU: utilisation, memory, temperature and power with sparklines, then the details an
operator checks when something is off (clocks, PCIe link, clock-event reasons, ECC)."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core import gpu_fields
from dltui.core.attribution import gpu_holder
from dltui.core.models import GpuFacts, GpuSample
from dltui.core.rules import RULES
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import NodeState
from dltui.core.timeline import CRITICAL, INFO
from dltui.core.vendors import NVIDIA, label, vendor

from .. import levels
from .fabric_lines import nvlink_line
from .pane import Pane, labelled, metric_line, waiting

# Clock-event ("throttle") reasons in plain words, with how much they matter.
EVENT_WORDS = {
    "gpu_idle": ("idle", levels.IDLE),
    "applications_clocks_setting": ("app clocks", levels.IDLE),
    "sw_power_cap": ("power cap", levels.OK),
    "hw_slowdown": ("HW slowdown", levels.HOT),
    "sync_boost": ("sync boost", levels.IDLE),
    "sw_thermal_slowdown": ("SW thermal", levels.HOT),
    "hw_thermal_slowdown": ("HW thermal", levels.HOT),
    "hw_power_brake_slowdown": ("power brake", levels.HOT),
    "display_clock_setting": ("display clocks", levels.IDLE),
    "board_limit": ("board limit", levels.WARM),
    "reliability": ("reliability", levels.WARM),
}


class GpuPane(Pane):
    DEFAULT_CSS = """
    GpuPane {
        min-width: 44;
    }
    """

    def __init__(self, index: int, *, thresholds: levels.Thresholds) -> None:
        super().__init__(f"GPU{index}", id=f"gpu-{index}", classes="gpu-pane")
        self.index = index
        self.thresholds = thresholds

    def draw(self, node: NodeState, now: float) -> Content:
        g = next((g for g in node.sample.gpus if g.index == self.index), None) if node.sample else None
        facts = next((f for f in node.facts.gpus if f.index == self.index), None) if node.facts else None
        name = (g.name if g else None) or (facts.name if facts else None) or ""
        maker = (g.vendor if g else None) or (facts.vendor if facts else None)
        if vendor(maker) is not NVIDIA:  # "AMD Instinct MI300X", "Intel Gaudi HL-325L"
            name = label(maker, name or None)
        title = f"GPU{self.index} · {name.removeprefix('NVIDIA ')}" if name else f"GPU{self.index}"
        self.set_border_text(title=title)  # plain text, never markup (Pane.set_border_text)
        if g is None:
            return waiting(node)
        if g.error:
            return Content.styled(g.error, "bold $text-error")
        width = self.inner_width - 14
        self.set_border_text(subtitle=self.span_label(node, width))
        return Content("\n").join([*self._metrics(node, g, facts, width), *self._details(node, g, facts)])

    def _metrics(self, node: NodeState, g: GpuSample, facts: GpuFacts | None, width: int) -> list[Content]:
        th = self.thresholds
        util = SeriesKey(Metric.GPU_UTILIZATION_PERCENT, self.index)
        memory = SeriesKey(Metric.GPU_MEMORY_USED_PERCENT, self.index)
        temp = SeriesKey(Metric.GPU_TEMPERATURE_C, self.index)
        temp_word, temp_c = "temp", g.temperature_c
        if temp_c is None and g.hotspot_temperature_c is not None:  # no core sensor (MI300X): the junction
            temp = SeriesKey(Metric.GPU_HOTSPOT_TEMPERATURE_C, self.index)
            temp_word, temp_c = "hotspot", g.hotspot_temperature_c  # AMD: junction = hotspot
        power = SeriesKey(Metric.GPU_POWER_W, self.index)
        mem = g.memory_used_percent
        # The power sparkline's top: the enforced limit, else the board's maximum, else the highest seen.
        power_high = g.power_limit_w or (facts.power_limit_max_w if facts else None)
        if not power_high:
            power_high = max((v for v in node.history.get(power) if v is not None), default=1.0)
        return [
            metric_line(
                "util",
                fmt.pct(g.utilization_percent),
                levels.utilization(g.utilization_percent, th),
                self.spark(node, util, width, 0, 100, pick=min),
            ),
            metric_line(
                "memory",
                fmt.pct(mem),
                levels.OK,  # a full GPU memory is normal: caching allocators hold it on purpose
                self.spark(node, memory, width, 0, 100),
            ),
            metric_line(
                temp_word,
                fmt.num(temp_c, 0, "°C"),
                # the junction is judged against the vendor's own limits (its rule), not these
                levels.temperature(g.temperature_c, g.temperature_margin_c, th) if temp_word == "temp" else levels.OK,
                self.spark(node, temp, width, 20, 105 if temp_word == "hotspot" else 95),
            ),
            metric_line(
                "power", fmt.num(g.power_w, 0, "W"), levels.OK, self.spark(node, power, width, 0, power_high)
            ),
        ]

    def _details(self, node: NodeState, g: GpuSample, facts: GpuFacts | None) -> list[Content]:
        th = self.thresholds
        margin_level = levels.temperature(None, g.temperature_margin_c, th)
        nvlink = nvlink_line(node, g.index)
        nvidia = vendor(g.vendor) is NVIDIA  # the T.Limit margin, P-states, row remapping: NVIDIA's only
        return [
            labelled(
                "mem ", f"{fmt.mib(g.memory_used_mib)}/{fmt.mib(g.memory_total_mib)}",
                "  HBM ", fmt.num(g.memory_temperature_c, 0, "°C"),
                *(("  margin ", (fmt.num(g.temperature_margin_c, 0, "°C"), _alarm(margin_level))) if nvidia else ()),
            ),
            labelled(
                "SM ", (_of(g.sm_clock_mhz, g.sm_clock_max_mhz, "MHz"), _alerted(node, g.index, CLOCK_RULES)),
                "  mem ", _of(g.memory_clock_mhz, g.memory_clock_max_mhz, "MHz"),
                *(("  P", fmt.num(g.pstate)) if nvidia else ()),
            ),
            labelled(
                "PCIe ", (_link(g.pcie_gen, g.pcie_width), _alerted(node, g.index, PCIE_RULES)),
                " (max ", _link(g.pcie_max_gen, g.pcie_max_width),
                ")  fan ", fmt.pct(g.fan_percent),
            ),
            *_detail_line(g),
            *_holder_line(node, g),
            _ecc(g),
            *([nvlink] if nvlink is not None else []),
            _events(g),
        ]


def _holder_line(node: NodeState, g: GpuSample) -> list[Content]:
    """Whose work the GPU holds: ``job 48213 llama-ft · alice · 3h12m left`` (none: no line)."""
    holder = gpu_holder(g, node.jobs, node.containers)
    return [labelled("held by ", holder)] if holder else []


def _detail_line(g: GpuSample) -> list[Content]:
    """The field table's ``detail`` readings this GPU reports (none: no line)."""
    pairs = gpu_fields.details(g)
    if not pairs:
        return []
    return [labelled(*(x for i, (tag, value) in enumerate(pairs) for x in (f"{'  ' if i else ''}{tag} ", value)))]


def _alarm(level: str) -> str:
    return levels.STYLE[level] if level in (levels.WARM, levels.HOT) else ""


def _of(value: float | None, high: float | None, unit: str) -> str:
    if value is None:
        return fmt.NA
    return f"{fmt.num(value)}/{fmt.num(high)} {unit}"


# The clocks and the PCIe link are coloured by the alerts open on them, so the pane and the
# alerts agree whatever thresholds the config (or a node group) sets.
CLOCK_RULES = tuple(rule.id for rule in RULES if rule.concerns == "clocks")
PCIE_RULES = tuple(rule.id for rule in RULES if rule.concerns == "pcie")


def _alerted(node: NodeState, gpu: int, rules: tuple[str, ...]) -> str:
    open_ = [node.alerts[(rule, gpu)].severity for rule in rules if (rule, gpu) in node.alerts]
    if not open_ or open_ == [INFO] * len(open_):
        return ""
    return levels.STYLE[levels.HOT if CRITICAL in open_ else levels.WARM]


def _link(gen: int | None, width: int | None) -> str:
    if gen is None and width is None:
        return fmt.NA
    return f"gen{fmt.num(gen)} x{fmt.num(width)}"


def _ecc(g: GpuSample) -> Content:
    """Volatile counts (since the last reset), lifetime counts, remapped rows."""
    unc = (g.ecc_uncorrected_volatile or 0) + (g.remapped_rows_uncorrectable or 0)
    if vendor(g.vendor) is not NVIDIA:  # RAS counts since the driver loaded: no lifetime, no remap
        return labelled(
            "ECC corr ", fmt.num(g.ecc_corrected_volatile),
            " unc ", (fmt.num(g.ecc_uncorrected_volatile), levels.STYLE[levels.HOT] if unc else ""),
        )
    parts: list = [
        labelled(
            "ECC corr ", fmt.num(g.ecc_corrected_volatile),
            " unc ", (fmt.num(g.ecc_uncorrected_volatile), levels.STYLE[levels.HOT] if unc else ""),
            " · life ", f"{fmt.num(g.ecc_corrected_aggregate)}/{fmt.num(g.ecc_uncorrected_aggregate)}",
            " · remap ", f"{fmt.num(g.remapped_rows_correctable)}/{fmt.num(g.remapped_rows_uncorrectable)}",
        )
    ]
    if g.remapped_rows_pending or g.retired_pages_pending:
        parts.append((" reset pending", levels.STYLE[levels.WARM]))
    if g.remapped_rows_failure:
        parts.append((" remap FAILED", levels.STYLE[levels.HOT]))
    return Content.assemble(*parts)


def _events(g: GpuSample) -> Content:
    if g.clock_event_reasons is None and vendor(g.vendor) is not NVIDIA:  # its own status, no reasons
        said: tuple[str, str] = (fmt.NA, "")
        if g.throttled is not None:
            said = ("THROTTLED", levels.STYLE[levels.HOT]) if g.throttled else ("not throttled", "$text-success")
        return Content.assemble((f"{vendor(g.vendor).label} throttle status ", "$foreground-muted"), said)
    if g.clock_event_reasons is None:
        return Content.assemble(("clocks held by ", "$foreground-muted"), fmt.NA)
    if not g.clock_event_reasons:
        return Content.assemble(("clocks held by ", "$foreground-muted"), ("nothing", "$text-success"))
    parts: list = [("clocks held by ", "$foreground-muted")]
    for i, name in enumerate(g.clock_event_reasons):
        word, level = EVENT_WORDS.get(name, (name, levels.WARM))
        parts += [", " if i else "", (word, levels.STYLE[level])]
    return Content.assemble(*parts)
