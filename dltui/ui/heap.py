"""Keeps Python's cyclic garbage collector off the fleet state and the samples streaming in.

A large fleet holds a million long-lived objects (nodes, alerts, rule memories, the newest
samples). CPython scans all of them in a full collection, which it starts whenever the objects
promoted since the last one exceed a quarter of them: at 2048 nodes that was a pause of
hundreds of milliseconds every second or two, in the middle of a frame.

Samples are the other half. Each one is some hundred tracked objects that replace the node's
previous ones, so the young generation's count (allocations minus deallocations) hardly moves
while it fills with a whole fleet's newest samples; the collection that finally comes (from a
frame's allocations) scans all of them: 35 ms at 512 nodes, in the middle of a frame.

``gc.freeze()`` moves everything into a generation the collector never scans; it costs O(1)
(three list splices). So it runs on every redraw tick and every ``FREEZE_EVERY_SAMPLES``
samples in between, each time after a full collection of what is not frozen yet (only what
is newer than the last freeze: some 10,000 objects at most, under half a millisecond): the
cycles a frame leaves behind (Textual's strips and caches) are freed there and then, and
what is frozen was alive. Objects frozen are still freed by reference counting when dropped
(old samples, closed alerts), and leave the frozen generation then; so in a steady state
its size stays put. A reference cycle that was alive when frozen and dies later (a popped
screen, a dropped connection) is reclaimed only after a thaw: when the heap has doubled
since the last one, everything goes back to the collector for one full collection. That
collection walks the whole fleet (a second at 2048 nodes), so it must be rare: CPython's own
rule, a quarter's growth, was met by a fleet's rule windows filling in its first minutes,
and the frame garbage frozen on every tick made it come back every few minutes. Memory is
bounded to twice what is alive.

The heap's size is the interpreter's count of allocated memory blocks, checked every
``CHECK_EVERY_S`` (sys.getallocatedblocks: a walk over the arenas, under a millisecond). The
frozen generation's own count walks its list of objects: 35 ms for a million allocated in a
row, 100-500 ms for a 2048-node fleet's million scattered ones, in the middle of a frame.
"""

from __future__ import annotations

import gc
import sys
import time

from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.status import Status
from dltui.transport.base import Sink

CHECK_EVERY_S = 30.0
GROWTH_TO_THAW = 2.0  # a full collection of the frozen heap when it doubled
# A small heap (up to some 64 nodes) is thawed once it grew a tenth: the frozen garbage is mostly
# Textual's strips (each caches itself: a cycle), some 1,000 blocks a second whatever the fleet,
# which doubled a 16-node dashboard's size in minutes (72 -> 143 MB in 10); a full collection
# of such a heap is 60-250 ms, at most every CHECK_EVERY_S. A larger one (512 nodes: 1.6M
# blocks) would pause longer than a frame may take, more often: it waits for the doubling.
SMALL_HEAP_BLOCKS = 1_000_000
SMALL_HEAP_GROWTH = 1.1
FREEZE_EVERY_SAMPLES = 64  # some 6 000 objects: a young collection of them is under a millisecond


class HeapFreezer:
    def __init__(self) -> None:
        self._next_check = time.monotonic() + CHECK_EVERY_S
        self._baseline: int | None = None  # allocated blocks after the last thaw (or first check)
        self._samples = 0
        self.thaws = 0

    def tick(self) -> None:
        """On every redraw tick, before drawing: the frame's collections find a small heap."""
        self._samples = 0
        _freeze()
        now = time.monotonic()
        if now < self._next_check or not gc.isenabled():  # paused: at a tick after the pause
            return
        self._next_check = now + CHECK_EVERY_S
        blocks = sys.getallocatedblocks()
        if self._baseline is None:
            self._baseline = blocks
        elif blocks >= self._baseline * (
            SMALL_HEAP_GROWTH if self._baseline <= SMALL_HEAP_BLOCKS else GROWTH_TO_THAW
        ):
            gc.unfreeze()
            gc.collect()
            self.thaws += 1
            gc.freeze()
            self._baseline = sys.getallocatedblocks()

    def sampled(self) -> None:
        self._samples += 1
        if self._samples >= FREEZE_EVERY_SAMPLES:
            self._samples = 0
            _freeze()

    def watching(self, sink: Sink) -> Sink:
        """``sink`` with every sample counted: a fleet's burst of samples is frozen as it comes."""
        return _CountingSink(sink, self)


def _freeze() -> None:
    """Free the dead cycles among the objects not frozen yet, then freeze the rest.

    Not while someone paused the collector (``gc.disable``): an explicit collection ignores
    that pause, and the Prometheus source holds it while it delivers a refresh, whose
    fleet-sized mapping of the answers (a million objects, gone by reference counting
    afterwards) the collection would walk: half a second on a 2,000-node first screen."""
    if gc.isenabled():
        gc.collect()
    gc.freeze()


class _CountingSink:
    """Passes everything on unchanged, in order; counts samples for the freezer."""

    def __init__(self, inner: Sink, heap: HeapFreezer) -> None:
        self.inner = inner
        self.heap = heap

    def on_status(self, name: str, status: Status, reason: str | None = None) -> None:
        self.inner.on_status(name, status, reason)

    def on_hello(self, name: str, facts: NodeFacts, interval_s: float | None = None) -> None:
        self.inner.on_hello(name, facts, interval_s)

    def on_sample(self, name: str, sample: Sample) -> None:
        self.inner.on_sample(name, sample)
        self.heap.sampled()

    def on_event(self, name: str, event: NodeEvent) -> None:
        self.inner.on_event(name, event)
