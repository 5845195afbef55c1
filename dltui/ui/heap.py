"""Keeps Python's cyclic garbage collector off the fleet state.

A large fleet holds a million long-lived objects (nodes, alerts, rule memories, the newest
samples). CPython scans all of them in a full collection, which it starts whenever the objects
promoted since the last one exceed a quarter of them: at 2048 nodes that was a pause of
hundreds of milliseconds every second or two, in the middle of a frame. ``gc.freeze()`` moves
everything alive into a generation the collector never scans; it costs O(1). Objects frozen
are still freed by reference counting when dropped (old samples, closed alerts); only a
reference cycle that was alive when frozen and dies later is never reclaimed, which the
dashboard's state does not make.
"""

from __future__ import annotations

import gc
import time

FREEZE_EVERY_S = 10.0


class HeapFreezer:
    def __init__(self) -> None:
        self._next = 0.0

    def tick(self) -> None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + FREEZE_EVERY_S
            gc.freeze()
