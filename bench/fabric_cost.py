"""CPU the fabric collectors add to a probe sample, against the rest of the probe's sample.

An HGX-like node: eight one-port HCAs (the prometheus/procfs sysfs capture's mlx5_0, copied as
mlx5_0..7, unpacked on tmpfs: sysfs is an in-memory file system too) and eight GPUs on the test
suite's fake NVML (the real pynvml serving the real H100 capture) with the twelve NVLinks of
Azure's real ``nvidia-smi nvlink -s`` capture. Both collectors run at their real cadence on a
simulated clock one second per sample (HCA states every second, their counters every 10 s;
NVLink states and errors every 10 s), so the figure is the average per-sample cost.

Reference, measured in the same run: the rest of the probe's sample on the same node, the host
collector and the NVML GPU collector, plus the wire encoding of the whole sample. Target: the
fabric at most 0.10x of it. With the fake NVML no driver time is counted on either side (it
would weigh on the GPU reference more than on NVLink's few calls per second). The fake's own
Python (building pynvml structures from the capture: a real node spends that time in the
driver instead) is clocked around each call into it and printed; the second ratio takes it
out of both sides, so each side is charged for its own code only. The nvidia-smi
fallback spawns ``nvidia-smi nvlink -s`` and ``-e`` in a thread every 30 s: no nvidia-smi here
to time, and it never runs in the sample loop.

    python bench/fabric_cost.py [--rounds 7] [--per-round 300] [--no-fake-clock]

Prints figures only; nothing is asserted.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from dltui.node.probe import nvlink as nvlink_module  # noqa: E402
from dltui.node.probe import nvml  # noqa: E402
from dltui.node.probe.host import HostCollector  # noqa: E402
from dltui.node.probe.infiniband import InfinibandCollector  # noqa: E402
from dltui.node.probe.nvlink import open_nvlink  # noqa: E402
from dltui.node.probe.problems import Problems  # noqa: E402
from dltui.node.wire import Encoder  # noqa: E402
from tests import sysfs_tree  # noqa: E402
from tests.fakes.fake_nvml import install_fake_nvml  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
CAPTURE = FIXTURES / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
NVLINK_S = FIXTURES / "nvidia-smi-nvlink" / "azurehpc_a100-sxm4-80gb_nvlink-s.txt"
NVLINK_E = FIXTURES / "nvidia-smi-nvlink" / "derived_a100-sxm4-80gb_nvlink-e.txt"
TMPFS = "/dev/shm"


class Clock:
    """One simulated second per sample for every collector's refresh periods."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating measurement rounds")
    parser.add_argument("--per-round", type=int, default=300, help="samples per round")
    parser.add_argument(
        "--no-fake-clock", action="store_true",
        help="leave the fake NVML unclocked (no ~1 us a call on either side; no second ratio)",
    )
    args = parser.parse_args()
    clock = Clock()
    for module in (nvml, nvlink_module):
        module.time = types.SimpleNamespace(monotonic=clock.monotonic)
    fake = install_fake_nvml(pynvml, CAPTURE, gpu_count=8)
    fake.nvlink_from_smi(NVLINK_S.read_text(), NVLINK_E.read_text())
    inside_fake = FakeTime(pynvml, () if args.no_fake_clock else fake.functions())
    problems = Problems()
    with tempfile.TemporaryDirectory(dir=TMPFS if Path(TMPFS).is_dir() else None) as base:
        root = sysfs_tree.eight_hcas(Path(base))
        host = HostCollector(problems)
        gpus = nvml.NvmlCollector(problems, 1.0)
        hcas = InfinibandCollector(str(root), clock=clock.monotonic)
        links = open_nvlink(gpus, "nvml", problems)
        try:
            probe_s, fabric_s, fabric_bytes, fake_s = measure(
                args, clock, host, gpus, hcas, links, inside_fake
            )
        finally:
            hcas.close()
    ratios = [f / p for f, p in zip(fabric_s, probe_s, strict=True)]
    own_probe = [p - fp for p, (fp, _) in zip(probe_s, fake_s, strict=True)]
    own_fabric = [f - ff for f, (_, ff) in zip(fabric_s, fake_s, strict=True)]
    own_ratios = [f / p for f, p in zip(own_fabric, own_probe, strict=True)]
    print("node: 8 HCA ports (sysfs on tmpfs), 8 GPUs x 12 NVLinks (fake NVML), Python %s"
          % sys.version.split()[0])
    print("probe without the fabric (host + NVML GPUs + wire encoding): %.3f ms CPU per sample "
          "(median of %d rounds of %d; rounds %.3f..%.3f)"
          % (statistics.median(probe_s) * 1e3, args.rounds, args.per_round,
             min(probe_s) * 1e3, max(probe_s) * 1e3))
    print("fabric (HCA ports + NVLink + their wire records): %.3f ms CPU per sample "
          "(rounds %.3f..%.3f)"
          % (statistics.median(fabric_s) * 1e3, min(fabric_s) * 1e3, max(fabric_s) * 1e3))
    print("ratio fabric / rest of the probe: %.3fx median (rounds %.3f..%.3f; target <= 0.10x)"
          % (statistics.median(ratios), min(ratios), max(ratios)))
    if not args.no_fake_clock:
        print("inside the fake NVML (its Python, a driver's time on a real node): %.3f ms of the rest, "
              "%.3f ms of the fabric per sample (medians)"
              % (statistics.median(f for f, _ in fake_s) * 1e3, statistics.median(f for _, f in fake_s) * 1e3))
        print("ratio without the fake's own time on either side: %.3fx median (rounds %.3f..%.3f; "
              "rest %.3f ms, fabric %.3f ms)"
              % (statistics.median(own_ratios), min(own_ratios), max(own_ratios),
                 statistics.median(own_probe) * 1e3, statistics.median(own_fabric) * 1e3))
    print("wire: the fabric's records add %d bytes to a line (median; its counters change every "
          "10 s), %d at most" % (statistics.median(fabric_bytes), max(fabric_bytes)))
    return 0


class FakeTime:
    """CPU time spent inside the fake NVML's functions: each one installed on ``pynvml`` is
    wrapped with the process CPU clock the rounds are measured on (the outermost call only; a
    wall clock would count the waits of a loaded machine). The wrapper's own cost (two clock
    reads, ~1 us) stays on the caller's side, about what a real binding's ctypes call costs."""

    def __init__(self, nv, functions):
        self.spent_ns = 0
        self.depth = 0
        for name in functions:
            setattr(nv, name, self.wrap(getattr(nv, name)))

    def wrap(self, fn):
        clock = time.process_time_ns

        def timed(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            self.depth = 1
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent_ns += clock() - start
                self.depth = 0

        timed.__name__ = getattr(fn, "__name__", "fake")
        return timed


def measure(args, clock, host, gpus, hcas, links, inside_fake):
    """Alternating rounds of the probe's sample without the fabric and of the fabric's part
    alone (its collectors and the encoding of its records, the wire's per-record work), so
    that load from anything else weighs on both alike. Each stream has its own encoder."""
    plain, fabric = Encoder(), Encoder()
    probe_s, fabric_s, fabric_bytes, fake_s = [], [], [], []
    for _ in range(20):  # warm up: first readings, keyframes
        base(clock, host, gpus, plain)
        fabric_part(clock, hcas, links, fabric)
    for _ in range(args.rounds):
        start, fake0 = time.process_time(), inside_fake.spent_ns
        for _ in range(args.per_round):
            base(clock, host, gpus, plain)
        probe_s.append((time.process_time() - start) / args.per_round)
        start, fake1 = time.process_time(), inside_fake.spent_ns
        for _ in range(args.per_round):
            fabric_bytes.append(fabric_part(clock, hcas, links, fabric))
        fabric_s.append((time.process_time() - start) / args.per_round)
        per = 1e-9 / args.per_round
        fake_s.append(((fake1 - fake0) * per, (inside_fake.spent_ns - fake1) * per))
    return probe_s, fabric_s, fabric_bytes, fake_s


def base(clock, host, gpus, encoder):
    clock.now += 1.0
    record = {"time": round(clock.now, 3)}
    record.update(host.sample())
    record["gpus"] = gpus.sample()
    return len(json.dumps(encoder.encode(record), separators=(",", ":")))


def fabric_part(clock, hcas, links, encoder):
    """The fabric's records, encoded; returns their bytes on the wire (the line's envelope
    is the base line's)."""
    clock.now += 1.0
    record = {"time": round(clock.now, 3), "ib_ports": hcas.sample(), "nvlinks": links.sample()}
    records = encoder.encode(record)["r"]
    return len(json.dumps(records, separators=(",", ":"))) - 2 if records else 0


if __name__ == "__main__":
    sys.exit(main())
