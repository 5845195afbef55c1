"""A run's samples folded as they arrive into what the verdict, the report and the screen
read, so that a 24 h or 72 h burn-in costs the operator's side the same memory as a 2 h one.

Kept per GPU: the first and last sample (remap flags, ECC presence), counter baselines and
last values (ECC, clock-event time, PCIe replays), over the load the hottest core and HBM,
the lowest margin and the last link state, and exact histograms (one bin per distinct
reading: NVML reports whole MHz and 0.01 W, so the bins are bounded by the sensor, not by
the run's length) of SM clock and power, for the load and for the load after the ramp.
Charts keep a bounded envelope: at most ``MAX_BUCKETS`` time buckets, each with the lowest
and highest value of every charted field, so a one-second spike stays visible.

The raw 1 Hz samples stay on the node (samples.jsonl) and in the local recording.

Which phase a sample belongs to comes from the run's status (the driver's phase spans, as
of the status's own time): a sample newer than the last status waits in a short queue
until a status covers it, so the fold classifies exactly as the verdict on the whole
series would. Pure: no I/O, no Textual.
"""

from __future__ import annotations

import math
import operator
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dltui.core.models import GpuSample, Sample

from .fabric_fold import FabricFold

MAX_BUCKETS = 300  # per chart (two points each, low and high): what a 700-px chart can show
HEAD = 120  # samples searched at each end for a counter's first and last reading
INDEX_HEAD = 5  # the first samples whose GPUs count as the node's GPUs

COUNTERS = (
    "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate",
    "ecc_corrected_volatile",
    "ecc_corrected_aggregate",
    "clock_event_hw_thermal_us",
    "clock_event_sw_thermal_us",
    "clock_event_hw_power_brake_us",
    "pcie_replay_count",
    "xgmi_errors_total",  # AMD's XGMI link errors (RAS), compared over the run like ECC
)
SERIES_FIELDS = (
    "temperature_c",
    "memory_temperature_c",
    "temperature_margin_c",
    "power_w",
    "power_limit_w",
    "sm_clock_mhz",
    "sm_clock_max_mhz",
    "utilization_percent",
)
_COUNTER_ROW = operator.attrgetter(*COUNTERS)
_SERIES_ROW = operator.attrgetter(*SERIES_FIELDS)


def load_span(phases: dict[str, Any] | None) -> tuple[float, float] | None:
    """The load phase's [start, end] (end open while it runs), None before it began."""
    span = (phases or {}).get("load")
    if not span or span[0] is None:
        return None
    return float(span[0]), float(span[1] if span[1] is not None else math.inf)


class Histogram:
    """Exact order statistics of a stream of readings: a count per distinct value."""

    __slots__ = ("counts", "n")

    def __init__(self) -> None:
        self.counts: Counter[float] = Counter()
        self.n = 0

    def add(self, value: float) -> None:
        self.counts[value] += 1
        self.n += 1

    def kth(self, k: int) -> float:
        """The k-th smallest reading (0-based), as ``sorted(readings)[k]``."""
        seen = 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if seen > k:
                return value
        raise IndexError(k)

    def median(self) -> float:
        """As ``statistics.median`` of the readings."""
        if self.n % 2:
            return self.kth(self.n // 2)
        return (self.kth(self.n // 2 - 1) + self.kth(self.n // 2)) / 2


class Envelope:
    """A bounded chart series: per time bucket the first time, and each field's lowest and
    highest value with their times. Buckets double in width when they would exceed
    ``max_buckets``, so the whole run always fits."""

    __slots__ = ("t0", "width", "max_buckets", "buckets")

    def __init__(self, t0: float, width: float = 1.0, max_buckets: int = MAX_BUCKETS):
        self.t0 = t0
        self.width = max(width, 1e-3)
        self.max_buckets = max_buckets
        # bucket number -> [first time, then per field: lo, t_lo, hi, t_hi (None when absent)]
        self.buckets: dict[int, list[Any]] = {}

    def add(self, t: float, values: tuple[float | None, ...]) -> None:
        key = int((t - self.t0) // self.width)
        while key >= self.max_buckets:
            self._coarsen()
            key = int((t - self.t0) // self.width)
        b = self.buckets.get(key)
        if b is None:
            b = self.buckets[key] = [t] + [None] * (4 * len(values))
        for i, v in enumerate(values):
            if v is None:
                continue
            j = 1 + 4 * i
            if b[j] is None or v < b[j]:
                b[j], b[j + 1] = v, t
            if b[j + 2] is None or v > b[j + 2]:
                b[j + 2], b[j + 3] = v, t

    def _coarsen(self) -> None:
        merged: dict[int, list[Any]] = {}
        for key in sorted(self.buckets):
            b = self.buckets[key]
            m = merged.get(key // 2)
            if m is None:
                merged[key // 2] = list(b)
                continue
            for j in range(1, len(b), 4):
                if b[j] is not None and (m[j] is None or b[j] < m[j]):
                    m[j], m[j + 1] = b[j], b[j + 1]
                if b[j + 2] is not None and (m[j + 2] is None or b[j + 2] > m[j + 2]):
                    m[j + 2], m[j + 3] = b[j + 2], b[j + 3]
        self.buckets = merged
        self.width *= 2

    def points(self, name: str) -> list[tuple[float, float]]:
        """(time, value) of one field, oldest first: each bucket's low and high in the order
        they happened (one point when they are the same reading)."""
        j = 1 + 4 * SERIES_FIELDS.index(name)
        out: list[tuple[float, float]] = []
        for key in sorted(self.buckets):
            b = self.buckets[key]
            if b[j] is None:
                continue
            lo, hi = (b[j + 1], b[j]), (b[j + 3], b[j + 2])
            if lo == hi:
                out.append(lo)
            else:
                out += sorted((lo, hi))
        return out

    def __len__(self) -> int:
        return len(self.buckets)


@dataclass
class _Counter:
    """A counter's first reading among a GPU's first ``HEAD`` samples and its last reading
    (with where it was), as the verdict's delta reads them."""

    first: int | None = None
    last: int | None = None
    last_at: int = -1


@dataclass
class _PowerClock:
    """Power (with its limit) and SM clock readings of one part of the load."""

    power: Histogram = field(default_factory=Histogram)
    power_limit: float | None = None  # the last limit seen with a power reading
    clock: Histogram = field(default_factory=Histogram)

    def add(self, g: GpuSample) -> None:
        if g.power_w and g.power_limit_w:
            self.power.add(g.power_w)
            self.power_limit = g.power_limit_w
        if g.sm_clock_mhz:
            self.clock.add(g.sm_clock_mhz)


@dataclass
class GpuFold:
    index: int
    n: int = 0  # samples of this GPU, whole run
    first: GpuSample | None = None
    last: GpuSample | None = None
    counters: list[_Counter] = field(default_factory=lambda: [_Counter() for _ in COUNTERS])
    # over the load phase
    load_n: int = 0
    load_last: GpuSample | None = None
    temperature_max: float | None = None
    margin_min: float | None = None
    hbm_max: float | None = None
    hotspot_max: float | None = None  # junction: AMD's hottest sensor (NVIDIA reports none)
    load: _PowerClock = field(default_factory=_PowerClock)
    late: _PowerClock = field(default_factory=_PowerClock)  # after the ramp
    late_n: int = 0
    # the vendor's own throttle status (AMD) and error records (a GPU/AIP that stopped
    # answering) under load: how many samples said so, the last error's words
    throttled_n: int = 0
    throttle_seen: bool = False
    error_n: int = 0
    last_error: str | None = None

    def add_whole(self, g: GpuSample) -> None:
        if self.first is None:
            self.first = g
        self.last = g
        for c, v in zip(self.counters, _COUNTER_ROW(g), strict=True):
            if v is None:
                continue
            if c.first is None and self.n < HEAD:
                c.first = v
            c.last, c.last_at = v, self.n
        self.n += 1

    def add_load(self, g: GpuSample, late: bool) -> None:
        self.load_n += 1
        self.load_last = g
        t, m, h = g.temperature_c, g.temperature_margin_c, g.memory_temperature_c
        if t is not None and (self.temperature_max is None or t > self.temperature_max):
            self.temperature_max = t
        if m is not None and (self.margin_min is None or m < self.margin_min):
            self.margin_min = m
        if h is not None and (self.hbm_max is None or h > self.hbm_max):
            self.hbm_max = h
        j = g.hotspot_temperature_c
        if j is not None and (self.hotspot_max is None or j > self.hotspot_max):
            self.hotspot_max = j
        self.load.add(g)
        if g.throttled is not None:
            self.throttle_seen = True
            self.throttled_n += bool(g.throttled)
        if g.error:
            self.error_n += 1
            self.last_error = g.error
        if late:
            self.late_n += 1
            self.late.add(g)

    def delta(self, name: str) -> int | None:
        """Last minus first reading of a counter, None when either end has none."""
        c = self.counters[COUNTERS.index(name)]
        if c.first is None or c.last is None or self.n - c.last_at > HEAD:
            return None
        return c.last - c.first

    def after_ramp(self) -> _PowerClock:
        """The load past the ramp, or the whole load when none of it is past the ramp."""
        return self.late if self.late_n else self.load


class RunFold:
    """One node's run, folded. ``add`` every sample in order; ``on_status`` with each run
    status (phases as of its time); ``close`` with the final phases at the end."""

    def __init__(self, ramp_s: float = 60.0, interval_s: float = 1.0,
                 max_buckets: int = MAX_BUCKETS):
        self.ramp_s = ramp_s
        self.interval_s = interval_s
        self.max_buckets = max_buckets
        self.count = 0
        self.first_time: float | None = None
        self.last_time: float | None = None
        self.head_indexes: set[int] = set()
        self.last_indexes: list[int] = []
        self.gpus: dict[int, GpuFold] = {}
        self.envelopes: dict[int, Envelope] = {}
        self.phases: dict[str, Any] | None = None
        self.known_until = -math.inf  # samples up to this time have a known phase
        self.pending: deque[Sample] = deque()
        self.fabric = FabricFold()  # HCA ports and NVLink: first and last readings

    @classmethod
    def of(cls, samples: Iterable[Sample], phases: dict[str, Any] | None,
           ramp_s: float = 60.0) -> RunFold:
        """A finished run's samples, phases known."""
        fold = cls(ramp_s)
        fold.on_phases(phases, math.inf)
        for s in samples:
            fold.add(s)
        return fold

    def add(self, sample: Sample) -> None:
        if self.first_time is None:
            self.first_time = sample.time
        self.last_time = sample.time
        if self.count < INDEX_HEAD:
            self.head_indexes.update(g.index for g in sample.gpus)
        self.count += 1
        self.last_indexes = [g.index for g in sample.gpus]
        self.fabric.add(sample)
        for g in sample.gpus:
            gf = self.gpus.get(g.index)
            if gf is None:
                gf = self.gpus[g.index] = GpuFold(g.index)
                self.envelopes[g.index] = Envelope(sample.time, self.interval_s,
                                                   self.max_buckets)
            gf.add_whole(g)
            self.envelopes[g.index].add(sample.time, _SERIES_ROW(g))
        if sample.time <= self.known_until:
            self._classify(sample)
        else:
            self.pending.append(sample)

    def on_status(self, status: dict[str, Any]) -> None:
        """A run status: its phase spans hold for every sample up to its time."""
        if status.get("phases") is not None and status.get("time") is not None:
            self.on_phases(status["phases"], float(status["time"]))

    def on_phases(self, phases: dict[str, Any] | None, until: float) -> None:
        self.phases = phases
        self.known_until = max(self.known_until, until)
        while self.pending and self.pending[0].time <= self.known_until:
            self._classify(self.pending.popleft())

    def close(self, phases: dict[str, Any] | None = None) -> None:
        """The run ended: every sample still waiting is classified by the final phases."""
        self.on_phases(phases if phases is not None else self.phases, math.inf)

    @property
    def load(self) -> tuple[float, float] | None:
        return load_span(self.phases)

    def _classify(self, sample: Sample) -> None:
        span = self.load
        if span is None or not span[0] <= sample.time <= span[1]:
            return
        late = sample.time >= span[0] + self.ramp_s
        for g in sample.gpus:
            self.gpus[g.index].add_load(g, late)

    def kept_points(self) -> int:
        """Everything this fold holds that grows with data (a bound, for tests and bench)."""
        buckets = sum(len(e) for e in self.envelopes.values())
        bins = sum(
            len(h.counts)
            for gf in self.gpus.values()
            for h in (gf.load.power, gf.load.clock, gf.late.power, gf.late.clock)
        )
        return buckets + bins + len(self.pending)
