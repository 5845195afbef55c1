"""Anomaly-rule cost per node-sample, 512 nodes × 8 GPUs.

Each node streams a training job: six sub-second utilisation readings per GPU per second with
occasional dips, temperatures and power drifting, the host calm; a few nodes are in trouble
(a hot GPU, power capping, a throttled GPU, a starving loader) so alerts open and update.
Every node-sample goes through ``Engine.observe_sample`` as ``FleetState`` calls it, slow
rules included (they run every 5 s, so a run covers whole 5 s rounds), plus one redraw tick of
the whole fleet per second.

Reference measured in the same run, on the same samples: ``Sample.from_dict``, the model
building every transport does for every sample anyway. Target: ≤ 50 µs per node-sample.
Times are this process's CPU time, so other work on a busy machine does not count.

    python bench/rules_cost.py [--nodes 512] [--seconds 30] [--seed 7]

Prints figures only; nothing is asserted.
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.core import status as st  # noqa: E402
from dltui.core.models import GpuFacts, NodeFacts, Sample  # noqa: E402
from dltui.core.rules import build_engine  # noqa: E402
from dltui.core.state import FleetState, NodeState  # noqa: E402
from tests.unit.rules_support import busy_gpu, host  # noqa: E402

GPUS = 8
VARIANTS = 24  # distinct samples per second, shared out among the nodes


def gpu_reading(index, rng, trouble):
    subs = [0 if rng.random() < 0.02 else rng.randint(92, 100) for _ in range(6)]
    values = dict(
        utilization_percent=round(sum(subs) / 6),
        utilization_samples_percent=subs,
        temperature_c=rng.randint(58, 70),
        temperature_margin_c=rng.randint(18, 30),
        memory_temperature_c=rng.randint(64, 76),
        power_w=round(rng.uniform(560, 690), 1),
        sm_clock_mhz=rng.choice((1980, 1980, 1965, 1950)),
    )
    if trouble == "hot" and index == 3:
        values.update(temperature_c=88, temperature_margin_c=6)
    elif trouble == "capped":
        values.update(clock_event_reasons_mask=0x4, clock_event_reasons=["sw_power_cap"], power_w=699.0)
    elif trouble == "throttled" and index == 5:
        values.update(clock_event_reasons_mask=0x88, clock_event_reasons=["hw_slowdown", "hw_power_brake_slowdown"], sm_clock_mhz=990)
    elif trouble == "starving":
        values["utilization_samples_percent"] = [0, 0, 97, 98, 99, 97] if rng.random() < 0.5 else [97, 98, 99, 97, 98, 99]
    return busy_gpu(index, **values)


def sample_dicts(second, rng):
    """VARIANTS samples for one second: (trouble, dict) pairs."""
    out = []
    for v in range(VARIANTS):
        trouble = ("ok", "ok", "ok", "ok", "hot", "capped", "throttled", "starving")[v % 8]
        data = host()
        data.update(time=float(second), gpus=[gpu_reading(i, rng, trouble) for i in range(GPUS)])
        out.append(data)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--seconds", type=int, default=60, help="simulated seconds, in whole 5 s rounds")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    names = [f"gpu{i:03d}" for i in range(args.nodes)]
    now = [1_000_000.0]
    fleet = FleetState(names, engine=build_engine(), clock=lambda: now[0], history_points=8)
    engine = fleet.engine
    facts = NodeFacts(driver_version="535.161.08", cuda_version="12.2", gpus=[GpuFacts(i, name="NVIDIA H100 80GB HBM3", power_limit_w=700.0) for i in range(GPUS)])
    nodes: list[NodeState] = []
    for name in names:
        fleet.on_hello(name, facts, 1.0)
        fleet.on_status(name, st.OK)
        nodes.append(fleet.nodes[name])

    # Costs per 5 s round (one slow pass each); the median round resists a busy machine's bursts.
    rounds: list[tuple[float, float]] = []
    engine_s = reference_s = tick_s = 0.0
    for second in range(args.seconds):
        dicts = sample_dicts(second, rng)
        t0 = time.process_time()
        samples = [Sample.from_dict(d) for d in dicts]
        reference_s += (time.process_time() - t0) * args.nodes / VARIANTS
        now[0] += 1.0
        t0 = time.process_time()
        for i, node in enumerate(nodes):  # a node keeps its kind of trouble, its noise varies
            engine.observe_sample(node, samples[i % 8 + 8 * ((i // 8 + second) % (VARIANTS // 8))], now[0])
        engine_s += time.process_time() - t0
        t0 = time.process_time()
        fleet.tick()
        tick_s += time.process_time() - t0
        if second % 5 == 4:
            rounds.append((engine_s, reference_s))
            engine_s = reference_s = 0.0

    per_round = args.nodes * 5
    per_engine = statistics.median(e for e, _ in rounds) / per_round * 1e6
    per_reference = statistics.median(r for _, r in rounds) / per_round * 1e6
    alerts = sum(len(n.alerts) for n in nodes)
    print(f"{args.nodes} nodes × {GPUS} GPUs, {len(rounds) * 5} s at 1 Hz, {alerts} alerts open at the end")
    print(f"rules, per node-sample:            {per_engine:7.1f} µs   (target ≤ 50 µs; median of 5 s rounds)")
    print(f"Sample.from_dict, per node-sample: {per_reference:7.1f} µs   (reference, same samples)")
    print(f"ratio rules / from_dict:           {per_engine / per_reference:7.2f}")
    print(f"redraw tick of the whole fleet:    {tick_s / args.seconds * 1e3:7.2f} ms")
    print(f"CPU for the rules at 1 Hz:         {per_engine * args.nodes / 1e4:7.1f} % of one core")


if __name__ == "__main__":
    main()
