"""Fleet state keeps bounded, time-aligned history and a timeline of what happened."""

import math
import statistics

import pytest

from dltui.core import status as st
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample
from dltui.core.series import HOTTEST_GPU_C, Metric, SeriesKey
from dltui.core.state import FleetState, NodeHistory, Ring, storage_scale
from dltui.ui.spark import downsample


def test_ring_keeps_the_newest_values_in_order_and_gaps_as_none():
    ring = Ring(3)
    assert ring.values() == [] and ring.last() is None
    for v in (1.0, None, 3.0, 4.0):
        ring.append(v)
    assert len(ring) == 3
    assert ring.values() == [None, 3.0, 4.0]
    assert ring.values(2) == [3.0, 4.0]
    assert ring.last() == 4.0


def test_ring_grows_to_its_capacity_then_wraps_like_a_full_size_one():
    grown, history = Ring(300), []
    for i in range(1000):
        value = None if i % 7 == 0 else float(i)
        grown.append(value)
        history.append(value)
        assert len(grown) == min(i + 1, 300)
        if i in (0, 63, 64, 127, 128, 299, 300, 301, 999):
            assert grown.values() == history[-300:]
            assert grown.values(5) == history[-5:][-len(grown):]
    assert len(grown._data) == 300  # grew 64 -> 128 -> 256 -> 300, never past capacity


def test_a_ring_born_late_keeps_its_leading_gaps():
    ring = Ring(200, size=150)
    ring.append(1.0)
    assert len(ring) == 151 and ring.values()[:2] == [None, None] and ring.values()[-1] == 1.0


def test_series_units_choose_their_storage_and_resolution():
    assert [storage_scale(k) for k in ("gpu.0.utilization_percent", "gpu.0.temperature_c")] == [100, 100]
    assert [storage_scale(k) for k in ("gpu.0.sm_clock_mhz", "gpu.0.power_w")] == [1, 10]
    assert storage_scale("disk.sda.read_bytes_per_s") == 0 and storage_scale("tasks.d_state_processes") == 0
    ring = Ring(8, scale=100)
    assert ring._data.typecode == "h" and ring._data.itemsize == 2
    for v in (41.237, -3.004, 0.005, 327.67):
        ring.append(v)
    assert ring.values() == [41.24, -3.0, 0.0, 327.67]  # 0.01 a step (0.005 rounds half to even)
    watts, mhz = Ring(4, scale=10), Ring(4, scale=1)
    watts.append(312.47)
    mhz.append(1410.6)
    assert watts.last() == 312.5 and mhz.last() == 1411.0 and isinstance(mhz.last(), float)


def test_an_int16_ring_keeps_gaps_wraps_and_grows_like_a_float_one():
    ints, floats, history = Ring(300, scale=1), Ring(300), []
    for i in range(1000):
        value = None if i % 7 == 0 else float(i % 500 - 250)
        ints.append(value)
        floats.append(value)
        history.append(value)
        if i in (0, 63, 64, 127, 128, 299, 300, 301, 999):
            assert ints.values() == floats.values() == history[-300:]
            assert ints.values(5) == history[-5:][-len(ints) :]
            assert ints.last() == history[-1]
    assert len(ints._data) == 300 and ints._data.typecode == "h"  # doubled to its capacity, never promoted
    born_late = Ring(200, size=150, scale=100)
    born_late.append(float("nan"))  # NaN is a gap in either storage, not a reason to promote
    born_late.append(1.5)
    assert born_late.values()[:2] == [None, None] and born_late.values()[-2:] == [None, 1.5]
    assert born_late._data.typecode == "h"


@pytest.mark.parametrize("misfit", [327.68, -327.68, 1e9, math.inf, -math.inf])
def test_a_value_int16_cannot_hold_turns_its_ring_float32_once_and_loses_nothing(misfit):
    ring = Ring(100, scale=100)
    for v in (12.5, None, 99.99):
        ring.append(v)
    ring.append(misfit)  # -327.68 would be the gap's own int16: it promotes too
    assert ring._data.typecode == "f"
    ring.append(7.25)
    values = ring.values()
    assert values[:3] == [12.5, None, pytest.approx(99.99, abs=1e-5)]
    assert values[3] == pytest.approx(misfit, rel=1e-6) and values[4] == 7.25 and len(ring) == 5
    assert ring.last() == 7.25 and ring._data.typecode == "f"


def test_append_row_mixes_int16_float32_and_double_rings():
    rings = [Ring(4, scale=100), Ring(4), Ring(4, "d"), Ring(4, scale=10)]
    Ring.append_row(rings, [55.5, 2.0**40, 1_700_000_000.25, None])
    Ring.append_row(rings, [None, None, None, 5000.0])  # 5000 W is past int16 at 0.1 W: promoted
    assert [r._data.typecode for r in rings] == ["h", "f", "d", "f"]
    assert [r.values() for r in rings] == [[55.5, None], [2.0**40, None], [1_700_000_000.25, None], [None, 5000.0]]
    with pytest.raises(ValueError):
        Ring.append_row(rings, [1.0])  # one value a ring, as before


@pytest.mark.parametrize("pick", [max, min, statistics.fmean])
@pytest.mark.parametrize("gaps", [False, True])
def test_squeezed_int16_is_downsample_of_its_values(pick, gaps):
    ring = Ring(500, scale=100)
    for i in range(730):
        ring.append(None if gaps and i % 11 in (0, 1, 2) else 40.0 + (i * 37 % 1000) / 100)
    for n, per in ((500, 7), (100, 1), (23, 30), (0, 4)):
        assert ring.squeezed(n, per, pick) == downsample(ring.values(n), per, pick)


def test_history_keeps_unit_series_as_int16_and_the_rest_as_float32():
    h = NodeHistory(capacity=10)
    h.record(Sample(time=1.0, gpus=[GpuSample(0, temperature_c=61.0, power_w=412.34, sm_clock_mhz=1980)]))
    assert h.series[SeriesKey(Metric.GPU_TEMPERATURE_C, 0)]._data.typecode == "h"
    assert h.get(SeriesKey(Metric.GPU_POWER_W, 0)) == [412.3]
    assert h.get(SeriesKey(Metric.GPU_SM_CLOCK_MHZ, 0)) == [1980.0] and h.get(HOTTEST_GPU_C) == [61.0]
    assert h.time._data.typecode == "d"


def test_history_series_stay_aligned_when_a_gpu_appears_late_or_vanishes():
    h = NodeHistory(capacity=10)
    h.record(Sample(time=1.0))
    h.record(Sample(time=2.0, gpus=[GpuSample(0, utilization_percent=50.0)]))
    h.record(Sample(time=3.0))
    assert h.time.values() == [1.0, 2.0, 3.0]
    assert h.get(SeriesKey(Metric.GPU_UTILIZATION_PERCENT, 0)) == [None, 50.0, None]
    assert h.get(SeriesKey(Metric.GPU_UTILIZATION_PERCENT, 1)) == []  # no such GPU on this node (yet)


@pytest.mark.parametrize(
    "key",
    [
        "gpu.0.utilization_percent",  # a name, as series were addressed before they had keys
        ("gpu.utilization_percent", 0),  # not a SeriesKey
        SeriesKey("gpu.utilization_percent", 0),  # type: ignore[arg-type]  # a name, not a Metric
        SeriesKey(Metric.GPU_UTILIZATION_PERCENT),  # a GPU's metric without its GPU
        SeriesKey(Metric.GPU_UTILIZATION_PERCENT, "0"),  # a GPU is named by its index
        SeriesKey(Metric.DISK_BUSY_PERCENT, 0),  # a disk by its name
        SeriesKey(Metric.CPU_TOTAL_PERCENT, 0),  # the node's own series has no device
        SeriesKey(Metric.GPU_HOTTEST_TEMPERATURE_C, 0),  # one a node, not a GPU
    ],
)
def test_a_series_that_cannot_exist_is_a_key_error_not_an_empty_one(key):
    h = NodeHistory(capacity=10)
    h.record(Sample(time=1.0, cpu=None, gpus=[GpuSample(0, utilization_percent=50.0, temperature_c=60.0)]))
    with pytest.raises(KeyError):
        h.get(key)
    with pytest.raises(KeyError):
        h.ring(key)


def test_every_metric_names_its_device_and_its_storage():
    assert SeriesKey(Metric.GPU_MEMORY_TEMPERATURE_C, 3).name == "gpu.3.memory_temperature_c"
    assert SeriesKey(Metric.NETWORK_RX_BYTES_PER_S, "eth0").name == "network.eth0.rx_bytes_per_s"
    assert HOTTEST_GPU_C.name == "gpu.hottest_temperature_c" and HOTTEST_GPU_C.valid()
    assert {m.value.partition(".")[0] for m in Metric} == {"cpu", "memory", "pressure", "tasks", "disk", "network", "gpu"}


def test_status_changes_go_to_the_timeline_with_their_reason():
    now = [10.0]
    fleet = FleetState(["gpu01"], clock=lambda: now[0])
    node = fleet.nodes["gpu01"]
    v0 = node.version
    fleet.on_status("gpu01", st.OK)
    fleet.on_status("gpu01", st.OK)  # no change, no entry
    fleet.on_status("gpu01", st.UNREACHABLE, "connection refused")
    assert node.version > v0
    assert [(e.kind, e.message, e.severity) for e in node.timeline] == [
        ("status", "ok", "info"),
        ("status", "unreachable: connection refused", "critical"),
    ]


def test_a_driver_change_after_reconnect_is_a_timeline_entry():
    fleet = FleetState(["gpu01"], clock=lambda: 5.0)
    fleet.on_hello("gpu01", NodeFacts(driver_version="535.161.08", gpus=[GpuFacts(0), GpuFacts(1)]))
    fleet.on_hello("gpu01", NodeFacts(driver_version="550.90.07", gpus=[GpuFacts(0)]))
    messages = [e.message for e in fleet.nodes["gpu01"].timeline]
    assert messages == ["driver changed: 535.161.08 -> 550.90.07", "GPU count changed: 2 -> 1"]


def test_age_uses_the_operators_clock_not_the_nodes():
    now = [1000.0]
    fleet = FleetState(["n"], clock=lambda: now[0])
    fleet.on_sample("n", Sample(time=5.0))  # node clock far behind
    now[0] = 1002.5
    assert fleet.nodes["n"].age(now[0]) == 2.5


def test_series_of_a_device_gone_for_the_whole_history_are_forgotten(monkeypatch):
    from dltui.core import state
    from dltui.core.models import NetworkSample

    monkeypatch.setattr(state, "PRUNE_EVERY", 5)
    h = NodeHistory(capacity=10)
    for t in range(3):  # a container's interface lives 3 samples, then goes away
        h.record(Sample(time=float(t), networks=[NetworkSample("eth0", 1.0), NetworkSample("cali1", 2.0)]))
    for t in range(3, 12):
        h.record(Sample(time=float(t), networks=[NetworkSample("eth0", 1.0)]))
    cali1, eth0 = (SeriesKey(Metric.NETWORK_RX_BYTES_PER_S, n) for n in ("cali1", "eth0"))
    assert cali1 in h.series  # still inside the history window
    for t in range(12, 15):
        h.record(Sample(time=float(t), networks=[NetworkSample("eth0", 1.0)]))
    assert cali1 not in h.series
    assert h.get(eth0) == [1.0] * 10


def test_history_follows_a_change_of_shape_and_a_name_given_twice():
    """Series names are built once per sample shape; a new disk, a disk gone and two disks
    of one name (the last one's value wins) still land each value in its own series."""
    from dltui.core.models import DiskSample

    h = NodeHistory(capacity=10)
    h.record(Sample(time=1.0, disks=[DiskSample("sda", 1.0)]))
    h.record(Sample(time=2.0, disks=[DiskSample("sda", 2.0), DiskSample("sdb", 20.0)]))
    h.record(Sample(time=3.0, disks=[DiskSample("sdb", 30.0)]))
    h.record(Sample(time=4.0, disks=[DiskSample("sdb", 40.0), DiskSample("sdb", 41.0)]))
    h.record(Sample(time=5.0, disks=[DiskSample("sda", 5.0)]))
    assert h.get(SeriesKey(Metric.DISK_READ_BYTES_PER_S, "sda")) == [1.0, 2.0, None, None, 5.0]
    assert h.get(SeriesKey(Metric.DISK_READ_BYTES_PER_S, "sdb")) == [None, 20.0, 30.0, 41.0, None]
    assert [k.name for k in h.series] == [
        "disk.sda.read_bytes_per_s",
        "disk.sda.write_bytes_per_s",
        "disk.sda.busy_percent",
        "disk.sdb.read_bytes_per_s",
        "disk.sdb.write_bytes_per_s",
        "disk.sdb.busy_percent",
    ]


def test_sample_metrics_names_every_series_with_its_value():
    from dltui.core.models import CpuSample, NetworkSample
    from dltui.core.state import sample_metrics

    sample = Sample(
        time=1.0,
        cpu=CpuSample(total_percent=12.0, iowait_percent=1.0),
        networks=[NetworkSample("eth0", 5.0, 6.0)],
        gpus=[
            GpuSample(0, utilization_percent=50.0, temperature_c=60.0, utilization_samples_percent=[40.0, 60.0]),
            GpuSample(1, utilization_percent=90.0, temperature_c=70.0),
        ],
    )
    got = {k.name: v for k, v in sample_metrics(sample)}
    assert got["cpu.total_percent"] == 12.0 and got["network.eth0.tx_bytes_per_s"] == 6.0
    assert got[HOTTEST_GPU_C.name] == 70.0
    assert got["gpu.0.utilization_min_percent"] == 40.0 and "gpu.1.utilization_min_percent" not in got
    assert got["gpu.1.temperature_c"] == 70.0 and got["gpu.1.power_w"] is None
