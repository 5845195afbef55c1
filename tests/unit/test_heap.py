"""The UI's garbage-collector policy: freeze the heap on every tick and every few samples,
pass every sink call on unchanged and in order, free the dead cycles before freezing, thaw and
collect once the frozen heap doubled (a small heap: once it grew a tenth)."""

import gc
import weakref

from dltui.core.models import Sample
from dltui.transport.prometheus.client import gc_paused
from dltui.ui import heap
from dltui.ui.heap import FREEZE_EVERY_SAMPLES, HeapFreezer


class Calls:
    def __init__(self):
        self.seen = []

    def on_status(self, name, status, reason=None):
        self.seen.append(("status", name, status, reason))

    def on_hello(self, name, facts, interval_s=None):
        self.seen.append(("hello", name, facts, interval_s))

    def on_sample(self, name, sample):
        self.seen.append(("sample", name, sample))

    def on_event(self, name, event):
        self.seen.append(("event", name, event))


def test_a_tick_freezes_what_is_alive():
    gc.unfreeze()
    try:
        kept = [[] for _ in range(100)]  # tracked objects, alive
        HeapFreezer().tick()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


def test_samples_pass_through_in_order_and_freeze_every_so_many():
    gc.unfreeze()
    inner = Calls()
    sink = HeapFreezer().watching(inner)
    try:
        sink.on_status("n", "ok")
        sink.on_hello("n", None, 2.0)
        for t in range(FREEZE_EVERY_SAMPLES - 1):
            sink.on_sample("n", Sample(time=float(t)))
        assert gc.get_freeze_count() == 0
        sink.on_sample("n", Sample(time=99.0))
        assert gc.get_freeze_count() > 0
        sink.on_event("n", "e")
    finally:
        gc.unfreeze()
    kinds = [c[0] for c in inner.seen]
    assert kinds == ["status", "hello"] + ["sample"] * FREEZE_EVERY_SAMPLES + ["event"]
    assert [c[2].time for c in inner.seen if c[0] == "sample"][-1] == 99.0


class Knot:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self):
        self.me = self


def _checked(freezer):
    """A tick that runs the periodic check (the others, as in life, only freeze)."""
    freezer._next_check = 0.0
    freezer.tick()


def test_a_cycle_that_dies_after_it_was_frozen_is_freed_once_the_frozen_heap_doubled(monkeypatch):
    monkeypatch.setattr(heap, "SMALL_HEAP_BLOCKS", 0)  # a large fleet's heap: thawed when doubled
    gc.unfreeze()
    freezer = HeapFreezer()
    try:
        kept = [[] for _ in range(1000)]
        _checked(freezer)  # the first check sets the baseline
        base = freezer._baseline
        knot = Knot()
        alive = weakref.ref(knot)
        freezer.tick()  # alive: frozen
        del knot
        gc.collect()
        assert alive() is not None  # frozen: the collector does not look at it
        _checked(freezer)
        assert alive() is not None and freezer.thaws == 0  # the heap has not grown: no thaw
        knots = [Knot() for _ in range(base // 8)]  # a quarter or so more (two or three blocks
        freezer.tick()  # a knot), as a fleet's rule windows filling: no thaw
        _checked(freezer)
        assert alive() is not None and freezer.thaws == 0
        knots += [Knot() for _ in range(base)]  # the frozen heap more than doubled...
        last = weakref.ref(knots[-1])
        freezer.tick()
        del knots  # ...that die as cycles: only a thaw can free them
        _checked(freezer)
        assert alive() is None and last() is None and freezer.thaws == 1
        assert kept
    finally:
        gc.unfreeze()


def test_a_small_heap_is_thawed_once_it_grew_a_tenth(monkeypatch):
    """A few dozen nodes: the frozen garbage (Textual's self-caching strips) would double the
    dashboard's size in minutes; a thaw of such a heap is short, so it comes at a tenth. (The
    small-heap rule forced: this test process's heap is as large as the suite made it.)"""
    monkeypatch.setattr(heap, "SMALL_HEAP_BLOCKS", 10**12)
    gc.unfreeze()
    freezer = HeapFreezer()
    try:
        _checked(freezer)  # the first check sets the baseline
        base = freezer._baseline
        knots = [Knot() for _ in range(base // 5)]  # some 40 % more blocks (two or three a knot)
        last = weakref.ref(knots[-1])
        freezer.tick()
        del knots  # cycles, frozen while alive: only a thaw frees them
        _checked(freezer)
        assert last() is None and freezer.thaws == 1
    finally:
        gc.unfreeze()


def test_a_cycle_already_dead_is_freed_before_the_freeze():
    """A frame's garbage (cycles no one holds) is freed by the next freeze, not frozen."""
    gc.unfreeze()
    try:
        knot = Knot()
        dead = weakref.ref(knot)
        del knot
        HeapFreezer().tick()
        assert dead() is None
        sink = HeapFreezer().watching(Calls())
        knot = Knot()
        dead = weakref.ref(knot)
        del knot
        for t in range(FREEZE_EVERY_SAMPLES):
            sink.on_sample("n", Sample(time=float(t)))
        assert dead() is None
    finally:
        gc.unfreeze()


def test_a_collector_paused_by_a_source_is_not_overridden_the_tick_only_freezes():
    """The Prometheus source pauses the collector while it delivers a refresh: a tick or a
    sample count then freezes (O(1)) and runs no collection over the refresh's transient
    mapping; nor does a due check thaw the heap then."""
    gc.unfreeze()
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    freezer = HeapFreezer()
    sink = freezer.watching(Calls())
    try:
        _checked(freezer)  # the baseline
        gc.callbacks.append(count)
        with gc_paused():
            knot = Knot()
            dead = weakref.ref(knot)
            del knot
            freezer._baseline = 1  # a check due now would thaw and collect everything
            _checked(freezer)
            for t in range(FREEZE_EVERY_SAMPLES):
                sink.on_sample("n", Sample(time=float(t)))
            assert collections == [] and freezer.thaws == 0
            assert dead() is not None and gc.get_freeze_count() > 0  # frozen, not walked
        freezer.tick()  # the pause is over: the check that was due runs now
        assert freezer.thaws == 1 and dead() is None
    finally:
        if count in gc.callbacks:
            gc.callbacks.remove(count)
        gc.unfreeze()


def test_a_steady_heap_is_never_thawed():
    """Samples replace samples: what dies is freed by reference counting, frozen or not."""
    gc.unfreeze()
    freezer = HeapFreezer()
    try:
        latest = [Sample(time=0.0)]
        for t in range(200):
            latest[0] = Sample(time=float(t))  # the previous one goes by its reference count
            freezer.tick()
            if t % 20 == 0:
                _checked(freezer)
        assert freezer.thaws == 0
    finally:
        gc.unfreeze()
