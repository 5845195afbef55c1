"""The braille line chart: gaps stay gaps, and a column holds at most its lowest and highest dot."""

from __future__ import annotations

import math
import re

from dltui.ui import braille, charts

T0 = 1_796_300_000.0


def _canvas_rows(text: str) -> list[str]:
    """The canvas between the frame's sides, one string a row (ANSI colours left out)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [re.split("[│┤]", line, maxsplit=1)[1][:-1] for line in plain.splitlines()
            if line.endswith("│") and "┌" not in line]  # fmt: skip


def _drawn_columns(text: str) -> set[int]:
    rows = _canvas_rows(text)
    return {i for row in rows for i, c in enumerate(row) if "\u2801" <= c <= "\u28ff"}


def test_a_missing_value_is_a_gap_in_a_joined_line_not_a_bridge():
    """A Prometheus window with no value for a minute: neither None nor NaN is drawn, and the
    line on either side is not joined across the hole."""
    times = [T0 + 10 * i for i in range(31)]
    for hole in (None, math.nan):
        values = [50.0 + (i % 3) for i in range(31)]
        for i in range(10, 20):
            values[i] = hole  # type: ignore[call-overload]
        chart = charts.Chart("t", "°C", T0, T0 + 300, [charts.Series("", times, values)])
        text = charts.render(chart, 80, 14)
        drawn, cols = _drawn_columns(text), len(_canvas_rows(text)[0])
        # cells wholly between the last reading before the hole (90 s) and the first after (200 s)
        gap = {c for c in range(cols) if 300 * c / cols > 95 and 300 * (c + 1) / cols < 195}
        assert drawn and not drawn & gap, f"{hole!r} drew inside the gap"
        assert min(drawn) < min(gap) and max(drawn) > max(gap), "both sides are drawn"


def test_a_dense_series_keeps_at_most_the_low_and_high_dot_of_each_column():
    """7200 samples on 40 braille columns: each column gets its extremes, not 180 dots."""
    canvas = braille.Canvas(20, 4)
    times = [float(i) for i in range(7200)]
    values = [float(i % 16) for i in range(7200)]
    line = braille.Line(times, values, "cyan", joined=False)
    x_of = braille.axis(0.0, 7200.0, 40)
    braille.plot(canvas, line, x_of, lambda v: int(v))
    dots = [[bin(canvas.bits[r][c]).count("1") for r in range(4)] for c in range(20)]
    assert all(sum(col) == 4 for col in dots)  # two pixel columns a cell, two dots each
    assert canvas.bits[0][0] and canvas.bits[3][0], "the lowest and highest value both show"


def test_the_frame_ticks_and_key_read_as_before():
    """Title, value ticks on the left, time ticks under the frame, the key when there are many."""
    times = [T0 + i for i in range(300)]
    series = [
        charts.Series(f"GPU{g}", times, [60.0 + g + (i % 5) for i in range(300)]) for g in range(8)
    ]
    text = charts.render(
        charts.Chart("every GPU", "°C", T0, T0 + 300, charts.overlay(series)), 100, 20
    )
    lines = text.splitlines()
    assert len(lines) == 20 and "every GPU · °C" in lines[0]
    assert "GPU0" in lines[1] and "GPU7" in lines[1] and "\x1b[38;5;6m" in lines[1]
    assert any(line.lstrip().startswith("70┤") for line in lines)
    assert lines[-2].strip().startswith("└") and "┬" in lines[-2]
    plain = charts.render_text(
        charts.Chart("every GPU", "°C", T0, T0 + 300, charts.overlay(series)), 100, 20
    )
    assert plain.plain.splitlines()[0] == lines[0]
