"""Fleet state keeps bounded, time-aligned history and a timeline of what happened."""

from dltui.core import status as st
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample
from dltui.core.state import FleetState, NodeHistory, Ring


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


def test_history_series_stay_aligned_when_a_gpu_appears_late_or_vanishes():
    h = NodeHistory(capacity=10)
    h.record(Sample(time=1.0))
    h.record(Sample(time=2.0, gpus=[GpuSample(0, utilization_percent=50.0)]))
    h.record(Sample(time=3.0))
    assert h.time.values() == [1.0, 2.0, 3.0]
    assert h.get("gpu.0.utilization_percent") == [None, 50.0, None]
    assert h.get("no.such.series") == []


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
    assert "network.cali1.rx_bytes_per_s" in h.series  # still inside the history window
    for t in range(12, 15):
        h.record(Sample(time=float(t), networks=[NetworkSample("eth0", 1.0)]))
    assert "network.cali1.rx_bytes_per_s" not in h.series
    assert h.get("network.eth0.rx_bytes_per_s") == [1.0] * 10


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
    assert h.get("disk.sda.read_bytes_per_s") == [1.0, 2.0, None, None, 5.0]
    assert h.get("disk.sdb.read_bytes_per_s") == [None, 20.0, 30.0, 41.0, None]
    assert list(h.series) == [
        "disk.sda.read_bytes_per_s",
        "disk.sda.write_bytes_per_s",
        "disk.sda.busy_percent",
        "disk.sdb.read_bytes_per_s",
        "disk.sdb.write_bytes_per_s",
        "disk.sdb.busy_percent",
    ]


def test_sample_metrics_names_every_series_with_its_value():
    from dltui.core.models import CpuSample, NetworkSample
    from dltui.core.state import HOTTEST_GPU_C, sample_metrics

    sample = Sample(
        time=1.0,
        cpu=CpuSample(total_percent=12.0, iowait_percent=1.0),
        networks=[NetworkSample("eth0", 5.0, 6.0)],
        gpus=[
            GpuSample(0, utilization_percent=50.0, temperature_c=60.0, utilization_samples_percent=[40.0, 60.0]),
            GpuSample(1, utilization_percent=90.0, temperature_c=70.0),
        ],
    )
    got = dict(sample_metrics(sample))
    assert got["cpu.total_percent"] == 12.0 and got["network.eth0.tx_bytes_per_s"] == 6.0
    assert got[HOTTEST_GPU_C] == 70.0
    assert got["gpu.0.utilization_min_percent"] == 40.0 and "gpu.1.utilization_min_percent" not in got
    assert got["gpu.1.temperature_c"] == 70.0 and got["gpu.1.power_w"] is None
