"""The data-loader starvation detector and its cause label.

Traces are generated from a training loop that computes, then waits ``idle`` seconds for the
next batch, every ``period`` seconds. They are sampled the way NVML reports utilisation: the
percentage of each sample window during which a kernel ran — six windows a second for the
sub-second samples, one per second for the nvidia-smi (1 Hz) fallback, where short dips average
away instead of reading 0.
"""

import math
import random

import pytest

from dltui.core.rules.starvation import detect
from tests.unit.rules_support import Rig, busy_gpu, disk, pressure

PHASE_S = 0.37  # the loop does not start on a second boundary


def duty(a, b, period, idle):
    """Percent of [a, b) spent computing."""
    waited, k = 0.0, math.floor((a - PHASE_S) / period)
    while PHASE_S + k * period < b:
        start = PHASE_S + k * period
        waited += max(0.0, min(b, start + idle) - max(a, start))
        k += 1
    return round(100 * (1 - waited / (b - a)))


def loader(period, idle, rate_hz):
    """GPU readings for the second ending at t: sub-second samples, or the 1 Hz value only."""

    def gpus(t):
        if rate_hz == 1:
            return [busy_gpu(0, utilization_percent=duty(t - 1, t, period, idle), utilization_samples_percent=[], utilization_sample_period_ms=None)]
        step = 1 / rate_hz
        subs = [duty(t - 1 + i * step, t - 1 + (i + 1) * step, period, idle) for i in range(rate_hz)]
        return [busy_gpu(0, utilization_percent=round(sum(subs) / len(subs)), utilization_samples_percent=subs, utilization_sample_period_ms=1000 / rate_hz)]

    return gpus


def test_detect_counts_the_zero_share_the_dips_and_their_period():
    values = ([100] * 9 + [0] * 3) * 5  # 2 s period at 6 Hz, a 0.5 s dip in each
    found = detect(values, 1 / 6)
    assert (found.zero_fraction, found.dips, found.period_s, found.window_s) == (0.25, 5, 2.0, 10.0)
    assert found.words() == "GPU starved 25 % of the time, dips every ~2 s (5 dips in 10 s)"
    assert detect([100, 0, 0, 100, 100, 0], 1.0).words() == "GPU starved 50 % of the time, dips every ~4 s (2 dips in 6 s)"
    assert detect([0, 0, 0], 0.5).words() == "GPU starved 100 % of the time (1 dips in 2 s)"
    assert detect([97, 98], 1.0).dips == 0


@pytest.mark.parametrize("period", [2, 5, 15])
def test_periodic_dips_at_six_hertz_are_found_with_their_period(period):
    rig = Rig()
    rig.run(130, loader(period, 0.35 * period, 6))
    alert = rig.alert("loader_starvation")
    assert alert.severity == "warning"
    assert f", dips every ~{period} s (" in alert.message
    assert "(1 Hz)" not in alert.message
    assert 0.2 <= alert.evidence["zero_fraction"] < 0.4
    assert alert.evidence["sub_second"] is True and alert.evidence["window_s"] == 60


@pytest.mark.parametrize("period, found", [(2, False), (5, True), (15, True)])
def test_the_one_hertz_fallback_finds_long_dips_marks_them_and_misses_short_ones(period, found):
    """At 1 Hz a 0.7 s wait every 2 s never fills a whole second: it reads 65 %, not 0 %."""
    rig = Rig()
    rig.run(130, loader(period, 0.35 * period, 1))
    alert = rig.alert("loader_starvation")
    if not found:
        assert alert is None
        return
    assert alert.message.startswith("GPU starved ")
    assert f"dips every ~{period} s (" in alert.message and "in 120 s) (1 Hz)" in alert.message
    assert alert.evidence["sub_second"] is False


def test_starving_half_the_time_is_critical():
    rig = Rig()
    rig.run(130, loader(4, 2.2, 6))
    assert rig.alert("loader_starvation").severity == "critical"


def test_nothing_before_the_warm_up():
    rig = Rig()
    rig.run(115, loader(4, 1.4, 6))
    assert rig.alert("loader_starvation") is None


def test_steady_work_rare_zeros_and_a_single_pause_are_not_starvation():
    steady = Rig()
    steady.run(200, lambda t: [busy_gpu(0)])
    assert steady.alerts() == {}
    rng = random.Random(7)
    sparse = Rig()  # ~3 % of the sub-samples read 0, scattered
    sparse.run(200, lambda t: [busy_gpu(0, utilization_samples_percent=[0 if rng.random() < 0.03 else 97 for _ in range(6)])])
    assert sparse.alert("loader_starvation") is None
    pause = Rig()  # one 25 s stop (a checkpoint, an evaluation pass): one dip, not a pattern
    pause.run(200, lambda t: [busy_gpu(0, utilization_samples_percent=[0] * 6 if 150 <= t < 175 else [97] * 6)])
    assert pause.alerts() == {}


def test_a_gpu_without_a_job_is_not_starving():
    rig = Rig()
    rig.run(130, lambda t: [dict(loader(4, 1.4, 6)(t)[0], memory_used_mib=600, processes=[])])
    assert rig.alert("loader_starvation") is None


def test_io_pressure_names_io_with_the_evidence():
    rig = Rig()
    rig.run(
        130,
        loader(4, 1.4, 6),
        pressure=pressure(io_some=41, io_full=12),
        disks=[disk("nvme0n1", busy_percent=100.0, read_bytes_per_s=1.25e9, await_ms=8.0)],
        cpu={"total_percent": 30.0, "user_percent": 15.0, "system_percent": 3.0, "iowait_percent": 12.0, "steal_percent": 0.0,
             "load_1": 40.0, "load_5": 40.0, "load_15": 40.0, "cores": []},
    )
    alert = rig.alert("loader_starvation")
    assert alert.message.startswith("GPU starved 29 % of the time, dips every ~4 s (16 dips in 60 s) for 5.0s")
    assert (
        "; likely cause io (io pressure high on the last 3 readings); pressure (some avg10) io 41 %, cpu 2 %,"
        " memory 0 %; iowait 12 %; nvme0n1 100 % busy, 1.2G/s read, await 8.0 ms — the loader waits on storage:"
    ) in alert.message
    assert alert.evidence["cause"] == "io" and alert.evidence["io_some_avg10_percent"] == 41


@pytest.mark.parametrize(
    "host, cause",
    [
        ({"pressure": pressure(cpu_some=65)}, "cpu (cpu pressure high on the last 3 readings)"),
        ({"pressure": pressure(memory_some=15)}, "memory (memory pressure high on the last 3 readings (page cache thrashing))"),
        (
            {"pressure": None, "tasks": {"running": 9, "blocked_io": 4, "d_state_processes": 3}},
            "io (processes stuck in D state (waiting on I/O) in 3 scans in a row)",
        ),
        ({}, "unknown;"),
        ({"pressure": None}, "unknown; no pressure (PSI) on this kernel"),
    ],
)
def test_the_cause_label_follows_the_host_signal(host, cause):
    rig = Rig()
    rig.run(130, loader(4, 1.4, 6), **host)
    assert f"likely cause {cause}" in rig.alert("loader_starvation").message


def test_one_d_state_scan_repeated_between_scans_is_not_yet_a_cause():
    """The probe scans for D-state processes every 10 samples and repeats the count: a blip
    seen in one scan fills 10 samples but is one reading, not three."""
    rig = Rig()
    rig.run(120, loader(4, 1.4, 6), pressure=None, tasks={"running": 9, "blocked_io": 0, "d_state_processes": 0})
    rig.run(12, loader(4, 1.4, 6), pressure=None, tasks={"running": 9, "blocked_io": 4, "d_state_processes": 3})
    assert "likely cause unknown" in rig.alert("loader_starvation").message


def test_a_disk_slower_than_its_own_baseline_names_io():
    rig = Rig()
    rig.run(200, lambda t: [busy_gpu(0)], disks=[disk("nvme0n1", await_ms=0.4)])
    rig.run(130, loader(4, 1.4, 6), disks=[disk("nvme0n1", await_ms=8.0)])
    message = rig.alert("loader_starvation").message
    assert "likely cause io (nvme0n1 await 8.0 is " in message and "× its usual 0." in message


def test_nic_receive_dips_lining_up_with_the_gpu_dips_name_the_network():
    gpus = loader(4, 1.4, 6)

    def hosts(t):
        share = gpus(t)[0]["utilization_samples_percent"].count(0) / 6
        rx = 9e8 * (1 - share)  # data arrives in bursts; the GPU waits while it does not
        return {"networks": [{"name": "ib0", "rx_bytes_per_s": rx, "tx_bytes_per_s": 1e6, "rx_packets_per_s": 1.0,
                              "tx_packets_per_s": 1.0, "rx_errors_total": 0, "tx_errors_total": 0, "rx_drops_total": 0, "tx_drops_total": 0}]}

    rig = Rig()
    rig.run(130, gpus, hosts=hosts)
    message = rig.alert("loader_starvation").message
    assert "likely cause network (ib0 receive rate falls when the GPU starves (correlation -1.00; network storage?))" in message


def test_starvation_clears_after_the_window_and_two_quiet_minutes():
    rig = Rig()
    rig.run(130, loader(4, 1.4, 6))
    assert rig.alert("loader_starvation") is not None
    rig.run(170, lambda t: [busy_gpu(0)])
    assert rig.alert("loader_starvation") is not None  # the window still holds dips until ~60 s
    rig.run(15, lambda t: [busy_gpu(0)])
    assert rig.alert("loader_starvation") is None


def test_a_snapshot_judges_the_dips_it_saw():
    rig = Rig(window_s=3)
    rig.run(3, loader(1, 0.5, 6))
    alert = rig.alert("loader_starvation")
    assert alert.message.startswith("GPU starved 33 % of the time, dips every ~1.0 s (3 dips in 3 s)")
    assert "(seen throughout the 3 s snapshot; the rule normally needs 120 s)" in alert.message
