"""``dltui replay FILE``: a recording (see ``format``) played back as a transport.

Every recorded call is made again on the sink, spaced as it was recorded (divided by
``speed``; ``speed=0`` plays as fast as the loop allows). Afterwards the transport idles, so the
dashboard holds the last state until the operator quits. ``clock`` is the recording's own wall
clock at the current point of the playback: a ``FleetState`` built with it shows ages, timeline
times and rule durations as they were, not as the replay happens to run.

A line that cannot be read (cut off, garbage, nested too deep, or timed outside the recording's
span) is counted and reported as an event to every node, like a probe's malformed line; the
rest plays on.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dltui.core.format import clip
from dltui.core.models import NodeEvent, is_time
from dltui.core.text import clean

from ..base import Sink
from .format import READS, SampleRebuilder, open_file, parse_line

_HEADER_MAX_BYTES = 65536  # a wrong file (an image, a tarball) is refused without reading it whole

MALFORMED_REPORT_EVERY = 100  # the first, then every 100th: a replay has no clock of its own to pace by
# A line timed this far before the header's start or after it is refused: 1e300 would have the
# playback wait for ever. A clock stepped back a little, or a week-long --record, still plays.
EARLIEST_BEFORE_START_S = 86400.0
LATEST_AFTER_START_S = 366 * 86400.0


class ReplayError(Exception):
    """The file cannot be replayed at all: missing, unreadable, or not a recording."""


class ReplayTransport:
    def __init__(self, path: str | Path, speed: float = 1.0):
        if speed < 0:
            raise ValueError("speed must be 0 (as fast as possible) or positive")
        self.path = Path(path)
        self.speed = speed
        header = _read_header(self.path)
        self.names: list[str] = header["nodes"]
        self.started: float = header["started"]
        self.malformed = 0
        self.finished = asyncio.Event()  # set once every line has been played
        self._now = self.started
        self._playing_since = 0.0  # monotonic time the playback started
        self._due: float | None = None  # the recorded time of the line being waited for

    def clock(self) -> float:
        """The recording's wall time at this point of the playback; frozen once it has all played.

        While a line is delivered it is that line's ``t``; while waiting for the next one it
        runs on at ``speed``, up to that line's ``t``.
        """
        if self._due is None:
            return self._now
        elapsed = (time.monotonic() - self._playing_since) * self.speed
        return min(max(self._now, self.started + elapsed), self._due)

    async def run(self, sink: Sink) -> None:
        self._playing_since = time.monotonic()
        played = 0
        deltas = SampleRebuilder()
        for lineno, line in self._lines():
            if line is None:
                self._malformed(sink, lineno, b"", "the file ends in the middle of a compressed block")
                continue
            try:
                t, call, args = parse_line(line, deltas)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                self._malformed(sink, lineno, line, exc)  # RecursionError: nested thousands deep
                continue
            if not self.started - EARLIEST_BEFORE_START_S <= t <= self.started + LATEST_AFTER_START_S:
                self._malformed(sink, lineno, line, f"time {t:g} is outside the recording's span")
                continue
            await self._wait_until(t)
            self._now = t  # the sink reads the clock during the call: it must say when it was recorded
            getattr(sink, call)(*args)
            played += 1
        note = f", {self.malformed} unreadable" if self.malformed else ""
        for name in self.names:
            sink.on_event(name, NodeEvent(self._now, "replay", f"end of recording ({played} lines{note})"))
        self.finished.set()
        await asyncio.get_running_loop().create_future()  # hold the last state until cancelled

    async def _wait_until(self, t: float) -> None:
        if not self.speed:
            await asyncio.sleep(0)  # let the dashboard draw between lines
            return
        self._due = t
        try:
            await asyncio.sleep(max(0.0, self._playing_since + (t - self.started) / self.speed - time.monotonic()))
        finally:
            self._due = None

    def _lines(self) -> Iterator[tuple[int, bytes | None]]:
        """(line number, line) after the header; ``None`` where a gzip file is cut off."""
        with open_file(self.path) as file:
            file.readline()
            lineno = 1
            try:
                for lineno, line in enumerate(file, start=2):
                    if line.strip():
                        yield lineno, line
            except (EOFError, zlib.error, gzip.BadGzipFile):  # a dashboard killed mid-write
                yield lineno + 1, None

    def _malformed(self, sink: Sink, lineno: int, line: bytes, why: object) -> None:
        self.malformed += 1
        if self.malformed == 1 or self.malformed % MALFORMED_REPORT_EVERY == 0:
            text = line.decode("utf-8", "replace").strip()
            shown = clip(text, 80)
            event = NodeEvent(
                self._now,
                "replay-error",
                f"recording line {lineno} is unreadable ({self.malformed} so far): {shown!r} ({why})",
                severity="warning",
                data={"count": self.malformed, "line": lineno},
            )
            for name in self.names:
                sink.on_event(name, event)


def _read_header(path: Path) -> dict[str, Any]:
    try:
        with open_file(path) as file:
            first = file.readline(_HEADER_MAX_BYTES)
    except FileNotFoundError:
        raise ReplayError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReplayError(f"{path}: is a directory, not a recording") from None
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise ReplayError(f"{path}: not a dltui recording (a broken gzip file)") from None
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or "dltui_recording" not in header:
        raise ReplayError(f"{path}: not a dltui recording (no header line)")
    if header["dltui_recording"] not in READS:
        raise ReplayError(
            f"{path}: recording format {header['dltui_recording']!r}; this dltui reads format"
            f" {' and '.join(map(str, READS))}"
        )
    nodes, started = header.get("nodes"), header.get("started")
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes) or not isinstance(
        started, (int, float)
    ):
        raise ReplayError(f"{path}: not a dltui recording (the header line lacks nodes or start time)")
    if not is_time(started):
        raise ReplayError(f"{path}: the recording's start time {started:g} is not a date")
    header["nodes"] = [clean(n) for n in nodes]
    return header
