"""What cleaning node text (``dltui.core.text``) adds to decoding a probe line, per node-sample.

A node of 8 H100s under a training load (two processes per GPU, named as nvidia-smi names
them), 64 cores, 4 disks, 4 NICs, 6 file systems and its training unit, sampled every second:
utilisation, temperatures, power, clocks, core percentages and I/O rates move each second, as
they do. The lines are the probe's own (``node.wire.Encoder``: a keyframe every 30 lines, else
only the fields that changed) and are decoded by ``ProbeReader`` as the SSH transport does.

Reference, in the same run on the same lines: the same reader told that no line needs
cleaning (``json_may_need_cleaning`` answering False without looking), i.e. decoding as it was
before there was a sanitiser. Each line is decoded several times by each, alternating, and its
fastest time kept (the collector paused): on a shared, busy machine that is the time no other
process interrupted. Target: cleaning adds ≤ 5 % per node-sample. Hostile nodes (every
process name carrying ESC sequences and a bidi override) are measured too, their strings really
rewritten: one whose names stay (sent again in each keyframe), and the worst case, one that
renames its processes every second (every line carries them).

    python bench/sanitise_cost.py [--nodes 16] [--seconds 60] [--repeats 7] [--seed 7]

Prints figures only; nothing is asserted.
"""

import argparse
import gc
import json
import random
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
            {"pid": 4000 + 2 * i, "name": process_name.replace("{s}", str(second)), "gpu_memory_mib": 30000.0},
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


def _no_line_needs_cleaning(line):
    return False


def measure(streams, repeats):
    """(s decoding with cleaning, s without): each line fed ``repeats`` times to either reader,
    alternating, and the fastest of each kept. On a shared machine a line's fastest time is the
    one no other process interrupted; summed, they give both costs without the noise."""
    check = protocol.json_may_need_cleaning
    cleaned = reference = 0
    gc.disable()
    try:
        for lines in streams:
            with_clean = protocol.ProbeReader("n", Null())
            without = protocol.ProbeReader("n", Null())
            for line in lines:
                best = [float("inf"), float("inf")]
                for _ in range(repeats):
                    for i, reader in ((0, with_clean), (1, without)):
                        protocol.json_may_need_cleaning = check if i == 0 else _no_line_needs_cleaning
                        t0 = time.perf_counter_ns()
                        reader.feed(line)
                        best[i] = min(best[i], time.perf_counter_ns() - t0)
                cleaned += best[0]
                reference += best[1]
    finally:
        protocol.json_may_need_cleaning = check
        gc.enable()
    return cleaned / 1e9, reference / 1e9


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    assert clean_value(HOSTILE) != HOSTILE
    per = args.nodes * args.seconds
    print(f"{args.nodes} nodes × {args.seconds} samples ({GPUS} GPUs, {CORES} cores each), "
          f"fastest of {args.repeats} decodes per line")
    for label, name in (
        ("ordinary node", "python3 train.py --config h100.yaml"),
        ("hostile node", HOSTILE),
        ("hostile, renamed each second", HOSTILE + "{s}"),
    ):
        streams = lines_of(args.nodes, args.seconds, args.seed, name)
        size = sum(len(x) for s in streams for x in s) / per
        cleaned, reference = measure(streams, args.repeats)
        print(f"{label:<29} {size:5.0f} B/line  decode {reference / per * 1e6:6.1f} µs  "
              f"with cleaning {cleaned / per * 1e6:6.1f} µs  ratio {cleaned / reference:5.3f}  (target ≤ 1.05)")


if __name__ == "__main__":
    main()
