"""The key of a history series: which metric, and of which device.

``NodeHistory`` (``state``) keeps one ring a series under a ``SeriesKey``; producers and
readers build the same key, so a misspelt series is a missing attribute or a type error, and a
key no series can have (a GPU metric without its GPU) is a ``KeyError``, never an empty series.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Metric(Enum):
    """Every kind of series kept as history. The value is its name, ``area.field``; the unit it
    ends with sets how the series is stored (``STORAGE_SCALES``)."""

    CPU_TOTAL_PERCENT = "cpu.total_percent"
    CPU_IOWAIT_PERCENT = "cpu.iowait_percent"
    MEMORY_USED_PERCENT = "memory.used_percent"
    MEMORY_SWAP_USED_BYTES = "memory.swap_used_bytes"
    PRESSURE_CPU_SOME_AVG10_PERCENT = "pressure.cpu_some_avg10_percent"
    PRESSURE_IO_SOME_AVG10_PERCENT = "pressure.io_some_avg10_percent"
    PRESSURE_IO_FULL_AVG10_PERCENT = "pressure.io_full_avg10_percent"
    PRESSURE_MEMORY_SOME_AVG10_PERCENT = "pressure.memory_some_avg10_percent"
    TASKS_D_STATE_PROCESSES = "tasks.d_state_processes"
    # per disk, by its name
    DISK_READ_BYTES_PER_S = "disk.read_bytes_per_s"
    DISK_WRITE_BYTES_PER_S = "disk.write_bytes_per_s"
    DISK_BUSY_PERCENT = "disk.busy_percent"
    # per network interface, by its name
    NETWORK_RX_BYTES_PER_S = "network.rx_bytes_per_s"
    NETWORK_TX_BYTES_PER_S = "network.tx_bytes_per_s"
    # one a node: its hottest GPU, whatever its GPU count
    GPU_HOTTEST_TEMPERATURE_C = "gpu.hottest_temperature_c"
    # per GPU, by its index
    GPU_UTILIZATION_PERCENT = "gpu.utilization_percent"
    GPU_UTILIZATION_MIN_PERCENT = "gpu.utilization_min_percent"
    GPU_MEMORY_USED_PERCENT = "gpu.memory_used_percent"
    GPU_TEMPERATURE_C = "gpu.temperature_c"
    GPU_MEMORY_TEMPERATURE_C = "gpu.memory_temperature_c"
    GPU_HOTSPOT_TEMPERATURE_C = "gpu.hotspot_temperature_c"  # junction: AMD's (NVIDIA reports none)
    GPU_TEMPERATURE_MARGIN_C = "gpu.temperature_margin_c"
    GPU_POWER_W = "gpu.power_w"
    GPU_SM_CLOCK_MHZ = "gpu.sm_clock_mhz"

    # A member is its only instance and equals only itself: hashed by identity, in C, instead of
    # by Enum's hash(name) in Python; a key's hash is taken on every look-up of its series.
    __hash__ = object.__hash__


DISK_METRICS = (Metric.DISK_READ_BYTES_PER_S, Metric.DISK_WRITE_BYTES_PER_S, Metric.DISK_BUSY_PERCENT)
NETWORK_METRICS = (Metric.NETWORK_RX_BYTES_PER_S, Metric.NETWORK_TX_BYTES_PER_S)
GPU_METRICS = tuple(m for m in Metric if m.value.startswith("gpu.") and m is not Metric.GPU_HOTTEST_TEMPERATURE_C)
# What names a series' device, by its metric: a disk's or an interface's name, a GPU's index,
# nothing for a node's own series.
_DEVICE_TYPE: dict[Metric, type | None] = {
    m: str if m in DISK_METRICS or m in NETWORK_METRICS else int if m in GPU_METRICS else None for m in Metric
}


class SeriesKey(NamedTuple):
    """One history series: a ``Metric`` and, for a per-device metric, which device (a disk's or
    an interface's name, a GPU's index). ``NodeHistory.get`` raises ``KeyError`` for a key no
    series can have (a per-device metric without its device, or the other way round)."""

    metric: Metric
    device: int | str | None = None

    @property
    def name(self) -> str:
        """``area.[device.]field``, as the series was named before it had a key."""
        if self.device is None:
            return self.metric.value
        area, _, rest = self.metric.value.partition(".")
        return f"{area}.{self.device}.{rest}"

    def valid(self) -> bool:
        """Whether a series can have this key: the device is of the kind its metric names."""
        kind = _DEVICE_TYPE.get(self.metric, bool)  # bool: no metric, never a device's type
        return self.device is None if kind is None else type(self.device) is kind


HOTTEST_GPU_C = SeriesKey(Metric.GPU_HOTTEST_TEMPERATURE_C)
