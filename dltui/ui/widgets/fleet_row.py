"""One node as a line of the fleet table (or a tile of the compact view), as styled Content.

The layout is chosen from the width: every column when it fits, then shorter GPU cells, then
fewer host columns, so 80 columns still show every node and every GPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from textual.content import Content

from dltui.core import fabric
from dltui.core import format as fmt
from dltui.core import status as st
from dltui.core.attribution import node_jobs
from dltui.core.models import GpuSample, Sample
from dltui.core.series import HOTTEST_GPU_C
from dltui.core.state import NodeState
from dltui.core.timeline import CRITICAL, INFO, WARNING, alert_order, severity_rank
from dltui.core.units import ACTIVE, FAILED, FLAPPING, badge

from .. import levels
from ..spark import bar, downsample, sparkline

STALE_STYLE = "$foreground-disabled"  # values of a node that is not sending: shown, but greyed
HEADER_STYLE = "bold $foreground-muted"
GPU_CELL = {"full": 7, "short": 4, "tiny": 1}
STATUS_W, AGE_W, PCT_W, RATE_W, ALERT_W = 14, 4, 4, 11, 4
UNIT_W = 8  # "flapping"; the column exists only when some node reports a unit
# Whose work the GPUs hold (job ids, else users; "idle"): only when some node's GPU processes
# carry an owner or a job (core/attribution.py).
JOBS_W = 12
# The fabric badge: one glyph, so a 160-column fleet keeps its NOTE; the column exists only when
# some node reports an HCA port or NVLink (words in the `/` filter: fabric=ok|down|slow|errors).
FABRIC_W = 1
# The scheduler's word and reason (Slurm: idle, alloc, mix, drain, draining, down; Kubernetes:
# cordoned, notready): only when some node has a scheduler view (transport/scheduler.py).
SCHED_W = 16
SCHED_SHORT_W = 8  # the word alone ("draining"), where the reason does not fit: the state matters most
NOTE_MIN_W = 16
TREND_MIN_W, TREND_MAX_W = 8, 30  # the hottest GPU's temperature over the last TREND_SPAN_S
TREND_SPAN_S = 300
TREND_LOW_C, TREND_HIGH_C = 25.0, 95.0


@dataclass(frozen=True)
class Layout:
    name_w: int
    gpus: int
    gpu_cell: str  # "full", "short" or "tiny"
    host: bool  # CPU and memory columns
    io: bool  # disk and network columns
    note_w: int  # 0: no note column
    unit: bool = False  # the UNIT badge column
    trend_w: int = 0  # 0: no trend column
    fabric: bool = False  # the fabric badge column (⇄)
    jobs: bool = False  # the JOBS column
    sched: bool = False  # the SCHED column
    sched_short: bool = False  # the SCHED column as the word alone (SCHED_SHORT_W)


    @property
    def width(self) -> int:
        w = 1 + self.name_w + 1 + STATUS_W + 1 + AGE_W + 2 + self._gpu_w() + 1 + ALERT_W
        if self.unit:
            w += UNIT_W + 1
        if self.fabric:
            w += FABRIC_W + 1
        if self.jobs:
            w += JOBS_W + 1
        if self.sched:
            w += self.sched_w + 1
        if self.host:
            w += 2 * (PCT_W + 1)
        if self.io:
            w += 2 * (RATE_W + 1)
        return w + (self.trend_w + 1 if self.trend_w else 0) + (self.note_w + 1 if self.note_w else 0)

    @property
    def sched_w(self) -> int:
        return SCHED_SHORT_W if self.sched_short else SCHED_W

    def _gpu_w(self) -> int:
        cell = GPU_CELL[self.gpu_cell]
        return self.gpus * (cell + (cell > 1)) if self.gpus else 6


def choose_layout(
    width: int, name_w: int, gpus: int, unit: bool = False, fabric: bool = False, *, jobs: bool = False,
    sched: bool = False,
) -> Layout:
    base = _choose_layout_jobs(width, name_w, gpus, unit, fabric, jobs)
    if not sched:
        return base
    layouts = [base]
    if base.io:  # the scheduler's word and reason before disk and net rates
        freed = 2 * (RATE_W + 1)
        layouts.append(dataclasses.replace(base, io=False, note_w=base.note_w + freed if base.note_w else 0))
    # then the word alone: a drained node says "drain" even at 160 columns beside JOBS
    for short in (False, True):
        for layout in layouts:
            fitted = _fit_sched(dataclasses.replace(layout, sched=True, sched_short=short), width)
            if fitted is not None:
                return fitted
    return base


def _fit_sched(with_sched: Layout, width: int) -> Layout | None:
    """``with_sched`` with the room its SCHED column needs taken from the trend, then the note;
    None when it does not fit (the GPU cells keep theirs)."""
    over = with_sched.width - width
    if over <= 0:
        return with_sched
    if with_sched.trend_w:
        trend = with_sched.trend_w - over
        if trend >= TREND_MIN_W:
            with_sched = dataclasses.replace(with_sched, trend_w=trend)
        else:  # too short to read: dropped, what it frees beyond the overflow goes to the note
            spare = with_sched.trend_w + 1 - over
            note = with_sched.note_w + spare if with_sched.note_w and spare > 0 else with_sched.note_w
            with_sched = dataclasses.replace(with_sched, trend_w=0, note_w=note)
        over = with_sched.width - width
    if over > 0 and with_sched.note_w - over >= NOTE_MIN_W:
        with_sched = dataclasses.replace(with_sched, note_w=with_sched.note_w - over)
    return with_sched if with_sched.width <= width else None


def _choose_layout_jobs(width: int, name_w: int, gpus: int, unit: bool, fabric: bool, jobs: bool) -> Layout:
    layout = _choose_layout(width, name_w, gpus, unit, fabric)
    if fabric and not layout.note_w:  # the note (why a node needs a look) before the badge
        without = _choose_layout(width, name_w, gpus, unit, False)
        if without.note_w:
            layout = without
    if jobs:  # whose work it is, out of the note's room (or the trend's), never the GPU cells
        with_jobs = dataclasses.replace(layout, jobs=True)
        spare = width - with_jobs.width
        if spare >= 0:
            return with_jobs
        take_trend = min(layout.trend_w, -spare)
        trimmed = dataclasses.replace(with_jobs, trend_w=layout.trend_w - take_trend)
        if trimmed.trend_w and trimmed.trend_w < TREND_MIN_W:
            trimmed = dataclasses.replace(trimmed, trend_w=0, note_w=trimmed.note_w + trimmed.trend_w + 1)
        spare = width - trimmed.width
        if spare < 0 and trimmed.note_w + spare >= NOTE_MIN_W:
            trimmed = dataclasses.replace(trimmed, note_w=trimmed.note_w + spare)
        if width - trimmed.width >= 0:
            return trimmed
        if layout.io:  # disk and network rates (on the node screen too) make way for whose work it is
            without_io = dataclasses.replace(with_jobs, io=False)
            if width - without_io.width >= 0:
                return dataclasses.replace(without_io, note_w=without_io.note_w + width - without_io.width)
    return layout


def _choose_layout(width: int, name_w: int, gpus: int, unit: bool, fabric: bool) -> Layout:
    # GPU temperatures go last: host columns are dropped before GPU cells shrink to one character.
    for cell, host, io in (
        ("full", True, True),
        ("short", True, True),
        ("short", True, False),
        ("short", False, False),
        ("tiny", True, True),
        ("tiny", True, False),
        ("tiny", False, False),
    ):
        layout = Layout(name_w, gpus, cell, host, io, 0, unit, fabric=fabric)
        if layout.width <= width:
            spare = width - layout.width - 1
            # The note says why a node needs a look: it keeps its room, the trend takes the rest.
            # The fabric glyph's two columns come out of the note's minimum: both stay at 160.
            note_min = NOTE_MIN_W - (FABRIC_W + 1 if fabric else 0)
            trend = min(TREND_MAX_W, spare - note_min - 1) if gpus else 0
            if trend >= TREND_MIN_W:
                return Layout(name_w, gpus, cell, host, io, spare - trend - 1, unit, trend, fabric)
            return Layout(name_w, gpus, cell, host, io, spare if spare >= note_min else 0, unit, fabric=fabric)
    return Layout(name_w, gpus, "tiny", False, False, 0, unit, fabric=fabric)


def header(layout: Layout) -> Content:
    cell = GPU_CELL[layout.gpu_cell]
    if layout.gpus and cell == 7:
        gpus = "".join(f"{'GPU' + str(i):>7} " for i in range(layout.gpus))
    elif layout.gpus and cell == 4:
        gpus = "".join(f"{i:>4} " for i in range(layout.gpus))
    else:
        gpus = "GPUs".ljust(layout._gpu_w() + 1)
    parts = [" ", "NODE".ljust(layout.name_w + 1), "STATUS".ljust(STATUS_W + 1), "AGE".rjust(AGE_W), "  ", gpus]
    if layout.host:
        parts += ["CPU".rjust(PCT_W), " ", "MEM".rjust(PCT_W), " "]
    if layout.io:
        parts += ["DISK r/w".rjust(RATE_W), " ", "NET rx/tx".rjust(RATE_W), " "]
    if layout.unit:
        parts += ["UNIT".ljust(UNIT_W), " "]
    if layout.fabric:
        parts += ["⇄", " "]
    if layout.jobs:
        parts += ["JOBS".ljust(JOBS_W), " "]
    if layout.sched:
        parts += ["SCHED".ljust(layout.sched_w), " "]
    parts.append("ALRT")
    if layout.trend_w:
        parts += [" ", fmt.clip(f"HOT {TREND_SPAN_S // 60}m", layout.trend_w).ljust(layout.trend_w)]
    if layout.note_w:
        parts += [" ", "NOTE"]
    return Content.styled("".join(parts), HEADER_STYLE)


def row(node: NodeState, now: float, layout: Layout, th: levels.Thresholds) -> Content:
    s = node.sample
    live = node.status == st.OK
    status_level, word = levels.node_status(node, now, th)
    status = fmt.clip(f"{levels.STATUS_GLYPH[status_level]} {word}", STATUS_W)
    parts: list = [
        " ",
        (node.name.ljust(layout.name_w + 1), "bold"),
        (status.ljust(STATUS_W + 1), levels.STYLE[status_level]),
        (fmt.age(node.age(now)).rjust(AGE_W), "" if live else STALE_STYLE),
        "  ",
    ]
    parts += _gpu_cells(s, layout, th, live)
    parts.append(" ")
    if layout.host:
        parts += _host(s, live, th)
    if layout.io:
        parts += _io(s, live)
    if layout.unit:
        parts += [_unit(node, live), " "]
    if layout.fabric:
        parts += [_fabric(node, live), " "]
    if layout.jobs:
        parts += [_jobs(s, live), " "]
    if layout.sched:
        parts += [_sched(node, layout.sched_w), " "]
    parts.append(_alerts(node))
    if layout.trend_w:
        parts += [" ", _trend(node, layout.trend_w, th, live)]
    if layout.note_w:
        note_style = "$foreground-muted" if live else levels.STYLE[status_level]
        parts += [" ", (fmt.clip(_note(node), layout.note_w), note_style)]
    return Content.assemble(*parts)


def tile_parts(node: NodeState, now: float, name_w: int, gpus: int, th: levels.Thresholds) -> tuple:
    """``gpu017 ● ▇▇▇▇▇▇▇▇ ▲2``, a node in one short cell, one character per GPU, as (text,
    style) pairs: equal parts, equal picture, so a caller can skip building and painting a
    tile whose new sample changed no character."""
    live = node.status == st.OK
    level = levels.node_status(node, now, th)[0]
    parts: list = [
        (node.name.ljust(name_w + 1), "bold"),
        (levels.STATUS_GLYPH[level] + " ", levels.STYLE[level]),
    ]
    cells = node.sample.gpus if node.sample else []
    for g in cells[:gpus]:
        parts.append(_tiny(g, th, live))
    parts.append((" " * (gpus - len(cells[:gpus])) + " ", ""))
    parts.append(_alert_badge(node))
    return tuple(parts)


def tile_width(name_w: int, gpus: int) -> int:
    return name_w + 1 + 2 + gpus + 1 + ALERT_W


# -- cells ------------------------------------------------------------------------------------


def _gpu_cells(s: Sample | None, layout: Layout, th: levels.Thresholds, live: bool) -> list:
    width = layout._gpu_w()
    if s is None:
        return [("no data".ljust(width), STALE_STYLE)]
    if not s.gpus:
        return [("no GPU".ljust(width), "$foreground-muted")]
    draw = {"full": _full, "short": _short, "tiny": _tiny}[layout.gpu_cell]
    sep = " " if layout.gpu_cell != "tiny" else ""
    parts: list = []
    for g in s.gpus[: layout.gpus]:
        parts += [draw(g, th, live), sep]
    missing = layout.gpus - min(len(s.gpus), layout.gpus)
    parts.append(" " * (missing * (GPU_CELL[layout.gpu_cell] + len(sep))))
    return parts


def _temp_style(g: GpuSample, th: levels.Thresholds, live: bool) -> str:
    if not live:
        return STALE_STYLE
    level = levels.temperature(g.temperature_c, g.temperature_margin_c, th)
    if level == levels.HOT:
        return "bold reverse $text-error"  # reversed: hot must not be told by colour alone
    return levels.STYLE[level] if level != levels.OK else ""


def _util_style(g: GpuSample, th: levels.Thresholds, live: bool) -> str:
    if not live:
        return STALE_STYLE
    return levels.UTIL_STYLE[levels.utilization(g.utilization_percent, th)]


def _full(g: GpuSample, th: levels.Thresholds, live: bool) -> Content:
    if g.error:
        return Content.styled("err".rjust(7), "bold reverse $text-error")
    util = fmt.num(g.utilization_percent).rjust(3)
    temp = _temp_text(g).rjust(4)
    return Content.assemble((util, _util_style(g, th, live)), (temp, _temp_style(g, th, live)))


def _temp_text(g: GpuSample) -> str:
    """The core temperature ("68°"); a GPU without one shows its junction ("81j": MI300X has
    no edge sensor; the junction's own limits are the vendor's, judged by the rules, so the
    cell does not colour it by the core thresholds), else n/a."""
    if g.temperature_c is not None:
        return fmt.num(g.temperature_c, 0, "°")
    if g.hotspot_temperature_c is not None:
        return fmt.num(g.hotspot_temperature_c, 0, "j")
    return "n/a"


def _short(g: GpuSample, th: levels.Thresholds, live: bool) -> Content:
    if g.error:
        return Content.styled(" err", "bold reverse $text-error")
    temp = _temp_text(g).rjust(3)
    return Content.assemble(
        (bar(g.utilization_percent) if g.utilization_percent is not None else "?", _util_style(g, th, live)),
        (temp, _temp_style(g, th, live)),
    )


def _tiny(g: GpuSample, th: levels.Thresholds, live: bool) -> tuple[str, str]:
    """A (text, style) pair, not a Content: a 2048-node fleet draws thousands of these."""
    if g.error:
        return ("!", "bold reverse $text-error")
    if not live:
        return (bar(g.utilization_percent) if g.utilization_percent is not None else "?", STALE_STYLE)
    level = levels.temperature(g.temperature_c, g.temperature_margin_c, th)
    if level == levels.HOT:
        return ("!", "bold reverse $text-error")  # a shape, not only a colour
    char = bar(g.utilization_percent) if g.utilization_percent is not None else "?"
    return (char, levels.STYLE[level])


def _host(s: Sample | None, live: bool, th: levels.Thresholds) -> list:
    cpu = s.cpu.total_percent if s and s.cpu else None
    mem = None
    if s and s.memory and s.memory.used_bytes is not None and s.memory.total_bytes:
        mem = 100.0 * s.memory.used_bytes / s.memory.total_bytes
    if not live:
        return [(fmt.pct(cpu).rjust(PCT_W), STALE_STYLE), " ", (fmt.pct(mem).rjust(PCT_W), STALE_STYLE), " "]
    return [fmt.pct(cpu).rjust(PCT_W), " ", (fmt.pct(mem).rjust(PCT_W), _alarm(levels.memory(mem, th))), " "]


def _io(s: Sample | None, live: bool) -> list:
    style = "" if live else STALE_STYLE
    if s is None:
        return [(fmt.NA.rjust(RATE_W), style), " ", (fmt.NA.rjust(RATE_W), style), " "]
    busy = max((d.busy_percent for d in s.disks if d.busy_percent is not None), default=None)
    disk = _pair(_total(d.read_bytes_per_s for d in s.disks), _total(d.write_bytes_per_s for d in s.disks))
    net = _pair(_total(n.rx_bytes_per_s for n in s.networks), _total(n.tx_bytes_per_s for n in s.networks))
    disk_style = _alarm(levels.disk_busy(busy)) if live else STALE_STYLE
    return [(disk.rjust(RATE_W), disk_style), " ", (net.rjust(RATE_W), style), " "]


def _alarm(level: str) -> str:
    """Colour only what needs a look, so a healthy fleet reads calm."""
    return levels.STYLE[level] if level in (levels.WARM, levels.HOT) else ""


def _total(values) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _pair(a: float | None, b: float | None) -> str:
    return f"{fmt.size(a)}/{fmt.size(b)}"


_UNIT_STYLE = {ACTIVE: "$text-success", FAILED: "bold reverse $text-error", FLAPPING: "bold $text-warning"}


def _unit(node: NodeState, live: bool) -> Content:
    """The training unit at a glance: active / failed / flapping / inactive (blank: none)."""
    word = badge(node.sample.units, node.alerts) if node.sample else None
    if word is None:
        return Content(" " * UNIT_W)
    return Content.styled(word.ljust(UNIT_W), _UNIT_STYLE.get(word, "$foreground-muted") if live else STALE_STYLE)


# (glyph, style): a shape for each state, never colour alone
_FABRIC_BADGE = {
    fabric.DOWN: ("✖", "bold reverse $text-error"),
    fabric.SLOW: ("↓", "bold $text-warning"),
    fabric.ERRORS: ("!", "bold $text-warning"),
    fabric.OK: ("✓", "$foreground-muted"),
}


def _fabric(node: NodeState, live: bool) -> Content:
    """HCA ports and NVLink at a glance: ✓ ok, ✖ a port or link down, ↓ one slow, ! errors
    rising (blank: the node has none)."""
    word = fabric.badge(node.sample, node.alerts)
    if word is None:
        return Content(" " * FABRIC_W)
    glyph, style = _FABRIC_BADGE[word]
    return Content.styled(glyph, style if live else STALE_STYLE)


def _jobs(s: Sample | None, live: bool) -> Content:
    """Job ids (else users) on the node's GPUs; ``idle`` when they hold no process."""
    if s is None or not s.gpus:
        return Content(" " * JOBS_W)
    word = node_jobs(s.gpus)
    style = STALE_STYLE if not live else ("$foreground-muted" if word == "idle" else "")
    return Content.styled(fmt.clip(word, JOBS_W).ljust(JOBS_W), style)


def has_jobs(s: Sample | None) -> bool:
    """Whether this node's GPU processes carry an owner or a job (the JOBS column's cue)."""
    if s is None:
        return False
    return any(p.uid is not None or p.slurm_job is not None for g in s.gpus for p in g.processes)


_SCHED_STYLE = {"drain": "bold $text-warning", "draining": "bold $text-warning", "down": "bold reverse $text-error",
                "cordoned": "bold $text-warning", "notready": "bold reverse $text-error"}


def _sched(node: NodeState, width: int = SCHED_W) -> Content:
    """The scheduler's word and reason: ``drain dltui: GPU 3 hot [bob]``, ``mix``, ``idle``."""
    view = node.scheduler
    cell = view.cell() if view else ""
    style = _SCHED_STYLE.get(view.word, "$foreground-muted") if view else ""
    cell = cell if width >= SCHED_W else (view.word if view else "")
    return Content.styled(fmt.clip(cell, width).ljust(width), style)


def has_sched(node: NodeState) -> bool:
    """Whether the scheduler has a word for this node (the SCHED column's cue)."""
    return node.scheduler is not None and bool(node.scheduler.word)


def _alerts(node: NodeState) -> Content:
    return Content.styled(*_alert_badge(node))


def _alert_badge(node: NodeState) -> tuple[str, str]:
    """Warnings and criticals: info alerts are shown on the node screen, never as a badge."""
    counted = [a for a in node.alerts.values() if a.severity in (WARNING, CRITICAL)]
    if not counted:
        return (" " * ALERT_W, "")
    level = levels.severity(max((a.severity for a in counted), key=severity_rank))
    return (f"{levels.ALERT_GLYPH[level]}{len(counted)}".ljust(ALERT_W), levels.STYLE[level])


def _trend(node: NodeState, width: int, th: levels.Thresholds, live: bool) -> Content:
    """The hottest GPU's temperature over the last minutes, the hottest reading per character."""
    per_char = max(1, -(-int(TREND_SPAN_S / node.interval_s) // width))
    values = node.history.get(HOTTEST_GPU_C, width * per_char)
    line = sparkline(downsample(values, per_char, max), width, TREND_LOW_C, TREND_HIGH_C)
    if not live:
        return Content.styled(line, STALE_STYLE)
    gpus = node.sample.gpus if node.sample else []
    found = {levels.temperature(g.temperature_c, g.temperature_margin_c, th) for g in gpus}
    worst = next((lv for lv in (levels.HOT, levels.WARM) if lv in found), None)
    return Content.styled(line, levels.STYLE[worst] if worst else "$primary")


def _note(node: NodeState) -> str:
    """Why the node needs a look: the transport's reason, else its worst alert."""
    if node.status != st.OK and node.reason:
        return node.reason
    if any(a.severity != INFO for a in node.alerts.values()):
        worst = min(node.alerts.values(), key=alert_order)
        where = f"GPU{worst.gpu}: " if worst.gpu is not None and "GPU" not in worst.message else ""
        return where + worst.message
    return ""
