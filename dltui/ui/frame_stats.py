"""Frame timings for the UI benchmark: set ``DLTUI_FRAME_STATS=path`` and the app writes a
small JSON summary there when it exits (ticks, mean, p50, p95 and max milliseconds), and each
frame as [wall-clock end, milliseconds, CPU milliseconds] so a benchmark can keep only its own
window. The CPU figure is the UI thread's own time over the frame (``time.thread_time``): on a
machine shared with other load the wall clock also counts the time spent waiting for a core.
Key presses likewise: from the key event's creation (its arrival from the terminal) until the
screen under it has been repainted, in ``keys`` and ``each_key``.

``HookedApp`` holds every override of a private Textual method that dltui makes: the paint
that ends a key's latency, and the unhandled error that ends the app. Textual 8.2.8 has no
public hook for either (tests/ui/test_private_hooks.py says what was looked at, and fails when
an upgrade changes what is overridden)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rich.console import RenderableType
from textual import events
from textual.app import App
from textual.screen import Screen

ENV = "DLTUI_FRAME_STATS"


class HookedApp(App[int]):
    """Textual's app with two public-named hooks in place of its private methods; the
    dashboard overrides the hooks, never the private methods."""

    def get_driver_class(self):
        """Textual's driver, but on Linux one whose input thread sleeps while no key comes
        (quiet_input.py): ten wakeups a second less on an idle dashboard."""
        from textual.drivers.linux_driver import LinuxDriver

        from .quiet_input import QuietLinuxDriver

        driver = super().get_driver_class()
        return QuietLinuxDriver if driver is LinuxDriver else driver

    def frame_painted(self) -> None:
        """A screen update has just been written to the terminal (made, when headless)."""

    def stopped_on_error(self, error: Exception) -> None:
        """An unhandled error is about to end the app (Textual then exits with code 1)."""

    def _display(self, screen: Screen, renderable: RenderableType | None) -> None:
        # The compositor hands each update of the screen on top here, once, and Textual writes
        # it to the driver in this call: the end of a frame.
        super()._display(screen, renderable)
        if renderable is not None:
            self.frame_painted()

    def _handle_exception(self, error: Exception) -> None:
        self.stopped_on_error(error)
        super()._handle_exception(error)
        # Textual queued a traceback with its locals (node data among them) to print at exit:
        # the hook has logged it, the terminal gets one line from the command
        self._exit_renderables.clear()


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


class TimedApp(HookedApp):
    """The app that keeps frame and key timings when DLTUI_FRAME_STATS asks for them: a key's
    latency runs from its arrival until the screen painted after its binding's action."""

    def __init__(self) -> None:
        super().__init__()
        self.frame_stats = FrameStats.from_env()
        self._keys_arrived: list[float] = []
        self._keys_acted: list[float] = []

    async def on_event(self, event: events.Event) -> None:
        # A key arrives here first (and bubbles back up, forwarded, if nothing takes it).
        if self.frame_stats is not None and isinstance(event, events.Key) and not event.is_forwarded:
            self._keys_arrived.append(event.time)
        await super().on_event(event)

    async def run_action(self, action, default_namespace=None, namespaces=None) -> bool:
        done = await super().run_action(action, default_namespace, namespaces)
        if self._keys_arrived:  # a binding's action has run: its answer is in the next paint
            self._keys_acted += self._keys_arrived
            self._keys_arrived.clear()
        return done

    def frame_painted(self) -> None:
        if self._keys_acted and self.frame_stats is not None:
            for pressed in self._keys_acted:
                self.frame_stats.key_done(pressed)
            self._keys_acted.clear()
