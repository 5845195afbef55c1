"""Why a GPU starves: the host signal that lines up with the dips (the cause the
loader_starvation alert names).

First match wins; the evidence is shown beside the label whatever it is:

- ``io``: PSI io ``some avg10`` ≥ io_some or ``full avg10`` ≥ io_full on the last 3 readings;
  or ≥ d_state_processes processes in D state on 3 consecutive samples (the probe counts them
  node-wide, not per job); or a disk's await or queue ≥ await_ratio × its own baseline (a
  slow average of that disk's busy periods).
- ``cpu``: PSI cpu ``some avg10`` ≥ cpu_some on the last 3 readings.
- ``memory``: PSI memory ``some avg10`` ≥ memory_some on the last 3 readings (page-cache thrash).
- ``network``: the busiest NIC's receive rate dips when the GPU starves (correlation ≤ −0.5).
- ``unknown`` otherwise. iowait is shown but never decides: proc(5) calls it unreliable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import StatisticsError, correlation, fmean
from typing import Any

from dltui.node.schema import D_STATE_EVERY_TICKS

from .. import format as fmt
from ..models import Sample
from ..series import Metric, SeriesKey
from .memory import NodeMemory

READINGS = 3
_BASELINE_EVERY_S = 5.0
_BASELINE_TAU_S = 1800.0  # slow: a stall lasting minutes must not become its own baseline
_DISK_FIELDS = ("await_ms", "queue_depth")

# The probe counts D-state processes every D_STATE_EVERY_TICKS samples and repeats the count
# in between: three distinct scans need this many consecutive samples.
D_STATE_READINGS = 2 * D_STATE_EVERY_TICKS + 1


@dataclass(frozen=True, slots=True)
class Cause:
    label: str  # io, cpu, memory, network, unknown
    reason: str  # what decided it, in words ("" for unknown)
    evidence: str  # the host's state in words, whatever the label
    numbers: dict[str, Any] = field(default_factory=dict)


def track_disks(node: NodeMemory, sample: Sample) -> None:
    """Keep each disk's baseline await and queue (called every sample; works every 5 s)."""
    state = node.rule_state
    if node.now < state.get("disks_next", 0.0):
        return
    state["disks_next"] = node.now + _BASELINE_EVERY_S
    baselines = state.setdefault("disk_baselines", {})
    alpha = _BASELINE_EVERY_S / _BASELINE_TAU_S
    for d in sample.disks:
        if not (d.read_iops or d.write_iops):
            continue  # an idle disk's await says nothing
        for name in _DISK_FIELDS:
            value = getattr(d, name)
            if value is None:
                continue
            key = (d.name, name)
            old = baselines.get(key)
            baselines[key] = value if old is None else old + alpha * (value - old)


def explain(
    node: NodeMemory, sample: Sample, starved_share: Sequence[float], p: Mapping[str, Any]
) -> Cause:
    history = node.history
    numbers: dict[str, Any] = {}
    evidence = _evidence(sample, numbers)

    def held(metric: Metric, threshold: float, readings: int = READINGS) -> bool:
        values = history.get(SeriesKey(metric), readings) if history is not None else []
        return len(values) == readings and all(v is not None and v >= threshold for v in values)

    io_some, io_full = Metric.PRESSURE_IO_SOME_AVG10_PERCENT, Metric.PRESSURE_IO_FULL_AVG10_PERCENT
    if held(io_some, p["io_some"]) or held(io_full, p["io_full"]):
        return Cause("io", "io pressure high on the last 3 readings", evidence, numbers)
    if held(Metric.TASKS_D_STATE_PROCESSES, p["d_state_processes"], D_STATE_READINGS):
        return Cause("io", "processes stuck in D state (waiting on I/O) in 3 scans in a row", evidence, numbers)
    slow = _slow_disk(node, sample, p)
    if slow:
        return Cause("io", slow, evidence, numbers)
    if held(Metric.PRESSURE_CPU_SOME_AVG10_PERCENT, p["cpu_some"]):
        return Cause("cpu", "cpu pressure high on the last 3 readings", evidence, numbers)
    if held(Metric.PRESSURE_MEMORY_SOME_AVG10_PERCENT, p["memory_some"]):
        return Cause("memory", "memory pressure high on the last 3 readings (page cache thrashing)", evidence, numbers)
    nic = _network_lines_up(node, sample, starved_share, p)
    if nic:
        return Cause("network", nic, evidence, numbers)
    return Cause("unknown", "", evidence, numbers)


def _evidence(sample: Sample, numbers: dict[str, Any]) -> str:
    parts = []
    pr = sample.pressure
    if pr is not None:
        parts.append(
            f"pressure (some avg10) io {fmt.num(pr.io_some_avg10_percent, 0)} "
            f"%, cpu {fmt.num(pr.cpu_some_avg10_percent, 0)} %,"
            f" memory {fmt.num(pr.memory_some_avg10_percent, 0)} %"
        )
        numbers.update(
            io_some_avg10_percent=pr.io_some_avg10_percent,
            cpu_some_avg10_percent=pr.cpu_some_avg10_percent,
            memory_some_avg10_percent=pr.memory_some_avg10_percent,
        )
    else:
        parts.append("no pressure (PSI) on this kernel")
    if sample.cpu is not None and sample.cpu.iowait_percent is not None:
        parts.append(f"iowait {sample.cpu.iowait_percent:.0f} %")
        numbers["iowait_percent"] = sample.cpu.iowait_percent
    busiest = max(
        sample.disks, key=lambda d: (d.busy_percent or 0, d.read_bytes_per_s or 0), default=None
    )
    if busiest is not None and (busiest.busy_percent or busiest.read_bytes_per_s):
        parts.append(
            f"{busiest.name} {fmt.num(busiest.busy_percent, 0, ' %')} busy, {fmt.rate(busiest.read_bytes_per_s)} read,"
            f" await {fmt.num(busiest.await_ms, 1, ' ms')}"
        )
        numbers.update(
            disk=busiest.name,
            disk_busy_percent=busiest.busy_percent,
            disk_read_bytes_per_s=busiest.read_bytes_per_s,
        )
    if sample.tasks is not None and sample.tasks.d_state_processes:
        parts.append(f"{sample.tasks.d_state_processes} processes in D state")
        numbers["d_state_processes"] = sample.tasks.d_state_processes
    return "; ".join(parts)


def _slow_disk(node: NodeMemory, sample: Sample, p: Mapping[str, Any]) -> str:
    baselines = node.rule_state.get("disk_baselines", {})
    for d in sample.disks:
        for name in _DISK_FIELDS:
            value, base = getattr(d, name), baselines.get((d.name, name))
            if value is None or not base or value < p["await_min_ms"] and name == "await_ms":
                continue
            if value >= p["await_ratio"] * base:
                label = "await" if name == "await_ms" else "queue"
                return f"{d.name} {label} {value:.1f} is {value / base:.1f}× its usual {base:.1f}"
    return ""


def _network_lines_up(
    node: NodeMemory, sample: Sample, starved_share: Sequence[float], p: Mapping[str, Any]
) -> str:
    """Does the busiest NIC's receive rate fall when the GPU starves?"""
    history, n = node.history, len(starved_share)
    if history is None or n < 10:
        return ""
    best: str | None = None
    best_rx: list[float] = []
    for nic in sample.networks:
        readings = history.get(SeriesKey(Metric.NETWORK_RX_BYTES_PER_S, nic.name), n)
        rx = [v for v in readings if v is not None]
        if len(rx) == n and (not best_rx or fmean(rx) > fmean(best_rx)):
            best, best_rx = nic.name, rx
    if best is None or fmean(best_rx) < p["network_min_bytes_per_s"]:
        return ""
    try:
        r = correlation(list(starved_share), best_rx)
    except StatisticsError:  # one of them constant
        return ""
    if r > -p["network_correlation"]:
        return ""
    return f"{best} receive rate falls when the GPU starves (correlation {r:.2f}; network storage?)"
