"""Drive health from SMART (probe/smart.py): ``drive_failing``, ``drive_wear``, ``drive_errors``.

The probe re-reads SMART every few minutes, so these rules see a drive's values change in
steps. One alert per node and rule names every drive it concerns, by device, model and serial
(the serial is what an RMA asks for).
"""

from __future__ import annotations

from typing import TypedDict

from ..models import DriveSample, Sample
from ..timeline import CRITICAL, INFO, WARNING
from .base import CLEAR, NODE, Finding, Rule
from .memory import NodeMemory

SPARE_BELOW_THRESHOLD = 0x01  # NVMe critical warning bit 0: drive_wear's, not drive_failing's
# Counters that only grow on a failing medium (ATA 197 pending can also fall back when a
# sector is rewritten fine; a rise is still news).
_COUNTERS = (
    ("media_errors_total", "media errors"),
    ("reallocated_sectors_total", "reallocated sectors"),
    ("pending_sectors", "pending sectors"),
    ("offline_uncorrectable_sectors", "offline uncorrectable sectors"),
)
# ATA sectors the drive cannot read now: smartd reports them at every check while any remain
# (its -C 197 and -U 198), in these words.
_UNREADABLE = (
    ("pending_sectors", "currently unreadable (pending) sectors"),
    ("offline_uncorrectable_sectors", "offline uncorrectable sectors"),
)
_UNREADABLE_FIELDS = frozenset(n for n, _ in _UNREADABLE)
_RMA = "back up what it holds and replace it (the serial is what the RMA needs)"


class DriveWearParams(TypedDict):
    """``[rules.drive_wear]`` (its defaults in RULES below)."""

    used_percent: float
    enabled: bool


class DriveErrorsParams(TypedDict):
    """``[rules.drive_errors]``."""

    clear_s: float
    enabled: bool


def drive_name(d: DriveSample) -> str:
    """``/dev/nvme0 (SAMSUNG MZWLL3T2HAJQ-00005, S/N S3…)``."""
    details = ", ".join(x for x in (d.model, f"S/N {d.serial}" if d.serial else None) if x)
    return f"{d.device} ({details})" if details else d.device


def drive_failing(sample: Sample, node: NodeMemory, p: dict) -> object:
    """SMART overall-health failed, or an NVMe critical warning bit other than low spare."""
    if not sample.drives:
        return None
    found, devices = [], []
    for d in sample.drives:
        mask = d.critical_warning_mask or 0
        bits = [n for n in d.critical_warnings or () if n != "spare_below_threshold"]
        only_spare = mask == SPARE_BELOW_THRESHOLD
        if bits:
            found.append(
                f"NVMe critical warning 0x{mask:02x} ({', '.join(bits)}) on {drive_name(d)}"
            )
        elif d.smart_passed is False and not only_spare:
            found.append(f"SMART overall-health self-assessment FAILED on {drive_name(d)}")
        else:
            continue
        devices.append(d.device)
    if not found:
        return CLEAR
    return Finding(
        CRITICAL,
        "; ".join(found),
        _RMA,
        evidence={"drives": devices},
        lasting=False,
        immediate=True,
    )


def drive_wear(sample: Sample, node: NodeMemory, p: DriveWearParams) -> object:
    """NVMe available spare under its threshold, or rated endurance nearly used up."""
    judged = [
        d
        for d in sample.drives
        if d.available_spare_percent is not None or d.endurance_used_percent is not None
    ]
    if not judged:
        return None
    found, devices = [], []
    for d in judged:
        spare, floor = d.available_spare_percent, d.available_spare_threshold_percent
        said = []
        if spare is not None and floor is not None and spare < floor:
            said.append(f"available spare {spare} % under its threshold {floor} %")
        used = d.endurance_used_percent
        if used is not None and used >= p["used_percent"]:
            said.append(f"{used} % of its rated endurance used")
        if said:
            found.append(f"{', '.join(said)} on {drive_name(d)}")
            devices.append(d.device)
    if not found:
        return CLEAR
    return Finding(
        WARNING,
        "; ".join(found),
        "plan its replacement before it turns read-only; move hot data off it",
        evidence={"drives": devices},
        lasting=False,
        immediate=True,
    )


def drive_errors(sample: Sample, node: NodeMemory, p: DriveErrorsParams) -> object:
    """Media errors and bad sectors. Sectors a drive cannot read now (ATA pending or offline
    uncorrectable) are a warning from the first reading on, as smartd reports them; the rest
    (reallocated sectors, media errors) is info while a drive has any, and a warning when they
    rise between two readings of the same drive (by device and serial) and for clear_s after."""
    if not sample.drives:
        return None
    seen = node.rule_state.setdefault("drive_counters", {})  # (device, serial) -> counts
    present, held = [], []  # history (info)
    rises, unreadable, devices = [], [], []  # a warning
    for d in sample.drives:
        key = (d.device, d.serial)
        before = seen.get(key)
        now = {name: getattr(d, name) for name, _ in _COUNTERS}
        seen[key] = now
        counts = [f"{now[n]} {words}" for n, words in _COUNTERS if now[n]]
        if counts:
            present.append(f"{', '.join(counts)} on {drive_name(d)}")
            held.append(d.device)
        grew = [
            f"{words} {before[n]} → {now[n]}"
            for n, words in _COUNTERS
            if before and now[n] is not None and before[n] is not None and now[n] > before[n]
        ]
        if grew:  # the rise says it all, pending sectors included
            rises.append(f"{', '.join(grew)} on {drive_name(d)}")
        elif any(now[n] for n, _ in _UNREADABLE):
            said = [f"{now[n]} {words}" for n, words in _UNREADABLE if now[n]]
            said += [
                f"{now[n]} {words}"
                for n, words in _COUNTERS
                if now[n] and n not in _UNREADABLE_FIELDS
            ]
            unreadable.append(f"{', '.join(said)} on {drive_name(d)}")
        else:
            continue
        devices.append(d.device)
    if rises or unreadable:
        return Finding(
            WARNING,
            "; ".join(rises + unreadable),
            "the medium is degrading: back up, then replace the drive; run a long self-test "
            "(smartctl -t long) to see how far it goes"
            if rises
            else "the drive cannot read those sectors now: back up what it holds, run a long "
            "self-test (smartctl -t long), and replace it if they stay or grow",
            evidence={"drives": devices, "rises": rises, "unreadable": unreadable},
            lasting=False,
            immediate=True,
        )
    if present:
        return Finding(
            INFO,
            "; ".join(present),
            "history, not a new fault: alerts follow rises",
            evidence={"drives": held},
            lasting=False,
        )
    return CLEAR


RULES = (
    Rule(
        "drive_failing",
        NODE,
        drive_failing,
        {},
        "a drive's SMART overall-health failed, or an NVMe critical warning (spare aside) (critical)",
        slow=True,
        concerns="drives",
    ),
    Rule(
        "drive_wear",
        NODE,
        drive_wear,
        {"used_percent": 90},
        "NVMe available spare under its threshold, or used_percent of its rated endurance used",
        slow=True,
        concerns="drives",
    ),
    Rule(
        "drive_errors",
        NODE,
        drive_errors,
        {"clear_s": 86400},
        "pending or offline-uncorrectable sectors (unreadable now): warning while any; media errors "
        "or reallocated sectors: info while any, warning when they rise between readings (and "
        "clear_s after)",
        slow=True,
        concerns="drives",
    ),
)
