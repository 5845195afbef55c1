"""The Disks pane's drive health rows: one per drive smartctl reads (SMART, every few minutes).

A row is coloured by the alerts open on that drive (the rules that concern drives name it in
their evidence), so the pane and the alerts agree whatever thresholds the config sets.
"""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.models import DriveSample
from dltui.core.rules import RULES
from dltui.core.state import NodeState
from dltui.core.timeline import CRITICAL, WARNING

from .. import levels

DRIVE_RULES = tuple(rule.id for rule in RULES if rule.concerns == "drives")
MUTED = "$foreground-muted"


def drive_lines(node: NodeState, now: float) -> list[Content]:
    """A heading with the reading's age, then a row per drive; nothing before any reading."""
    s = node.sample
    if s is None or not s.drives:
        return []
    newest = max((d.read_time for d in s.drives if d.read_time is not None), default=None)
    age = f"read {fmt.age(now - newest)} ago" if newest is not None else "not read yet"
    lines = [Content.styled(f"drive health (SMART, {age})", MUTED)]
    width = max(len(_short(d.device)) for d in s.drives)
    for d in s.drives:
        style = _alerted(node, d.device)
        lines.append(
            Content.assemble(
                (_short(d.device).ljust(width + 1), "bold"),
                (_health(d).ljust(7), style),
                *_counters(d),
                (f" {fmt.num(d.temperature_c)}°C" if d.temperature_c is not None else ""),
            )
        )
        trouble = _trouble(d, style, " " * (width + 1))
        if trouble is not None:
            lines.append(trouble)
    return lines


def _short(device: str) -> str:
    return device.removeprefix("/dev/")


def _health(d: DriveSample) -> str:
    if d.smart_passed is None:
        return "n/a"
    return "PASSED" if d.smart_passed else "FAILED"


def _counters(d: DriveSample) -> list:
    """NVMe wear and errors; ATA sectors; SAS grown defects and uncorrected errors."""
    if d.available_spare_percent is not None or d.endurance_used_percent is not None:
        return [
            ("spare ", MUTED),
            f"{fmt.num(d.available_spare_percent)}/{fmt.num(d.available_spare_threshold_percent)}%",
            (" used ", MUTED),
            fmt.pct(d.endurance_used_percent),
            (" media ", MUTED),
            fmt.num(d.media_errors_total),
            (" unsafe ", MUTED),
            fmt.num(d.unsafe_shutdowns_total),
        ]
    if d.pending_sectors is not None or d.offline_uncorrectable_sectors is not None:
        return [
            ("realloc ", MUTED),
            fmt.num(d.reallocated_sectors_total),
            (" pend ", MUTED),
            fmt.num(d.pending_sectors),
            (" uncorr ", MUTED),
            fmt.num(d.offline_uncorrectable_sectors),
            (" crc ", MUTED),
            fmt.num(d.udma_crc_errors_total),
        ]
    return [
        ("defects ", MUTED),
        fmt.num(d.reallocated_sectors_total),
        (" uncorr ", MUTED),
        fmt.num(d.media_errors_total),
    ]


def _trouble(d: DriveSample, style: str, indent: str) -> Content | None:
    """A line under the drive's row for its NVMe critical warning bits and why it could not
    be read now (its row then shows the last reading)."""
    parts: list = []
    if d.critical_warnings:
        mask = f" (0x{d.critical_warning_mask:02x})" if d.critical_warning_mask is not None else ""
        parts.append((f"{', '.join(d.critical_warnings)}{mask}", style or levels.STYLE[levels.HOT]))
    if d.error:
        parts.append((f"{' ' if parts else ''}not read now: {d.error}", MUTED))
    return Content.assemble(indent, *parts) if parts else None


def _alerted(node: NodeState, device: str) -> str:
    """The style of the worst open drive alert naming ``device``; "" for none or info."""
    severities = [
        alert.severity
        for rule in DRIVE_RULES
        if (alert := node.alerts.get((rule, None))) is not None
        and device in alert.evidence.get("drives", ())
    ]
    if CRITICAL in severities:
        return levels.STYLE[levels.HOT]
    if WARNING in severities:
        return levels.STYLE[levels.WARM]
    return ""
