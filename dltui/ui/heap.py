"""Keeps Python's cyclic garbage collector off the fleet state.

A large fleet holds a million long-lived objects (nodes, alerts, rule memories, the newest
samples). CPython scans all of them in a full collection, which it starts whenever the objects
promoted since the last one exceed a quarter of them: at 2048 nodes that was a pause of
hundreds of milliseconds every second or two, in the middle of a frame. ``gc.freeze()`` moves
everything alive into a generation the collector never scans; it costs O(1). Objects frozen
are still freed by reference counting when dropped (old samples, closed alerts); a reference
cycle that was alive when frozen and dies later (a popped screen, a dropped connection) is
reclaimed only after a thaw, so every THAW_EVERY_S the frozen objects go back to the collector
for one full collection: one pause every few minutes instead of every second or two.
"""

from __future__ import annotations

import gc
import time

FREEZE_EVERY_S = 10.0
THAW_EVERY_S = 300.0


class HeapFreezer:
    def __init__(self) -> None:
        self._next = 0.0
        self._next_thaw = time.monotonic() + THAW_EVERY_S

    def tick(self) -> None:
        now = time.monotonic()
        if now >= self._next_thaw:
            self._next_thaw = now + THAW_EVERY_S
            gc.unfreeze()
            gc.collect()
        if now >= self._next:
            self._next = now + FREEZE_EVERY_S
            gc.freeze()
