"""Wire bytes of the GPU part of a sample line, and the NVML collector's CPU per sample.

An 8-GPU node is simulated with the test suite's fake NVML (the real pynvml with its functions
serving the real H100 capture, tests/fixtures/nvidia-smi/), moving the way a training job
moves: utilisation with short dips, temperatures and power drifting, SM clock stepping, six
sub-second utilisation readings per GPU per second. Lines go through dltui.node.wire.Encoder
as the probe sends them (compact JSON).

References measured in the same run: the same records spelled out in full JSON (bytes), and
the nvidia-smi fallback's per-tick work on the same 8 GPUs, parsing one CSV batch (CPU).
Target: a steady-state 8-GPU line <= 1 KB. With the fake NVML, driver time is not included:
the CPU figure is the collector's own Python cost.

    python bench/gpu_sample_bytes.py [--ticks 60] [--seed 7]

Prints figures only; nothing is asserted.
"""

import argparse
import json
import random
import statistics
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from dltui.node.probe import nvml  # noqa: E402
from dltui.node.probe.problems import Problems  # noqa: E402
from dltui.node.probe.smi import SAMPLE_QUERY, choose_fields, gpu_record, parse_query_csv  # noqa: E402
from dltui.node.wire import Encoder  # noqa: E402
from tests.fakes.fake_nvml import install_fake_nvml  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "nvidia-smi"
CAPTURE = FIXTURES / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
APPS = FIXTURES / "h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv"
GPUS = 8
SM_CLOCKS = (1980, 1980, 1980, 1965, 1950)


def compact(obj):
    return len(json.dumps(obj, separators=(",", ":")))


def move(fake, rng):
    """One second of a training job on every GPU."""
    for gpu in fake.gpus:
        row = gpu.row
        readings = [100 if rng.random() > 0.08 else rng.choice((0, 35)) for _ in range(6)]
        fake.push_utilization(gpu.index, readings)
        row["utilization.gpu"] = "%d %%" % round(sum(readings) / 6)
        temp = int(row["temperature.gpu"]) + rng.choice((-1, 0, 0, 1))
        row["temperature.gpu"] = str(min(max(temp, 55), 75))
        row["temperature.gpu.tlimit"] = str(85 - int(row["temperature.gpu"]))
        row["temperature.memory"] = str(
            min(max(int(row["temperature.memory"]) + rng.choice((-1, 0, 1)), 50), 70)
        )
        row["power.draw"] = "%.2f W" % rng.uniform(600.0, 700.0)
        row["clocks.current.sm"] = "%d MHz" % rng.choice(SM_CLOCKS)


def measure_lines(ticks, seed):
    rng = random.Random(seed)
    fake = install_fake_nvml(pynvml, CAPTURE, gpu_count=GPUS, apps_path=APPS)
    # The collector's clock moves 1 s per tick, so slow values (every 10 s) and processes
    # (every 5 s) are re-read at their real pace while the bench runs at full speed.
    now = [0.0]
    nvml.time = types.SimpleNamespace(monotonic=lambda: now[0])
    collector = nvml.NvmlCollector(Problems(), 1.0)
    encoder = Encoder()
    keyframes, steady, full, cpu = [], [], [], []
    for tick in range(ticks):
        now[0] = float(tick)
        move(fake, rng)
        started = time.process_time()
        records = collector.sample()
        cpu.append(time.process_time() - started)
        sample = {"time": 1760000000.0 + tick, "gpus": records}
        line = encoder.encode(sample)
        (keyframes if line.get("key") else steady).append(compact(line))
        full.append(compact(sample))
    return keyframes, steady, full, cpu


def measure_csv_reference(rounds):
    """Per-tick work of the nvidia-smi fallback for 8 GPUs: parse a batch of 8 CSV rows."""
    table = parse_query_csv(CAPTURE.read_text(encoding="utf-8"))
    chosen = choose_fields(SAMPLE_QUERY, set(table.fields))
    names = [name for name in chosen.values() if name]
    row = table.rows[0]
    batch = "".join(", ".join(row[n] for n in names) + "\n" for _ in range(GPUS))
    started = time.process_time()
    for _ in range(rounds):
        for parsed in parse_query_csv(batch, names).rows:
            gpu_record(parsed, chosen, {})
    return (time.process_time() - started) / rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=60, help="samples, 1 s apart")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    keyframes, steady, full, cpu = measure_lines(args.ticks, args.seed)
    print(
        "%d GPUs (fake NVML on the H100 capture), %d ticks, Python %s"
        % (GPUS, args.ticks, sys.version.split()[0])
    )
    print("full JSON of the GPU records (reference): median %d bytes" % statistics.median(full))
    print(
        "keyframe line: %d bytes (%.2fx the full JSON)"
        % (statistics.median(keyframes), statistics.median(keyframes) / statistics.median(full))
    )
    print(
        "steady-state line: median %d bytes, max %d (%.3fx the full JSON; target <= 1024)"
        % (
            statistics.median(steady),
            max(steady),
            statistics.median(steady) / statistics.median(full),
        )
    )
    per_sample = statistics.mean(cpu)
    reference = measure_csv_reference(200)
    print(
        "NvmlCollector.sample(): %.3f ms CPU per 8-GPU sample, mean (%.3f%% of a core at 1 Hz)"
        % (per_sample * 1e3, per_sample * 100)
    )
    print(
        "nvidia-smi fallback, parsing one 8-row CSV batch (reference): %.3f ms CPU; ratio %.2fx"
        % (reference * 1e3, per_sample / reference)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
