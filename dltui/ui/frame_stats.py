"""Frame timings for the UI benchmark: set ``DLTUI_FRAME_STATS=path`` and the app writes a
small JSON summary there when it exits (ticks, mean, p50, p95 and max milliseconds)."""

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

    @classmethod
    def from_env(cls) -> FrameStats | None:
        path = os.environ.get(ENV)
        return cls(Path(path)) if path else None

    def frame_done(self, started: float) -> None:
        self.frames_ms.append((time.perf_counter() - started) * 1000.0)

    def write(self) -> None:
        frames = sorted(self.frames_ms)
        summary: dict[str, float] = {"frames": len(frames)}
        if frames:
            summary.update(
                mean_ms=round(sum(frames) / len(frames), 3),
                p50_ms=round(frames[len(frames) // 2], 3),
                p95_ms=round(frames[min(len(frames) - 1, int(len(frames) * 0.95))], 3),
                max_ms=round(frames[-1], 3),
            )
        self.path.write_text(json.dumps(summary) + "\n", encoding="utf-8")
