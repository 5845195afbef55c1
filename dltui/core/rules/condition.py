"""The one mechanism behind every alert: minimum duration, hysteresis, severity changes.

A ``Condition`` follows one (node, rule, GPU). Each answer a rule gives moves it on; ``advance``
says what became visible: an alert opened, changed severity, needs fresh words, or closed.

- Opening: the finding's level must hold for ``for_s`` (per severity) and ``for_samples``.
- Closing: ``CLEAR`` answers for ``clear_s`` in a row; ``HOLD`` (the hysteresis band) keeps the
  alert open and restarts that count.
- Severity rises as soon as the higher level is due, and falls only after the lower level has
  lasted ``clear_s``, so a value hovering at a threshold does not flap.
- Snapshot mode (``window``): a condition the rule found on every judgement so far opens at
  once, marked provisional, at the lowest level it showed; the first answer that breaks it
  closes a provisional alert, because it no longer held for the whole window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..timeline import SEVERITIES, Severity
from .base import CLEAR, HOLD, Finding

RANK = {level: rank for rank, level in enumerate(SEVERITIES)}

# What ``advance`` reports.
OPEN, CHANGE, UPDATE, CLOSE, DROP = "open", "change", "update", "close", "drop"


@dataclass(frozen=True, slots=True)
class Timing:
    for_s: tuple[float, float, float]  # per severity rank (info, warning, critical)
    for_samples: int = 1
    clear_s: float = 0.0
    warmup_s: float = 0.0  # history a rule needs before it can judge at all

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> Timing:
        base = float(p.get("for_s", 0.0))
        return cls(
            (base, base, float(p.get("critical_for_s", base))),
            int(p.get("for_samples", 1)),
            float(p.get("clear_s", 0.0)),
            float(p.get("warmup_s", 0.0)),
        )

    def needs(self, rank: int) -> str:
        """The usual minimum in words, for the snapshot note: "60 s", "2 samples"."""
        wait = max(self.for_s[rank], self.warmup_s)
        if wait > 0:
            return f"{wait:g} s"
        return f"{self.for_samples} samples"


class Condition:
    __slots__ = (
        "started", "level_since", "samples", "severity", "clean_since", "lower_since", "provisional", "broken", "floor"
    )

    def __init__(self) -> None:
        self.started: float | None = None  # when the current unbroken run of findings began
        self.level_since: list[float | None] = [None, None, None]  # per rank reached
        self.samples = 0
        self.severity: Severity | None = None  # of the open alert; None = no alert
        self.clean_since: float | None = None
        self.lower_since: float | None = None
        self.provisional = False
        self.broken = False  # snapshot mode: the rule once answered CLEAR or HOLD
        self.floor = 2  # snapshot mode: the lowest level found so far

    def _reset_run(self) -> None:
        self.started = None
        self.level_since = [None, None, None]
        self.samples = 0
        self.lower_since = None


def advance(cond: Condition, answer: Any, now: float, timing: Timing, first_seen: float, window: bool) -> str | None:
    """Move ``cond`` on by one answer (never None: N/A is not passed here). In snapshot mode
    the engine passes every answer, so a condition remembers whether it was ever broken."""
    if answer is CLEAR or answer is HOLD:
        cond._reset_run()
        if window:
            cond.broken = True
        if cond.severity is None:
            return None if window else DROP
        if cond.provisional:
            return CLOSE
        if answer is HOLD:
            cond.clean_since = None
            return None
        if cond.clean_since is None:
            cond.clean_since = now
        return CLOSE if now - cond.clean_since >= timing.clear_s else None

    finding: Finding = answer
    rank = RANK[finding.level]
    cond.clean_since = None
    if cond.started is None:
        cond.started = now
    cond.samples += 1
    since = cond.level_since
    for r in range(3):
        if r > rank:
            since[r] = None
        elif since[r] is None:
            since[r] = now
    due = _due(cond, rank, now, timing, first_seen, finding.immediate)
    cond.floor = min(cond.floor, rank)

    if cond.severity is None:
        if due >= 0:
            cond.severity, cond.provisional = SEVERITIES[due], False
            return OPEN
        if window and not cond.broken:
            cond.severity, cond.provisional = SEVERITIES[cond.floor], True
            return OPEN
        return None

    current = RANK[cond.severity]
    if cond.provisional:
        if due >= 0:
            cond.provisional = False
            return _set(cond, due)
        return _set(cond, cond.floor)
    if due > current:
        cond.lower_since = None
        return _set(cond, due)
    if rank < current:
        if cond.lower_since is None:
            cond.lower_since = now
        if now - cond.lower_since >= timing.clear_s:
            cond.lower_since = None
            return _set(cond, rank)
    else:
        cond.lower_since = None
    return UPDATE


def _due(cond: Condition, rank: int, now: float, timing: Timing, first_seen: float, immediate: bool) -> int:
    """The highest severity whose minimum duration is met, or -1."""
    if immediate:
        return rank
    if cond.samples < timing.for_samples or now - first_seen < timing.warmup_s:
        return -1
    # Info is never a step on the way to a warning: a warning rule opens as a warning.
    for r in range(rank, -1 if rank == 0 else 0, -1):
        since = cond.level_since[r]
        if since is not None and now - since >= timing.for_s[r]:
            return r
    return -1


def _set(cond: Condition, rank: int) -> str:
    level = SEVERITIES[rank]
    if level == cond.severity:
        return UPDATE
    cond.severity = level
    return CHANGE
