"""Alerts and the per-node timeline: what happened, when, in order."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
INFO: Severity = "info"
WARNING: Severity = "warning"
CRITICAL: Severity = "critical"


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else 0


def severity_of(word: object) -> Severity:
    """``word`` as a severity; a word that is none (a node's own) ranks as info, as it sorts."""
    return next((s for s in SEVERITIES if s == word), INFO)


@dataclass(slots=True)
class Alert:
    """One open alert: one per (node, GPU, rule); its severity may rise or fall in place."""

    rule: str
    severity: Severity
    message: str
    since: float  # when the condition started (not when the alert was raised)
    gpu: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    on_timeline: bool = True  # its opening and closing are timeline entries (Finding.on_timeline)

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.rule, self.gpu)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["on_timeline"]  # how the engine writes the timeline, not part of the alert
        return out


def alert_order(alert: Alert) -> tuple[int, int, float, str]:
    """How alerts are listed everywhere (report, alerts pane, fleet row): worst first, then
    node-wide before GPU 0, 1, …, then the longest open, then by rule."""
    gpu = alert.gpu if alert.gpu is not None else -1
    return (-severity_rank(alert.severity), gpu, alert.since, alert.rule)


@dataclass(slots=True)
class TimelineEntry:
    time: float
    kind: str  # "alert-opened", "alert-closed", "alert-changed", "xid", "status", "fact-change", ...
    message: str
    severity: Severity = INFO
    gpu: int | None = None
    rule: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
