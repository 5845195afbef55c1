"""How a window is asked for: the step, the ranges of ``*_over_time`` and ``rate()``, and the
grid the answers are laid on.

The step is the larger of the scrape interval (finer adds nothing) and the window over the
chart's width in cells (finer cannot be drawn), and never so small that a series passes
Prometheus's 11,000 points. Each point reduces its whole step (``max_over_time`` for heat,
``min_over_time`` for clocks and utilisation), so a spike between two points is not lost;
``rate()`` looks back at least four scrapes, so a missed scrape is not a gap."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_POINTS = 11_000  # Prometheus refuses a range query of more points a series
DEFAULT_SCRAPE_S = 15.0  # Prometheus's own default, when the targets do not say
RATE_SCRAPES = 4


@dataclass(frozen=True)
class Plan:
    start: float  # the first point's time, a multiple of the step (answers cache across calls)
    end: float
    step_s: float
    over_s: float  # the range of *_over_time: one step, at least one scrape
    rate_s: float  # the range of rate(): at least RATE_SCRAPES scrapes

    @property
    def points(self) -> int:
        return int(round((self.end - self.start) / self.step_s)) + 1

    def index(self, t: float) -> int:
        return int(round((t - self.start) / self.step_s))

    def time(self, i: int) -> float:
        return self.start + i * self.step_s


def plan(window_s: float, end: float, cells: int, scrape_s: float = DEFAULT_SCRAPE_S) -> Plan:
    """The plan for the window ``window_s`` ending at ``end``, drawn ``cells`` wide (for a
    report that draws nothing, ``cells`` = MAX_POINTS: the finest Prometheus gives)."""
    step = max(scrape_s, window_s / max(1, cells), window_s / (MAX_POINTS - 1))
    step = float(math.ceil(step))
    last = math.ceil(end / step) * step  # the last step holds ``end``: the newest points are in
    first = last - math.ceil(window_s / step) * step
    return Plan(first, last, step, max(step, scrape_s), max(step, RATE_SCRAPES * scrape_s))


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_s(text: str) -> float | None:
    """A Prometheus or command-line duration (``15s``, ``1m30s``, ``7d``) in seconds."""
    text = text.strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def promql_duration(seconds: float) -> str:
    return f"{max(1, int(math.ceil(seconds)))}s"
