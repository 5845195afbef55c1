"""Drive health (SMART) and the software stack as Prometheus families, for ``metrics.render``.

Drive series carry ``node`` and ``device``; the drive's model, serial, type and protocol are
labels of ``dltui_drive_info`` only, so the other series stay lean. Counters end in
``_total``; ratios are 0-1 (endurance used can pass 1: drives report up to 255 %). The stack
is the ``dltui_stack_info`` fact and a few 0/1 gauges. Absent values are absent series.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dltui.core.models import DriveSample, StackFacts

from .page import PERCENT, Labels, Page, labels

HOUR = 3600.0
# (name, type, help, getter, scale)
_DRIVE: tuple[tuple[str, str, str, Callable[[DriveSample], Any], float], ...] = (
    (
        "dltui_drive_smart_passed",
        "gauge",
        "SMART overall-health self-assessment passed (1) or failed (0).",
        lambda d: d.smart_passed,
        1.0,
    ),
    (
        "dltui_drive_critical_warning",
        "gauge",
        "NVMe critical warning bits (0 when none is set).",
        lambda d: d.critical_warning_mask,
        1.0,
    ),
    (
        "dltui_drive_available_spare_ratio",
        "gauge",
        "NVMe available spare (0-1).",
        lambda d: d.available_spare_percent,
        PERCENT,
    ),
    (
        "dltui_drive_available_spare_threshold_ratio",
        "gauge",
        "NVMe available spare under which the drive warns (0-1).",
        lambda d: d.available_spare_threshold_percent,
        PERCENT,
    ),
    (
        "dltui_drive_endurance_used_ratio",
        "gauge",
        "NVMe share of rated endurance used (can pass 1).",
        lambda d: d.endurance_used_percent,
        PERCENT,
    ),
    (
        "dltui_drive_media_errors_total",
        "counter",
        "Media and data integrity errors (NVMe); uncorrected read and write errors (SAS).",
        lambda d: d.media_errors_total,
        1.0,
    ),
    (
        "dltui_drive_error_log_entries_total",
        "counter",
        "NVMe error information log entries.",
        lambda d: d.error_log_entries_total,
        1.0,
    ),
    (
        "dltui_drive_unsafe_shutdowns_total",
        "counter",
        "NVMe unsafe shutdowns.",
        lambda d: d.unsafe_shutdowns_total,
        1.0,
    ),
    (
        "dltui_drive_reallocated_sectors_total",
        "counter",
        "Reallocated sectors (ATA attribute 5); grown defects (SAS).",
        lambda d: d.reallocated_sectors_total,
        1.0,
    ),
    (
        "dltui_drive_pending_sectors",
        "gauge",
        "Sectors waiting to be reallocated (ATA attribute 197).",
        lambda d: d.pending_sectors,
        1.0,
    ),
    (
        "dltui_drive_offline_uncorrectable_sectors",
        "gauge",
        "Sectors found uncorrectable offline (ATA attribute 198).",
        lambda d: d.offline_uncorrectable_sectors,
        1.0,
    ),
    (
        "dltui_drive_udma_crc_errors_total",
        "counter",
        "Interface CRC errors (ATA attribute 199): cabling.",
        lambda d: d.udma_crc_errors_total,
        1.0,
    ),
    (
        "dltui_drive_temperature_celsius",
        "gauge",
        "Drive temperature.",
        lambda d: d.temperature_c,
        1.0,
    ),
    (
        "dltui_drive_power_on_seconds_total",
        "counter",
        "Time the drive has been powered on.",
        lambda d: d.power_on_hours,
        HOUR,
    ),
    ("dltui_drive_capacity_bytes", "gauge", "Drive capacity.", lambda d: d.capacity_bytes, 1.0),
    (
        "dltui_drive_smart_read_timestamp_seconds",
        "gauge",
        "When SMART was last read (node clock, seconds since the epoch).",
        lambda d: d.read_time,
        1.0,
    ),
)


def drive_families(page: Page, n: Labels, drives: list[DriveSample]) -> None:
    if not drives:
        return
    info = page.family("dltui_drive_info", "gauge", "Facts about a drive (value 1).")
    readable = page.family(
        "dltui_drive_smart_readable", "gauge", "0 when the last SMART read failed."
    )
    by_drive = [n + (("device", d.device),) for d in drives]
    for lab, d in zip(by_drive, drives, strict=True):
        info.add(
            lab
            + labels(
                ("model", d.model), ("serial", d.serial), ("type", d.type), ("protocol", d.protocol)
            ),
            1,
        )
        readable.add(lab, d.error is None)
    for name, type_, help_, get, scale in _DRIVE:
        fam = page.family(name, type_, help_)
        for lab, d in zip(by_drive, drives, strict=True):
            fam.add(lab, get(d), scale)


def stack_families(page: Page, n: Labels, s: StackFacts) -> None:
    page.family(
        "dltui_stack_info", "gauge", "The node's driver packages and kernels (value 1)."
    ).add(
        n
        + labels(
            ("package_manager", s.package_manager),
            ("driver_package_version", s.driver_package_version),
            ("driver_module_version", s.driver_module_version),
            ("kernel_newest_installed", s.kernel_newest_installed),
        ),
        1,
    )
    for name, help_, value in (
        (
            "dltui_stack_driver_held",
            "1 when every NVIDIA driver package is held / version-locked.",
            s.driver_held,
        ),
        (
            "dltui_stack_auto_upgrades",
            "1 when automatic upgrades install updates on their own.",
            s.auto_upgrades,
        ),
        (
            "dltui_stack_auto_upgrades_skip_driver",
            "1 when automatic upgrades leave the driver packages out.",
            s.auto_upgrades_skip_driver,
        ),
        (
            "dltui_stack_reboot_pending",
            "1 when a reboot waits (reboot-required, a newer kernel or driver).",
            bool(s.reboot_reasons),
        ),
    ):
        page.family(name, "gauge", help_).add(n, value)
