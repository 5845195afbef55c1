"""A time-series line chart drawn straight into braille cells: the frame, ticks and lines that
plotext drew, without plotext's per-point matrix work (80 % of a 2-hour chart's redraw).

Each series is reduced to at most two dots a braille column (its lowest and highest there)
before anything is drawn, so a redraw costs the same for 300 samples as for 7200. A value of
None or NaN is a gap: nothing is drawn there and a joined line is not carried across it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

# 256-colour codes of the colour names the charts use (plotext's table; plotext knew no
# "yellow" and drew it in the default colour: here it is the bright yellow it was meant to be).
COLOR_CODES = {
    "black": 0, "red": 1, "green": 2, "orange": 3, "blue": 4, "magenta": 5, "cyan": 6,
    "gray+": 7, "gray": 8, "red+": 9, "green+": 10, "orange+": 11, "yellow": 11, "blue+": 12,
    "magenta+": 13, "cyan+": 14, "white": 15,
}  # fmt: skip
# the dot bits of a braille cell (U+2800 + bits), by (column, row) inside it, rows from the top:
# dots 1 2 3 7 on the left, 4 5 6 8 on the right
_DOTS = ((1, 2, 4, 64), (8, 16, 32, 128))
BAND = "━"


@dataclass
class Line:
    """One series in chart coordinates: ``values`` None/NaN where there is no reading."""

    times: Sequence[float]
    values: Sequence[float | None]
    color: str
    joined: bool  # sparse series are joined point to point, dense ones are dots


Segment = tuple[str, "int | None"]  # text and its 256-colour code (None: the default colour)


def colour_code(name: str) -> int | None:
    return COLOR_CODES.get(name)


class Canvas:
    """``cols`` x ``rows`` braille cells: dots OR'd together, a cell's colour the last drawn."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.bits = [[0] * cols for _ in range(rows)]
        self.colour: list[list[int | None]] = [[None] * cols for _ in range(rows)]
        self.marks: dict[tuple[int, int], str] = {}  # whole-cell marks (the alert band)

    def dot(self, x: int, y: int, colour: int | None) -> None:
        """Pixel ``x`` (0 at the left, 2 a cell) and ``y`` (0 at the top, 4 a cell)."""
        row, col = y >> 2, x >> 1
        if 0 <= row < self.rows and 0 <= col < self.cols and x >= 0 and y >= 0:
            self.bits[row][col] |= _DOTS[x & 1][y & 3]
            self.colour[row][col] = colour

    def column(self, x: int, y0: int, y1: int, colour: int | None) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            self.dot(x, y, colour)

    def mark(self, row: int, col0: int, col1: int, char: str, colour: int | None) -> None:
        for col in range(max(0, col0), min(self.cols - 1, col1) + 1):
            self.marks[(row, col)] = char
            self.colour[row][col] = colour

    def write(self, row: int, col: int, text: str, colour: int | None) -> None:
        """Text over whatever is drawn there (the legend), cut at the right edge."""
        for i, char in enumerate(text):
            self.mark(row, col + i, col + i, char, colour)

    def line_segments(self, row: int) -> list[Segment]:
        """One row as runs of one colour (blank cells in the default colour)."""
        out: list[Segment] = []
        bits, colours = self.bits[row], self.colour[row]
        text: list[str] = []
        current: int | None = None
        for col in range(self.cols):
            char = self.marks.get((row, col))
            if char is None:
                b = bits[col]
                char = chr(0x2800 + b) if b else " "
                code = colours[col] if b else None
            else:
                code = colours[col]
            if code != current and text:
                out.append(("".join(text), current))
                text = []
            current = code
            text.append(char)
        if text:
            out.append(("".join(text), current))
        return out


def plot(canvas: Canvas, line: Line, x_of, y_of) -> None:
    """``line`` on ``canvas``: ``x_of``/``y_of`` map a time/value to a pixel. At most the lowest
    and highest dot of each pixel column are kept (a bounded cost whatever the sample count);
    a joined line also fills the rise between neighbours, but never across a gap."""
    colour = colour_code(line.color)
    low: dict[int, int] = {}
    high: dict[int, int] = {}
    runs: list[list[int]] = [[]]  # pixel columns in order, a new run after each gap
    for t, v in zip(line.times, line.values, strict=False):
        if v is None or v != v or t is None:
            if runs[-1]:
                runs.append([])
            continue
        x, y = x_of(t), y_of(v)
        if x not in low:
            low[x] = high[x] = y
            runs[-1].append(x)
        elif y < low[x]:
            low[x] = y
        elif y > high[x]:
            high[x] = y
    for run in runs:
        previous = None
        for x in run:
            top, bottom = low[x], high[x]
            if not line.joined:
                canvas.dot(x, top, colour)
                canvas.dot(x, bottom, colour)
                continue
            if previous is not None:
                _join(canvas, previous, x, low[previous], high[previous], top, bottom, colour)
            canvas.column(x, top, bottom, colour)
            previous = x


def _join(canvas: Canvas, x0: int, x1: int, top0: int, bottom0: int, top1: int, bottom1: int,
          colour: int | None) -> None:  # fmt: skip
    """The straight line from column ``x0`` to ``x1`` (the nearer ends of their spans)."""
    y0 = bottom0 if bottom0 < top1 else top0 if top0 > bottom1 else top0
    y1 = top1 if bottom0 < top1 else bottom1 if top0 > bottom1 else top1
    steps = max(abs(x1 - x0), abs(y1 - y0), 1)
    for i in range(1, steps):
        canvas.dot(x0 + round((x1 - x0) * i / steps), y0 + round((y1 - y0) * i / steps), colour)


def centred(text: str, width: int) -> str:
    pad = max(0, width - len(text))
    return " " * (pad - pad // 2) + text + " " * (pad // 2)


def x_labels(columns: Sequence[int], labels: Sequence[str], width: int) -> str:
    """Each label centred under its column, dropped where it would overlap the one before."""
    out = [" "] * width
    free = 0
    for col, label in zip(columns, labels, strict=True):
        begin = min(max(0, col - (len(label) - 1) // 2), max(0, width - len(label)))
        if begin < free or begin + len(label) > width:
            continue
        out[begin : begin + len(label)] = label
        free = begin + len(label) + 1
    return "".join(out)


def to_ansi(lines: Sequence[Sequence[Segment]]) -> str:
    return "\n".join(
        "".join(text if code is None else f"\x1b[38;5;{code}m{text}\x1b[0m" for text, code in line)
        for line in lines
    )


_STYLES: dict[int, Style] = {}


def to_text(lines: Sequence[Sequence[Segment]]) -> Text:
    """The same lines as a Rich ``Text``: no ANSI to parse on the UI's side."""
    out = Text(no_wrap=True, end="")
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        for text, code in line:
            if code is None:
                out.append(text)
            else:
                style = _STYLES.get(code)
                if style is None:
                    style = _STYLES[code] = Style(color=f"color({code})")
                out.append(text, style)
    return out


def pixel(value: float, low: float, high: float, pixels: int) -> int:
    """Where ``value`` falls on ``pixels`` pixels spanning [low, high] (clamped)."""
    span = high - low
    at = (value - low) / span if span > 0 else 0.5
    return min(pixels - 1, max(0, math.floor(at * pixels)))


def axis(low: float, high: float, pixels: int) -> Callable[[float], int]:
    """``pixel`` for one axis with its constants worked out once: it runs for every point."""
    span = high - low
    k, last = (pixels / span if span > 0 else 0.0), pixels - 1
    middle = pixels // 2

    def at(value: float) -> int:
        if k == 0.0:
            return middle
        i = int((value - low) * k)
        return 0 if i < 0 else last if i > last else i

    return at
