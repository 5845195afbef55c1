"""Attribution's cost beside the probe's own, 8 GPUs × 16 processes (128 real processes).

The probe (``Collector``, host and 8 GPUs from the fake ``nvidia-smi`` replaying a real H100
capture) takes its samples; 128 real processes (``sleep``) are its GPU processes, 16 per GPU.
Measured in the same run, as this process's CPU time (threads included):

- the probe's per-sample CPU without attribution (the reference);
- ``Attributor.mark`` per sample once every process is known: as the GPU sources hand the
  process lists (the same list until their 5 s refresh: the steady state), and with new
  process dicts every sample (a dict lookup and update per process, no file read); and on
  the first sample (owner and ``/proc/PID/cgroup`` of all 128, read once each);
- the operator side's lookups (``AttributionLookups``): commands per minute while the GPUs'
  jobs and containers stay the same (a counting runner; 0 per sample is the target).

Target: steady-state attribution ≤ 5 % of the probe's per-sample CPU.

    python bench/attribution_cost.py [--samples 200]

Prints figures only; nothing is asserted.
"""

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.core.models import GpuProcess, GpuSample, Sample  # noqa: E402
from dltui.core.state import FleetState  # noqa: E402
from dltui.node.probe.attribution import Attributor  # noqa: E402
from dltui.node.probe.problems import Problems  # noqa: E402
from dltui.transport.attribution import AttributionLookups  # noqa: E402
from dltui.transport.command import CommandResult  # noqa: E402

GPUS, PER_GPU = 8, 16
REFRESH_EVERY = 5  # samples between the GPU source's process refreshes (nvml.py / smi.py)
CAPTURE = ROOT / "tests" / "fixtures" / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"


def probe_with_fake_smi(tmp: Path):
    """A Collector whose GPUs are the fake nvidia-smi's 8 H100s, attribution left out."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    shutil.copy(ROOT / "tests" / "fakes" / "nvidia-smi", bin_dir / "nvidia-smi")
    os.environ.update(PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_SMI_CAPTURE=str(CAPTURE),
                      FAKE_SMI_GPU_COUNT=str(GPUS))
    from dltui.node.probe.collect import Collector

    collector = Collector(interval_s=1.0)
    # the reference: the probe without it (the probe makes its Attributor at the first GPU
    # process; made here, with a mark that does nothing)
    collector.attribution = Attributor(collector.problems, proc=collector._proc)
    collector.attribution.mark = lambda gpus: None
    return collector


def cpu(fn, n):
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


class CountingRunner:
    """Answers every lookup at once (the node's side is not this bench's); counts them."""

    def __init__(self):
        self.calls = 0

    async def run_command(self, node, argv, timeout_s):
        self.calls += 1
        job = argv[-1]
        out = f"JobId={job} JobName=train UserId=alice(1001) JobState=RUNNING RunTime=01:00:00 TimeLimit=10:00:00"
        return CommandResult(tuple(argv), 0, out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()

    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(GPUS * PER_GPU)]
    tmp = Path(tempfile.mkdtemp(prefix="dltui-bench-attr-"))
    try:
        collector = probe_with_fake_smi(tmp)
        time.sleep(1.5)  # the fake's -lms loop has lines to read
        collector.sample()
        probe_s = cpu(collector.sample, args.samples)
        collector.close()

        pids = [p.pid for p in sleepers]

        def gpus():
            return [{"index": i, "processes": [{"pid": pid, "name": "python3", "gpu_memory_mib": 1.0}
                                               for pid in pids[i * PER_GPU:(i + 1) * PER_GPU]]}
                    for i in range(GPUS)]

        samples = [gpus() for _ in range(args.samples + 1)]  # built outside the timing
        att = Attributor(Problems(), scontrol="")
        start = time.process_time()
        att.mark(samples[0])
        first_s = time.process_time() - start
        it = iter(samples[1:])
        worst_s = cpu(lambda: att.mark(next(it)), args.samples)  # new dicts every sample
        # as the probe's GPU sources hand them: the same process lists until their refresh
        # (PROCESS_REFRESH_S = 5 s, a sample a second)
        refreshed = [samples[(k // REFRESH_EVERY) % len(samples)] for k in range(args.samples)]
        it = iter(refreshed)
        steady_s = cpu(lambda: att.mark(next(it)), args.samples)
        reads = att.cgroup_reads

        # the operator side: one node, its 8 GPUs' processes in 8 jobs, scanned every second
        state = FleetState(["n1"])
        state.node("n1").sample = Sample(time=0.0, gpus=[
            GpuSample(i, processes=[GpuProcess(pid, slurm_job=1000 + i, user="alice", uid=1001)
                                    for pid in pids[i * PER_GPU:(i + 1) * PER_GPU]])
            for i in range(GPUS)])
        clock = [0.0]
        runner = CountingRunner()
        lookups = AttributionLookups(state, runner, ["n1"], clock=lambda: clock[0])

        async def ten_minutes():
            for _ in range(600):
                await lookups.scan(state)
                clock[0] += 1.0

        asyncio.run(ten_minutes())
    finally:
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{GPUS} GPUs × {PER_GPU} processes, {args.samples} samples, CPU time of this process")
    print(f"  probe per sample (reference, fake nvidia-smi): {probe_s * 1e6:8.0f} µs")
    print(f"  attribution per sample, steady state:          {steady_s * 1e6:8.1f} µs"
          f"  = {100 * steady_s / probe_s:.2f} % of the probe's (target ≤ 5 %)")
    print(f"  … if every sample brought new process dicts:   {worst_s * 1e6:8.1f} µs"
          f"  = {100 * worst_s / probe_s:.2f} %")
    print(f"  attribution, first sample (128 new PIDs):      {first_s * 1e6:8.0f} µs"
          f"  = {first_s / probe_s:.2f} samples' worth, once per process")
    print(f"  cgroup reads over {args.samples + 1} samples: {reads} (one per process)")
    print(f"  lookups over 600 one-second scans (8 jobs): {runner.calls} = {runner.calls / 10:.0f} per minute,"
          f" {runner.calls / 600:.3f} per scan; 8 jobs × 1/min is {8:d} per minute")


if __name__ == "__main__":
    main()
