"""Short human forms of values, shared by the text report and the UI. ``None`` is ``n/a``."""

from __future__ import annotations

NA = "n/a"
_UNITS = ("B", "K", "M", "G", "T", "P")


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters; a cut one ends in "…", so a reader knows
    there is more (the node's reason, the alert's message) and never reads half a word as all."""
    if len(text) <= width:
        return text
    return text[: width - 1].rstrip() + "…" if width > 0 else ""


def num(value: float | None, digits: int = 0, unit: str = "") -> str:
    if value is None:
        return NA
    return f"{value:.{digits}f}{unit}"


def pct(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}%"


def size(value: float | None) -> str:
    """Bytes in powers of 1024, three significant figures: 512B, 1.5K, 23.4G."""
    if value is None:
        return NA
    v = float(value)
    for unit in _UNITS:
        if abs(v) < 1000 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{v:.0f}B"
            return f"{v:.1f}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"
        v /= 1024
    return f"{v:.0f}P"  # unreachable; keeps type checkers calm


def rate(value: float | None) -> str:
    return NA if value is None else size(value) + "/s"


def mib(value: float | None) -> str:
    return NA if value is None else size(value * 1024 * 1024)


def duration(seconds: float | None) -> str:
    """Compact age: 0.4s, 12s, 3m05s, 2h10m, 3d4h."""
    if seconds is None:
        return NA
    s = float(seconds)
    if s < 10:
        return f"{s:.1f}s"
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"


def age(seconds: float | None) -> str:
    """Whole seconds under a minute (0s, 42s), then as ``duration``: steady on a 1 Hz screen."""
    if seconds is None:
        return NA
    if seconds < 60:
        return f"{int(seconds)}s"
    return duration(seconds)


def value_span(low: float, high: float) -> tuple[float, float]:
    """A chart's y range: at least 5 % of the top value (and 2 units), so a steady reading (a
    clock at its max, a GPU at 59 °C) is a line, not noise magnified to fill the chart."""
    least = max(2.0, 0.05 * abs(high))
    if high - low < least:
        middle = (high + low) / 2
        low, high = middle - least / 2, middle + least / 2
    return low, high
