"""How ``dltui burn-in`` shows a run while it follows it.

On a terminal, one line per node redrawn in place about once a second: phase, state, time left,
samples and the verdict so far (judged every few seconds, as the dashboard's burn-in screen
does). Anywhere else (a CI log, a pipe) a line per node every 10 s and at each change of phase,
so logs stay readable. Standard library only: this package sits below the UI.
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO

from dltui.core import format as fmt
from dltui.core.text import clean

from . import live
from .remote import NodeRunView
from .verdict import Thresholds

LINE_EVERY_S = 10.0
DRAW_EVERY_S = 1.0
JUDGE_EVERY_S = 5.0  # the verdict so far: a fold over the run's samples, not every second


def for_stream(
    stream: TextIO, hosts: list[str], thresholds: Thresholds
) -> LineProgress | LiveProgress:
    """The live display on a terminal, lines otherwise."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return LiveProgress(stream, hosts, thresholds)
    return LineProgress(stream)


class LineProgress:
    """A line per node every ``LINE_EVERY_S`` and whenever its phase or state changes."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.last: dict[str, tuple[float, str]] = {}

    def __call__(self, view: NodeRunView) -> None:
        head = live.node_live_header(view)
        where = f"{head['phase']} ({head['state']})"
        now = time.monotonic()
        shown, said = self.last.get(view.node, (0.0, ""))
        if where == said and now - shown < LINE_EVERY_S:
            return
        self.last[view.node] = (now, where)
        left = "" if head["time_left_s"] is None else f", {fmt.duration(head['time_left_s'])} left"
        print(clean(f"{view.node}: {where}{left}, {head['samples']} samples"), file=self.stream, flush=True)

    def close(self) -> None:
        pass


class LiveProgress:
    """One line per node, rewritten in place (cursor up, clear to the end of the screen)."""

    def __init__(self, stream: TextIO, hosts: list[str], thresholds: Thresholds):
        self.stream = stream
        self.thresholds = thresholds
        self.rows: dict[str, str] = {h: f"{h}  starting" for h in hosts}
        self.so_far: dict[str, tuple[float, str]] = {}  # node -> (when judged, verdict words)
        self.drawn = 0
        self.last_draw = 0.0

    def __call__(self, view: NodeRunView) -> None:
        self.rows[view.node] = self._row(view)
        now = time.monotonic()
        if now - self.last_draw >= DRAW_EVERY_S:
            self.draw()

    def _row(self, view: NodeRunView) -> str:
        head = live.node_live_header(view)
        left = "" if head["time_left_s"] is None else f"{fmt.duration(head['time_left_s'])} left"
        judged, words = self.so_far.get(view.node, (0.0, "—"))
        now = time.monotonic()
        if view.collector.count and now - judged >= JUDGE_EVERY_S:
            words = _verdict_words(live.node_live(view, self.thresholds))
            self.so_far[view.node] = (now, words)
        state = clean(f"{head['phase']} ({head['state']})")
        trouble = f"  {clean(head['reason'])}" if head["reason"] else ""
        return f"{view.node}  {state:<22} {left:>12}  {head['samples']:>6} samples  so far {words}{trouble}"

    def draw(self) -> None:
        width = shutil.get_terminal_size((100, 24)).columns
        lines = [fmt.clip(row, width - 1) for row in self.rows.values()]  # never wrap: we count lines
        up = f"\x1b[{self.drawn}F" if self.drawn else ""
        self.stream.write(up + "\x1b[J" + "\n".join(lines) + "\n")
        self.stream.flush()
        self.drawn = len(lines)
        self.last_draw = time.monotonic()

    def close(self) -> None:
        self.draw()


def _verdict_words(node: live.NodeLive) -> str:
    """``PASS`` or ``WARN (GPU3 temp: 86 °C)``: the worst status and its first reason."""
    words = node.status.upper()
    for g in node.gpus:
        if g.problems:
            return f"{words} (GPU{g.index} {clean(g.problems[0])})"
    return words
