"""Sparklines as text: one character per sample, eight heights, a blank for a gap."""

from __future__ import annotations

from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"
GAP = " "  # no sample (node away, value not reported): never drawn as a zero


def sparkline(values: Sequence[float | None], width: int, low: float, high: float) -> str:
    """The newest ``width`` values scaled between ``low`` and ``high``, right-aligned.

    A value at or under ``low`` is the lowest bar, so a zero is visible and differs from a gap.
    """
    if width <= 0:
        return ""
    values = values[-width:]
    span = high - low if high > low else 1.0
    top = len(BARS) - 1
    chars = []
    for v in values:
        if v is None:
            chars.append(GAP)
        else:
            level = int((v - low) / span * top + 0.5)
            chars.append(BARS[0 if level < 0 else top if level > top else level])
    return GAP * (width - len(chars)) + "".join(chars)


def bar(value: float | None, high: float = 100.0) -> str:
    """One character for one value (a GPU in the compact fleet view): ``sparkline([value], 1,
    0, high)`` without its lists, as thousands of tiles draw one each."""
    if value is None:
        return GAP
    top = len(BARS) - 1
    level = int(value / (high if high > 0 else 1.0) * top + 0.5)
    return BARS[0 if level < 0 else top if level > top else level]


def downsample(values: Sequence[float | None], per_char: int, pick=max) -> list[float | None]:
    """Groups of ``per_char`` values, newest group last, each reduced by ``pick``.

    ``pick`` is the worst case of the series: ``max`` for temperature or memory, ``min`` for
    utilisation, so a short dip or spike survives the squeeze. A group with no value is a gap.
    """
    if per_char <= 1:
        return list(values)
    out: list[float | None] = []
    end = len(values)
    while end > 0:
        group = [v for v in values[max(0, end - per_char) : end] if v is not None]
        out.append(pick(group) if group else None)
        end -= per_char
    out.reverse()
    return out
