"""The operator side folds a run's samples as they arrive (bounded memory for 24 h / 72 h runs).

- The fold judges exactly as the verdict did when it held every sample: seeded synthetic runs
  (gaps, counters that appear late, throttling, ECC, degraded links, low power, clock dips,
  short loads, no load phase) judged by the pre-fold verdict code are kept in
  tests/fixtures/burn-in/fold_golden_verdicts.json (made by ``python -m
  tests.unit.test_burnin_fold`` on the commit before the fold); the fold must give the same.
- Fed live (samples first, phases only from later statuses, as the follow delivers them),
  it gives the same verdict as the finished run's fold.
- 24 h of 1 Hz x 8 GPUs: what it keeps stays bounded (counted, not timed).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from pathlib import Path

from dltui.burnin import fold as fd
from dltui.burnin import verdict as v
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in" / "fold_golden_verdicts.json"
T0 = 1_767_258_000.0


def _gpu(rng: random.Random, i: int, t: int, kind: str, n: int) -> GpuSample:
    hot = kind == "hot" and i == 1
    late_counters = kind == "late_counters"
    counters = not late_counters or t > 150
    return GpuSample(
        index=i,
        temperature_c=None if kind == "no_temp" else float(rng.randint(55, 70) + (20 if hot and t == n // 2 else 0)),
        memory_temperature_c=float(rng.randint(60, 80)) if rng.random() > 0.05 else None,
        temperature_margin_c=float(rng.randint(6, 30)) if kind != "margin" or t != n // 3 else 4.0,
        power_w=round(rng.uniform(370, 400) * (0.7 if kind == "low_power" and i == 0 else 1.0), 2)
        if rng.random() > 0.03 else None,
        power_limit_w=400.0 if kind != "limit_change" or t < n // 2 else 350.0,
        sm_clock_mhz=float(rng.choice((1980, 1980, 1965, 1950)) if kind != "clock_dip" or i != 2
                           or t % 9 else 1500),
        sm_clock_max_mhz=1980.0,
        utilization_percent=float(rng.randint(90, 100)),
        pcie_gen=4 if kind == "pcie" and i == 3 and t > n // 2 else 5,
        pcie_max_gen=5,
        pcie_width=16,
        pcie_max_width=16,
        pcie_replay_count=(t // 10 if kind == "replays" and i == 0 else 0) if counters else None,
        ecc_corrected_volatile=(t // 50 if kind == "ecc" and i == 1 else 0) if counters else None,
        ecc_uncorrected_volatile=(1 if kind == "ecc" and i == 2 and t > n // 2 else 0)
        if counters else None,
        clock_event_hw_thermal_us=(t * 1000 if kind == "throttle" and i == 0 else 0)
        if counters else None,
        clock_event_sw_thermal_us=0 if counters else None,
        clock_event_hw_power_brake_us=0 if counters else None,
        remapped_rows_pending=kind == "remap" and i == 0 and t > n // 2,
        remapped_rows_failure=False,
    )


KINDS = ("plain", "hot", "margin", "low_power", "limit_change", "clock_dip", "pcie", "replays",
         "ecc", "throttle", "remap", "late_counters", "no_temp", "short_load", "no_load", "gaps")


def _run(kind: str, seed: int) -> v.NodeRun:
    rng = random.Random(seed)
    n = 400
    samples = []
    for t in range(n):
        if kind == "gaps" and 100 <= t < 180:
            continue
        gpus = [_gpu(rng, i, t, kind, n) for i in range(4) if not (kind == "gaps" and i == 3 and t > 300)]
        samples.append(Sample(time=T0 + t + rng.random() * 0.2, gpus=gpus))
    load_end = {"short_load": 70.0}.get(kind, n - 20.0)
    phases = {
        "preflight": [T0, T0 + 20.0],
        "load": [T0 + 20.0, T0 + load_end] if kind != "no_load" else [None, None],
        "post": [T0 + load_end, T0 + n],
    }
    result = {"phases": phases, "gpu": {"tool": "gpu-burn", "exit_code": 0}}
    facts = NodeFacts(hostname="n", gpus=[GpuFacts(index=i) for i in range(4)])
    return v.NodeRun(kind, {"expected_gpus": 4}, result, samples, [], facts, {})


def _runs() -> list[v.NodeRun]:
    return [_run(kind, seed) for seed, kind in enumerate(KINDS)]


# Keys the verdict gained after the golden file was made: they say how the status was reached
# (the optional checks), they do not change it.
_ADDED_SINCE_GOLDEN = ("headline", "optional")


def _judged(run: v.NodeRun) -> dict:
    out = v.judge(run).to_dict()
    for key in _ADDED_SINCE_GOLDEN:
        out.pop(key)
    return out


def test_the_fold_judges_as_the_whole_series_did():
    golden = json.loads(GOLDEN.read_text())
    got = {run.node: _judged(run) for run in _runs()}
    assert set(got) == set(golden)
    for kind in KINDS:
        assert got[kind] == golden[kind], kind
    # and the golden runs do exercise failures, not only passes
    statuses = {(i["check"], i["status"]) for g in golden.values() for gpu in g["gpus"]
                for i in gpu["items"]}
    assert {("thermal", v.FAIL), ("power", v.FAIL), ("consistency", v.FAIL), ("pcie", v.WARN),
            ("ecc", v.WARN), ("throttle", v.NOT_RUN), ("power", v.PASS)} <= statuses


def test_a_live_fold_judges_as_the_finished_run():
    """Samples arrive ahead of the status that says which phase they are in."""
    for run in _runs():
        live = fd.RunFold(v.DEFAULTS["ramp_s"])
        final = run.result["phases"]
        for k, s in enumerate(run.samples):
            live.add(s)
            if k % 7 == 6:  # a status every few samples, as of a time a little behind
                at = run.samples[k - 3].time
                live.on_status({"time": at, "phases": _as_of(final, at)})
        assert live.pending  # some samples were waiting for their phase
        live.close(final)
        assert not live.pending
        again = v.NodeRun(run.node, run.plan, run.result, [], [], run.facts, {}, fold=live)
        assert _judged(again) == _judged(run), run.node


def _as_of(phases: dict, t: float) -> dict:
    """The driver's phase spans as its status would say them at time ``t``."""
    out = {}
    for name, (a, b) in phases.items():
        out[name] = [a if a is not None and a <= t else None, b if b is not None and b <= t else None]
    return out


def test_histogram_order_statistics_match_sorting():
    rng = random.Random(3)
    values = [float(rng.randint(1400, 1980)) for _ in range(1001)]
    h = fd.Histogram()
    for x in values:
        h.add(x)
    ordered = sorted(values)
    assert h.median() == statistics.median(values)
    assert h.kth(len(values) // 20) == ordered[len(values) // 20]
    h.add(1500.0)
    assert h.median() == statistics.median([*values, 1500.0])


def test_envelope_keeps_a_one_second_spike_of_a_day():
    env = fd.Envelope(T0)
    for t in range(86_400):
        env.add(T0 + t, (99.0 if t == 50_000 else 60.0, *([None] * 7)))
    points = env.points("temperature_c")
    assert len(env) <= fd.MAX_BUCKETS and len(points) <= 2 * fd.MAX_BUCKETS
    assert (T0 + 50_000, 99.0) in points  # the spike, at its own time
    assert [p[0] for p in points] == sorted(p[0] for p in points)


def test_24h_of_8_gpus_keeps_a_bounded_fold():
    """86 400 samples x 8 GPUs go through; what is kept does not grow with the run."""
    fold = fd.RunFold(60.0)
    fold.on_phases({"preflight": [T0, T0 + 600], "load": [T0 + 600, None]}, T0)
    kept_at = {}
    pool = [  # 997 distinct readings per GPU, reused (the fold must not care)
        [
            GpuSample(index=i, temperature_c=60.0 + t % 11, memory_temperature_c=70.0,
                      temperature_margin_c=20.0, power_w=350.0 + (t * 7 + i) % 40 + (t % 3) / 100,
                      power_limit_w=400.0, sm_clock_mhz=1900.0 + t % 81, sm_clock_max_mhz=1980.0,
                      utilization_percent=100.0, pcie_replay_count=0, ecc_corrected_volatile=0)
            for i in range(8)
        ]
        for t in range(997)
    ]
    for t in range(86_400):
        fold.add(Sample(time=T0 + t, gpus=pool[t % 997]))
        if t % 60 == 0:
            fold.on_status({"time": T0 + t, "phases": {"load": [T0 + 600, None]}})
        if t + 1 in (7_200, 86_400):
            kept_at[t + 1] = fold.kept_points()
    assert fold.count == 86_400
    assert len(fold.pending) <= 60  # waiting only until the next status
    per_gpu_buckets = [len(e) for e in fold.envelopes.values()]
    assert max(per_gpu_buckets) <= fd.MAX_BUCKETS
    # readings: 40 W x 3 hundredths and 81 MHz values, per GPU, load and after-ramp
    assert kept_at[86_400] <= 8 * (fd.MAX_BUCKETS + 2 * (120 + 81)) + 60
    assert kept_at[86_400] <= kept_at[7_200] * 1.5  # 12x the data, not 12x the memory
    fold.close()
    gf = fold.gpus[0]
    assert gf.load_n == 86_400 - 600 and gf.n == 86_400


if __name__ == "__main__":  # regenerate the golden file (only from the pre-fold verdict)
    GOLDEN.write_text(json.dumps({r.node: _judged(r) for r in _runs()}, indent=1) + "\n")
    sys.stdout.write(f"wrote {GOLDEN}\n")
