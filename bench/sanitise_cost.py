"""What cleaning node text (``dltui.core.text``) adds to decoding a probe line, per node-sample.

A node of 8 H100s under a training load (two processes per GPU, named as nvidia-smi names
them), 64 cores, 4 disks, 4 NICs, 6 file systems and its training unit, sampled every second:
utilisation, temperatures, power, clocks, core percentages and I/O rates move each second, as
they do. The lines are the probe's own (``node.wire.Encoder``: a keyframe every 30 lines, else
only the fields that changed) and are decoded by ``ProbeReader`` as the SSH transport does.

Reference, in the same run on the same lines: the same reader told that no line needs
cleaning (``json_may_need_cleaning`` answering False without looking), i.e. decoding as it was
before there was a sanitiser. Rounds alternate between the two so a busy machine's bursts hit both: the ratio is the
median of each round's pair (CPU time of this process, the collector paused while timing).
Target: cleaning adds ≤ 5 % per node-sample. A hostile node
(every process name carrying ESC sequences and a bidi override) is measured too: its strings
really are rewritten.

    python bench/sanitise_cost.py [--nodes 32] [--seconds 60] [--rounds 15] [--seed 7]

Prints figures only; nothing is asserted.
"""

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.core.text import clean_value  # noqa: E402
from dltui.node.wire import Encoder  # noqa: E402
from dltui.transport import protocol  # noqa: E402
from tests.unit.rules_support import busy_gpu  # noqa: E402

GPUS, CORES = 8, 64
HOSTILE = "python3 \x1b]0;PWNED\x07\x1b[2J[@click=app.quit]x[/]\u202etrain.py"


def core(i, rng):
    user = rng.uniform(20, 90)
    system = rng.uniform(1, 8)
    return {"index": i, "total_percent": round(user + system, 1), "user_percent": round(user, 1),
            "system_percent": round(system, 1), "iowait_percent": round(rng.uniform(0, 2), 1),
            "steal_percent": 0.0}


def sample(second, rng, process_name):
    gpus = []
    for i in range(GPUS):
        g = busy_gpu(
            i,
            utilization_percent=rng.randint(92, 100),
            utilization_samples_percent=[rng.randint(90, 100) for _ in range(6)],
            temperature_c=rng.randint(58, 70),
            memory_temperature_c=rng.randint(64, 76),
            temperature_margin_c=rng.randint(18, 30),
            power_w=round(rng.uniform(560, 690), 1),
            sm_clock_mhz=rng.choice((1980, 1965, 1950)),
            memory_used_mib=60000 + rng.randint(0, 64),
        )
        g["processes"] = [
            {"pid": 4000 + 2 * i, "name": process_name, "gpu_memory_mib": 30000.0},
            {"pid": 4001 + 2 * i, "name": "python3 -m torch.distributed.run", "gpu_memory_mib": 512.0},
        ]
        gpus.append(g)
    rate = lambda: round(rng.uniform(1e6, 5e8))  # noqa: E731
    return {
        "time": 1_767_258_000.0 + second,
        "cpu": {"total_percent": round(rng.uniform(40, 80), 1), "user_percent": 50.0, "system_percent": 5.0,
                "iowait_percent": 0.5, "steal_percent": 0.0, "load_1": 40.0, "load_5": 38.0, "load_15": 35.0,
                "cores": [core(i, rng) for i in range(CORES)]},
        "memory": {"total_bytes": 2 << 40, "used_bytes": (1 << 40) + rng.randint(0, 1 << 30),
                   "available_bytes": 1 << 40, "cached_bytes": 1 << 38, "buffers_bytes": 1 << 30,
                   "shmem_bytes": 1 << 34, "swap_total_bytes": 0, "swap_used_bytes": 0},
        "pressure": None,
        "tasks": {"running": rng.randint(30, 70), "blocked_io": rng.randint(0, 3), "d_state_processes": 0},
        "disks": [{"name": f"nvme{d}n1", "read_bytes_per_s": rate(), "write_bytes_per_s": rate(),
                   "read_iops": rng.uniform(100, 9000), "write_iops": rng.uniform(10, 900),
                   "busy_percent": rng.uniform(1, 40), "queue_depth": rng.uniform(0, 4), "await_ms": 0.3}
                  for d in range(4)],
        "filesystems": [{"mountpoint": m, "device": f"/dev/md{j}", "fstype": "xfs", "total_bytes": 1 << 42,
                         "used_bytes": 1 << 41, "available_bytes": 1 << 41, "used_percent": 50.0,
                         "inodes_used_percent": 3.0}
                        for j, m in enumerate(("/", "/boot", "/data", "/scratch", "/home", "/var"))],
        "networks": [{"name": f"ib{n}", "rx_bytes_per_s": rate(), "tx_bytes_per_s": rate(),
                      "rx_packets_per_s": 1e5, "tx_packets_per_s": 1e5, "rx_errors_total": 0,
                      "tx_errors_total": 0, "rx_drops_total": 0, "tx_drops_total": 0} for n in range(4)],
        "gpus": gpus,
        "units": [{"name": "dl_train.service", "load_state": "loaded", "active_state": "active",
                   "sub_state": "running", "result": "success", "restarts_total": 0, "main_pid": 4000,
                   "exec_main_status": 0, "invocation_id": "0" * 32, "started_monotonic_us": 1,
                   "memory_current_bytes": rng.randint(1 << 36, 1 << 37), "cpu_usage_us": second * 10**7,
                   "error": None}],
    }


def lines_of(nodes, seconds, seed, process_name):
    """Each node's probe lines, as its probe would print them."""
    out = []
    for n in range(nodes):
        rng = random.Random(seed * 1000 + n)
        enc = Encoder()
        out.append([json.dumps(enc.encode(sample(s, rng, process_name)), separators=(",", ":"))
                    for s in range(seconds)])
    return out


class Null:
    def on_status(self, *a): ...
    def on_hello(self, *a): ...
    def on_sample(self, *a): ...
    def on_event(self, *a): ...


def decode_all(streams, cleaning):
    """CPU seconds to decode every stream with a fresh reader each."""
    readers = [protocol.ProbeReader("n", Null()) for _ in streams]
    check = protocol.json_may_need_cleaning
    if not cleaning:
        protocol.json_may_need_cleaning = lambda line: False
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        for reader, lines in zip(readers, streams):
            for line in lines:
                reader.feed(line)
        return time.process_time() - t0
    finally:
        gc.enable()
        protocol.json_may_need_cleaning = check


def measure(streams, rounds):
    """(fastest round with cleaning, fastest without, median of the rounds' ratios)."""
    with_clean, without = [], []
    for i in range(rounds):  # which goes first alternates too
        pair = (False, True) if i % 2 else (True, False)
        got = {cleaning: decode_all(streams, cleaning) for cleaning in pair}
        with_clean.append(got[True])
        without.append(got[False])
    ratios = [a / b for a, b in zip(with_clean, without)]
    return min(with_clean), min(without), statistics.median(ratios)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    assert clean_value(HOSTILE) != HOSTILE
    per = args.nodes * args.seconds
    print(f"{args.nodes} nodes × {args.seconds} samples ({GPUS} GPUs, {CORES} cores each), "
          f"{args.rounds} alternating rounds, CPU time")
    for label, name in (("ordinary node", "python3 train.py --config h100.yaml"), ("hostile node", HOSTILE)):
        streams = lines_of(args.nodes, args.seconds, args.seed, name)
        size = sum(len(x) for s in streams for x in s) / per
        cleaned, reference, ratio = measure(streams, args.rounds)
        print(f"{label}: {size:6.0f} B/line  decode {reference / per * 1e6:6.1f} µs  "
              f"with cleaning {cleaned / per * 1e6:6.1f} µs  (fastest rounds)  "
              f"ratio {ratio:5.3f} (median of pairs; target ≤ 1.05)")


if __name__ == "__main__":
    main()
