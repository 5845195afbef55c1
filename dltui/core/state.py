"""Fleet state: per node its facts, status, newest sample, bounded history, alerts and timeline.

Transports write into it (it is their ``Sink``); the UI and ``snapshot`` read it. Pure Python,
no Textual, no I/O. Every change bumps ``NodeState.version`` so a screen can redraw only the
nodes that changed since its last frame.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from dltui.node.schema import MAX_INTERVAL_S, MIN_INTERVAL_S

from . import format as fmt
from . import status as st
from .attribution import ContainerInfo, JobInfo
from .gpu_fields import HISTORY as _GPU_HISTORY
from .gpu_fields import HISTORY_ROW as _GPU_ROW
from .models import NodeEvent, NodeFacts, Sample
from .scheduler import SchedulerView
from .series import DISK_METRICS, HOTTEST_GPU_C, NETWORK_METRICS, Metric, SeriesKey
from .status import Status
from .timeline import CRITICAL, INFO, WARNING, Alert, Severity, TimelineEntry, severity_rank

if TYPE_CHECKING:
    from .rules.settings import RuleSettings

HISTORY_POINTS = 7200  # 2 hours at 1 Hz: a whole quick burn-in
PRUNE_EVERY = 600  # samples between looks for series whose device is gone
TIMELINE_ENTRIES = 2000
EVENT_IDS_REMEMBERED = 10000
_NAN = float("nan")
_GAP = -32768  # an int16 ring's gap: the one int16 its scaled readings never take
# A fleet's history rings are allocated whole when created, up to this many bytes in all: the
# memory a watched fleet holds is then the same at minute 2 as at hour 2, and no regrowth copies
# arrays (and steps the process's size) as the window fills. Beyond it (a fleet of hundreds of
# 8-GPU nodes), rings grow by doubling: a short session never holds gigabytes of empty slots.
HISTORY_RESERVE_BYTES = 128 * 2**20

# Series kept as int16 (2 bytes a point instead of float32's 4), by the unit their name ends
# with, and the scale that sets the resolution they keep. Other units (bytes, counts) stay float32.
STORAGE_SCALES = (
    ("_percent", 100),  # 0.01 %, up to 327.67 %
    ("_c", 100),  # 0.01 °C, -327.67 to 327.67 °C
    ("_mhz", 1),  # 1 MHz, up to 32,767 MHz
    ("_w", 10),  # 0.1 W, up to 3,276.7 W
)


def storage_scale(name: str) -> int:
    """The int16 scale of the series or metric named ``name`` (see ``STORAGE_SCALES``), or 0
    for float32."""
    for suffix, scale in STORAGE_SCALES:
        if name.endswith(suffix):
            return scale
    return 0


class Ring:
    """Fixed-capacity history of floats, oldest first; ``None`` in, ``None`` out for gaps.

    Stored in an ``array`` because 64 nodes x 8 GPUs x several metrics x 7200 points as Python
    floats would take gigabytes: float32 (NaN the gap), or, given a ``scale``, int16 holding
    ``round(value * scale)`` (``_GAP`` the gap) in half the bytes, read back as ``stored / scale``.
    A value an int16 ring cannot hold (out of range once scaled, an infinity) turns that ring
    into float32 for good, so nothing is lost. The array grows by doubling up to the capacity:
    a fleet's first sample creates thousands of series at once, and a short session never holds
    two hours of empty slots.
    """

    __slots__ = ("_data", "_capacity", "_next", "_size", "_scale", "_gap")

    FIRST_ALLOCATION = 64

    def __init__(
        self, capacity: int, typecode: str = "f", size: int = 0, scale: int = 0, whole: bool = False
    ):
        """``whole``: allocate the capacity now (see ``HISTORY_RESERVE_BYTES``)."""
        self._capacity = capacity
        self._size = min(size, capacity)  # a series born late starts with gaps, aligned in time
        self._scale = float(scale)
        self._gap: float = _GAP if scale else _NAN
        allocated = capacity if whole else min(capacity, max(self.FIRST_ALLOCATION, 2 * self._size))
        self._data = array("h" if scale else typecode, [self._gap]) * allocated
        self._next = self._size % capacity

    def __len__(self) -> int:
        return self._size

    def append(self, value: float | None) -> None:
        Ring.append_row((self,), (value,))

    @staticmethod
    def append_row(rings: Sequence[Ring], values: Iterable[float | None]) -> None:
        """``append`` one value to each of ``rings``, in one loop instead of a call per ring: a
        sample appends to some hundred rings, and the calls were a third of a node's cost."""
        gap16, round_float = _GAP, float.__round__  # called unbound: half round()'s cost
        for ring, value in zip(rings, values, strict=True):
            data, at, capacity, scale = ring._data, ring._next, ring._capacity, ring._scale
            if at == len(data) and at < capacity:  # full but not yet at capacity
                data.extend(array(data.typecode, [ring._gap]) * min(at, capacity - at))
            if value is None:
                data[at] = ring._gap
            elif scale:  # a float scale: the product is a float even for an int value
                try:
                    stored = round_float(value * scale)  # ValueError: NaN; OverflowError: infinity
                    if stored == gap16:
                        raise OverflowError("the gap's own int16")
                    data[at] = stored  # OverflowError past int16
                except ValueError:  # NaN: a gap, as in float32
                    data[at] = gap16
                except OverflowError:
                    ring._to_float32()
                    ring._data[at] = value
            else:
                data[at] = value  # NaN stays NaN: the float32 gap
            at += 1
            ring._next = 0 if at == capacity else at
            if ring._size < capacity:
                ring._size += 1

    def _to_float32(self) -> None:
        """An int16 ring given a value it cannot hold: float32 from now on, same values."""
        scale, gap, nan = self._scale, self._gap, _NAN
        self._data = array("f", [nan if v == gap else v / scale for v in self._data])
        self._scale, self._gap = 0.0, nan

    def _raw(self, n: int) -> array:
        """The newest ``n`` stored points (``n`` at most the size), oldest first."""
        start = (self._next - n) % self._capacity
        if start + n <= self._capacity:
            return self._data[start : start + n]
        return self._data[start:] + self._data[: (start + n) % self._capacity]

    def _floats(self, raw: Iterable[float]) -> list[float | None]:
        if self._scale:
            scale, gap = self._scale, self._gap
            return [None if v == gap else v / scale for v in raw]
        return [None if v != v else v for v in raw]  # NaN is the gap; v != v is its cheapest test

    def values(self, n: int | None = None) -> list[float | None]:
        """The newest ``n`` values (all when None), oldest first."""
        return self._floats(self._raw(self._size if n is None else min(n, self._size)))

    def squeezed(self, n: int, per: int, pick: Callable[[Sequence[float]], float]) -> list[float | None]:
        """``spark.downsample(self.values(n), per, pick)`` from the stored points in one pass:
        groups of ``per`` values, newest group last, each reduced by ``pick`` over its values
        (a group of gaps only is a gap). A 2-hour chart reads 7200 points a series this way."""
        raw = self._raw(min(n, self._size))
        if per <= 1:
            return self._floats(raw)
        scale, ends = self._scale, range(len(raw), 0, -per)
        if scale and pick in _MONOTONIC:  # max and min commute with scaling: reduce the ints
            groups: list[Sequence[float]] = [raw[max(0, end - per) : end] for end in ends]
            if _GAP in raw:
                groups = [[v for v in group if v != _GAP] for group in groups]
            out = [pick(group) / scale if group else None for group in groups]
        else:
            points = array("d", [_NAN if v == _GAP else v / scale for v in raw]) if scale else raw
            groups = [points[max(0, end - per) : end] for end in ends]
            total = sum(points)
            if total != total:  # a gap (NaN) somewhere: groups of the values alone
                groups = [[v for v in group if v == v] for group in groups]
            out = [pick(group) if group else None for group in groups]
        out.reverse()
        return out

    def last(self) -> float | None:
        if not self._size:
            return None
        return self._floats((self._data[(self._next - 1) % self._capacity],))[0]


_MONOTONIC = (max, min)  # reducers that commute with scaling: pick(stored) / scale exactly


def sample_metrics(sample: Sample) -> Iterator[tuple[SeriesKey, float | None]]:
    """The series kept as history, each with its key."""
    return zip(_keys_of(_shape_of(sample)), _values_of(sample), strict=True)


_CPU = (Metric.CPU_TOTAL_PERCENT, Metric.CPU_IOWAIT_PERCENT)
_MEMORY = (Metric.MEMORY_USED_PERCENT, Metric.MEMORY_SWAP_USED_BYTES)
_PRESSURE = (
    Metric.PRESSURE_CPU_SOME_AVG10_PERCENT,
    Metric.PRESSURE_IO_SOME_AVG10_PERCENT,
    Metric.PRESSURE_IO_FULL_AVG10_PERCENT,
    Metric.PRESSURE_MEMORY_SOME_AVG10_PERCENT,
)
# after utilisation (and its sub-second minimum): the field table's history rows, whose values
# ``_GPU_ROW`` reads in the same order
_GPU_SERIES = tuple(f.history for f in _GPU_HISTORY if f.history is not None)
_KEYS: dict[tuple, tuple[SeriesKey, ...]] = {}  # a sample's shape -> its series' keys, in order


def _shape_of(sample: Sample) -> tuple:
    """What decides which series a sample has (not their values): samples of one node almost
    always share it, so the series' keys are built once, not some hundred keys a sample."""
    gpus = sample.gpus
    return (
        sample.cpu is not None,
        sample.memory is not None,
        sample.pressure is not None,
        sample.tasks is not None,
        tuple([d.name for d in sample.disks]),
        tuple([n.name for n in sample.networks]),
        any(g.temperature_c is not None for g in gpus),
        tuple([(g.index, bool(g.utilization_samples_percent)) for g in gpus]),
    )


def _keys_of(shape: tuple) -> tuple[SeriesKey, ...]:
    keys = _KEYS.get(shape)
    if keys is not None:
        return keys
    cpu, memory, pressure, tasks, disks, networks, hottest, gpus = shape
    out: list[SeriesKey] = []
    if cpu:
        out += [SeriesKey(m) for m in _CPU]
    if memory:
        out += [SeriesKey(m) for m in _MEMORY]
    if pressure:
        out += [SeriesKey(m) for m in _PRESSURE]
    if tasks:
        out.append(SeriesKey(Metric.TASKS_D_STATE_PROCESSES))
    for d in disks:
        out += [SeriesKey(m, d) for m in DISK_METRICS]
    for n in networks:
        out += [SeriesKey(m, n) for m in NETWORK_METRICS]
    if hottest:  # one series a node for the fleet's trends and chart, whatever its GPU count
        out.append(HOTTEST_GPU_C)
    for index, subs in gpus:
        out.append(SeriesKey(Metric.GPU_UTILIZATION_PERCENT, index))
        if subs:  # the lowest sub-second reading: a data loader's stalls, which the mean hides
            out.append(SeriesKey(Metric.GPU_UTILIZATION_MIN_PERCENT, index))
        out += [SeriesKey(m, index) for m in _GPU_SERIES]
    if len(_KEYS) > 1024:  # bounded: shapes are few unless devices come and go all day
        _KEYS.clear()
    keys = _KEYS[shape] = tuple(out)
    return keys


def _values_of(sample: Sample) -> list[float | None]:
    """The values of ``_keys_of(_shape_of(sample))``, in the same order."""
    out: list[float | None] = []
    cpu, mem = sample.cpu, sample.memory
    if cpu is not None:
        out += (cpu.total_percent, cpu.iowait_percent)
    if mem is not None:
        used = None
        if mem.used_bytes is not None and mem.total_bytes:
            used = 100.0 * mem.used_bytes / mem.total_bytes
        out += (used, mem.swap_used_bytes)
    pr = sample.pressure
    if pr is not None:
        out += (
            pr.cpu_some_avg10_percent,
            pr.io_some_avg10_percent,
            pr.io_full_avg10_percent,
            pr.memory_some_avg10_percent,
        )
    if sample.tasks is not None:
        out.append(sample.tasks.d_state_processes)
    for d in sample.disks:
        out += (d.read_bytes_per_s, d.write_bytes_per_s, d.busy_percent)
    for n in sample.networks:
        out += (n.rx_bytes_per_s, n.tx_bytes_per_s)
    temps = [g.temperature_c for g in sample.gpus if g.temperature_c is not None]
    if temps:
        out.append(max(temps))
    for g in sample.gpus:
        out.append(g.utilization_percent)
        subs = g.utilization_samples_percent
        if subs:
            out.append(min(subs))
        out += _GPU_ROW(g)
    return out


class RingBudget:
    """The bytes a fleet's history rings may still take by being allocated whole."""

    def __init__(self, left: int = HISTORY_RESERVE_BYTES) -> None:
        self.left = left

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


class NodeHistory:
    """Time-aligned series for one node: every series gets one point per sample."""

    def __init__(self, capacity: int = HISTORY_POINTS, budget: RingBudget | None = None):
        self.capacity = capacity
        self.budget = budget or RingBudget(0)
        self.time = Ring(capacity, "d", whole=self.budget.take(8 * capacity))
        self.series: dict[SeriesKey, Ring] = {}
        self.samples = 0
        # series -> the sample count when it last appeared; for the series of the shape bound
        # now, the count when that shape was bound (they appear in every sample since)
        self.last_seen: dict[SeriesKey, int] = {}
        self._shape: tuple | None = None
        self._keys: tuple[SeriesKey, ...] = ()
        self._rings: list[Ring] = []  # the series of ``_keys``, in their order
        self._absent: list[Ring] = []  # every other series: a gap this sample
        self._dedupe = False  # the bound shape names a series twice (two devices of one name)

    def record(self, sample: Sample) -> None:
        self.time.append(sample.time)
        self.samples += 1
        shape = _shape_of(sample)
        if shape != self._shape:
            self._bind(shape)
        values = _values_of(sample)
        if self._dedupe:  # as a dict of the pairs would: the last value of a name wins
            named = dict(zip(_keys_of(shape), values, strict=True))
            values = [named[k] for k in self._keys]
        Ring.append_row(self._rings, values)
        Ring.append_row(self._absent, [None] * len(self._absent))
        if self.samples % PRUNE_EVERY == 0:
            self._prune()

    def _bind(self, shape: tuple) -> None:
        """A sample of a new shape (a device came or went): which series it feeds."""
        last_seen = self.last_seen
        for key in self._keys:  # seen in every sample up to the previous one
            last_seen[key] = self.samples - 1
        keys = _keys_of(shape)
        self._dedupe = len(set(keys)) != len(keys)
        if self._dedupe:
            keys = tuple(dict.fromkeys(keys))
        for key in keys:
            last_seen[key] = self.samples
            if key not in self.series:  # new in this sample: gaps before it, aligned in time
                scale = storage_scale(key.metric.value)
                whole = self.budget.take((2 if scale else 4) * self.capacity)  # not given back
                self.series[key] = Ring(self.capacity, size=len(self.time) - 1, scale=scale, whole=whole)
        wanted = set(keys)
        self._shape, self._keys = shape, keys
        self._rings = [self.series[k] for k in keys]
        self._absent = [ring for k, ring in self.series.items() if k not in wanted]

    def _prune(self) -> None:
        """Forget series whose device has been gone for the whole history (a removed disk, a
        container's interface): they hold nothing but gaps, and cost memory and time."""
        bound = set(self._keys)
        gone = [k for k in self.series if k not in bound and self.samples - self.last_seen[k] >= self.capacity]
        for key in gone:
            del self.series[key], self.last_seen[key]
        if gone:
            self._absent = [ring for k, ring in self.series.items() if k not in bound]

    def ring(self, key: SeriesKey) -> Ring | None:
        """The ring of the series ``key``, or None while this node has none (no such device,
        or not reported yet). A key no series can have is a ``KeyError``, never None."""
        if not isinstance(key, SeriesKey) or not key.valid():
            raise KeyError(key)
        return self.series.get(key)

    def get(self, key: SeriesKey, n: int | None = None) -> list[float | None]:
        """The newest ``n`` values of the series ``key`` (all when None), oldest first; ``[]``
        while this node has no such series (see ``ring``)."""
        ring = self.ring(key)
        return ring.values(n) if ring is not None else []


@dataclass
class NodeState:
    name: str
    status: Status = st.CONNECTING
    reason: str | None = None
    status_since: float | None = None  # when the status word last changed (operator's clock)
    facts: NodeFacts | None = None
    sample: Sample | None = None
    received_at: float | None = None  # operator's clock: node clocks may be skewed
    interval_s: float = 1.0
    history: NodeHistory = field(default_factory=NodeHistory)
    alerts: dict[tuple[str, int | None], Alert] = field(default_factory=dict)
    timeline: deque[TimelineEntry] = field(default_factory=lambda: deque(maxlen=TIMELINE_ENTRIES))
    malformed_lines: int = 0
    event_ids: dict[str, None] = field(default_factory=dict)  # insertion-ordered set, bounded
    # Per GPU, the rules that cannot judge it because it does not report their signals (no
    # HBM sensor, no T.Limit margin, no ECC): shown as "n/a", never taken for "fine".
    rules_na: dict[int | None, set[str]] = field(default_factory=dict)
    # What the GPU processes' Slurm jobs and containers are (transport/attribution.py fills them,
    # about once a minute each): by job id and by container id.
    jobs: dict[int, JobInfo] = field(default_factory=dict)
    containers: dict[str, ContainerInfo] = field(default_factory=dict)
    # The scheduler's view of the node (Slurm state and reason, Kubernetes' Ready and cordon),
    # read every 30 s by transport/scheduler.py; None until read, or where none is configured.
    scheduler: SchedulerView | None = None
    version: int = 0

    def age(self, now: float) -> float | None:
        """Seconds since the newest sample arrived, or None before the first."""
        return None if self.received_at is None else max(0.0, now - self.received_at)

    def worst_severity(self) -> str | None:
        if not self.alerts:
            return None
        return max((a.severity for a in self.alerts.values()), key=severity_rank)

    def add(self, entry: TimelineEntry) -> None:
        self.timeline.append(entry)
        self.version += 1


class Engine(Protocol):
    """What the anomaly engine offers the state and the UI (see ``rules``)."""

    settings: RuleSettings

    def observe_sample(self, node: NodeState, sample: Sample, now: float) -> None: ...
    def observe_event(self, node: NodeState, event: NodeEvent, now: float) -> None: ...
    def tick_steps(self, fleet: FleetState, now: float) -> Iterator[None]: ...
    def acknowledgeable(self) -> tuple[str, ...]: ...
    def acknowledge(self, node: NodeState, rule_id: str, gpu: int | None, now: float) -> None: ...


class FleetState:
    """All nodes, in the order given. Implements the transports' ``Sink``."""

    def __init__(
        self,
        names: list[str] | None = None,
        engine: Engine | None = None,
        clock: Callable[[], float] = time.time,
        history_points: int = HISTORY_POINTS,
    ):
        self.nodes: dict[str, NodeState] = {}
        self.engine = engine
        self.clock = clock
        self.history_points = history_points
        self.ring_budget = RingBudget()  # shared by every node's history
        self.version = 0
        for name in names or ():
            self.node(name)

    def node(self, name: str) -> NodeState:
        node = self.nodes.get(name)
        if node is None:
            node = self.nodes[name] = NodeState(name, history=NodeHistory(self.history_points, self.ring_budget))
            self.version += 1
        return node

    # -- Sink -------------------------------------------------------------------------------

    def on_status(self, name: str, status: Status, reason: str | None = None) -> None:
        node = self.node(name)
        if (node.status, node.reason) == (status, reason):
            return
        was = node.status
        node.status, node.reason = status, reason
        node.version += 1
        # The timeline gets the change of word, as the event without the retry plan; a new
        # reason under the same word (the next retry time, say) only updates the status line.
        if status != st.CONNECTING and was != status:
            now = self.clock()
            severity: Severity = CRITICAL if status in st.DOWN else INFO
            why = st.without_retry(reason)
            if status == st.OK and was in st.DOWN and node.status_since is not None:
                why = f"reconnected after {fmt.duration(now - node.status_since)}"
            node.add(TimelineEntry(now, "status", f"{status}: {why}" if why else status, severity))
            node.status_since = now

    def on_scheduler(self, name: str, view: SchedulerView) -> None:
        """The scheduler's view of ``name``, newly read; a change of word goes on the timeline
        ("scheduler: drain dltui: GPU 3 hot [alice]")."""
        node = self.node(name)
        if node.scheduler == view:
            return
        was = node.scheduler.cell() if node.scheduler else ""
        node.scheduler = view
        node.version += 1
        if view.cell() and view.cell() != was:
            node.add(TimelineEntry(self.clock(), "scheduler", f"scheduler: {view.cell()}", INFO))

    def on_hello(self, name: str, facts: NodeFacts, interval_s: float | None = None) -> None:
        node = self.node(name)
        if node.facts is not None:
            for change in fact_changes(node.facts, facts):
                node.add(TimelineEntry(self.clock(), "fact-change", change, WARNING))
        node.facts = facts
        if interval_s:
            node.interval_s = interval_s
        node.version += 1

    def on_sample(self, name: str, sample: Sample) -> None:
        node = self.node(name)
        now = self.clock()
        node.sample = sample
        node.received_at = now
        node.history.record(sample)
        node.version += 1
        if self.engine is not None:
            self.engine.observe_sample(node, sample, now)

    def on_event(self, name: str, event: NodeEvent) -> None:
        node = self.node(name)
        line_id = event.data.get("id")
        if line_id is not None:  # a kernel line sent again by a new session's backfill
            if line_id in node.event_ids:
                return
            node.event_ids[line_id] = None
            if len(node.event_ids) > EVENT_IDS_REMEMBERED:
                del node.event_ids[next(iter(node.event_ids))]
        if event.kind == "interval":  # the probe took a new interval (the operator's + / -)
            interval_s = event.data.get("interval_s")
            if isinstance(interval_s, (int, float)) and MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
                node.interval_s = float(interval_s)
        elif event.kind == "malformed-line":
            node.malformed_lines = int(event.data.get("count", node.malformed_lines + 1))
        node.add(TimelineEntry(event.time, event.kind, event.message, event.severity, event.gpu))
        if self.engine is not None:
            self.engine.observe_event(node, event, self.clock())

    # -- reading ----------------------------------------------------------------------------

    def tick(self) -> None:
        """Time-driven checks (stale nodes and the like); call on every redraw tick."""
        for _ in self.tick_steps():
            pass

    def tick_steps(self) -> Iterator[None]:
        """``tick`` in the engine's steps, for a caller that runs other work between them."""
        if self.engine is not None:
            yield from self.engine.tick_steps(self, self.clock())

    def __iter__(self) -> Iterator[NodeState]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)


def fact_changes(old: NodeFacts, new: NodeFacts) -> list[str]:
    """Plain-words differences worth a timeline entry (e.g. a driver upgraded by a reboot)."""
    changes = []
    for label, a, b in (
        ("driver", old.driver_version, new.driver_version),
        ("CUDA", old.cuda_version, new.cuda_version),
        ("kernel", old.kernel, new.kernel),
    ):
        if a != b:
            changes.append(f"{label} changed: {a or 'none'} -> {b or 'none'}")
    if len(old.gpus) != len(new.gpus):
        changes.append(f"GPU count changed: {len(old.gpus)} -> {len(new.gpus)}")
    return changes
