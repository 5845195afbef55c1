"""The drives' SMART counters before the load and after it (probe/smart.py reads them, as root
or through ``sudo -n``): a drive whose media errors or bad sectors rose during the run, or
that reports itself failing at the end, is the run's finding."""

from __future__ import annotations

from typing import Any

from dltui.node.burnin.baseline import Baseline
from dltui.node.burnin.places import Result, RunDir
from dltui.node.probe.smart import SmartReader

# What a run compares, before and after (cumulative counts, and ATA 197's current count).
COUNTERS = (
    "media_errors_total",
    "reallocated_sectors_total",
    "pending_sectors",
    "offline_uncorrectable_sectors",
)
_KEPT = ("device", "model", "serial", "smart_passed", "critical_warnings", "error", *COUNTERS)


def _by_drive(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each drive's kept fields, by ``device`` (a drive swapped mid-run has a new serial)."""
    return {r["device"]: {k: r.get(k) for k in _KEPT} for r in records}


class DriveHealth(Baseline):
    key = "drives"

    def __init__(self) -> None:
        self._reader = SmartReader()
        self._before: dict[str, dict[str, Any]] | None = None

    def before(self, run: RunDir, result: Result) -> None:
        records = self._reader.read()
        if not records and self._reader.note:  # no smartctl, or sudo refused: why, said once
            result[self.key] = {"tool": None, "reason": self._reader.note}
            return
        self._reader.records = records  # a drive unreadable at the end keeps this reading
        self._before = _by_drive(records)
        result[self.key] = {"tool": "smartctl", "before": self._before}

    def after(self, run: RunDir, result: Result, since: float) -> None:
        if self._before is None:
            return
        records = self._reader.read()
        if not records and self._reader.note:
            result[self.key].update(after=None, reason="after the run: %s" % self._reader.note)
            return
        result[self.key]["after"] = _by_drive(records)
