"""Frame timings for the UI benchmark: set ``DLTUI_FRAME_STATS=path`` and the app writes a
small JSON summary there when it exits (ticks, mean, p50, p95 and max milliseconds), and each
frame as [wall-clock end, milliseconds, CPU milliseconds] so a benchmark can keep only its own
window. The CPU figure is the UI thread's own time over the frame (``time.thread_time``): on a
machine shared with other load the wall clock also counts the time spent waiting for a core.
Key presses likewise: from the key event's creation (its arrival from the terminal) until the
screen under it has been repainted, in ``keys`` and ``each_key``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

ENV = "DLTUI_FRAME_STATS"


class FrameStats:
    """A frame: from the start of a redraw tick until the screen has been painted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.frames_ms: list[float] = []
        self.frames_cpu_ms: list[float] = []
        self.ended: list[float] = []
        self.keys_ms: list[float] = []
        self.keys_ended: list[float] = []

    @classmethod
    def from_env(cls) -> FrameStats | None:
        path = os.environ.get(ENV)
        return cls(Path(path)) if path else None

    def frame_done(self, started: float, cpu_started: float) -> None:
        """``started``: ``time.perf_counter()`` at the tick; ``cpu_started``: ``time.thread_time()``."""
        self.frames_ms.append((time.perf_counter() - started) * 1000.0)
        self.frames_cpu_ms.append((time.thread_time() - cpu_started) * 1000.0)
        self.ended.append(time.time())

    def key_done(self, pressed: float) -> None:
        """``pressed``: the key event's ``time`` (``time.monotonic``, as Textual stamps it)."""
        self.keys_ms.append((time.monotonic() - pressed) * 1000.0)
        self.keys_ended.append(time.time())

    def write(self) -> None:
        summary: dict = {**summarise(self.frames_ms)}
        summary["cpu"] = summarise(self.frames_cpu_ms)
        frames = zip(self.ended, self.frames_ms, self.frames_cpu_ms, strict=True)
        summary["each"] = [[round(t, 3), round(ms, 3), round(cpu, 3)] for t, ms, cpu in frames]
        summary["keys"] = summarise(self.keys_ms)
        keys = zip(self.keys_ended, self.keys_ms, strict=True)
        summary["each_key"] = [[round(t, 3), round(ms, 3)] for t, ms in keys]
        self.path.write_text(json.dumps(summary) + "\n", encoding="utf-8")


def summarise(frames_ms: list[float]) -> dict[str, float]:
    """Count, mean, p50, p95 and max of frame times in milliseconds."""
    frames = sorted(frames_ms)
    summary: dict[str, float] = {"frames": len(frames)}
    if frames:
        summary.update(
            mean_ms=round(sum(frames) / len(frames), 3),
            p50_ms=round(frames[len(frames) // 2], 3),
            p95_ms=round(frames[min(len(frames) - 1, int(len(frames) * 0.95))], 3),
            max_ms=round(frames[-1], 3),
        )
    return summary
