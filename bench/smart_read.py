"""Drive health and the stack: what a SMART read and the stack check cost the node.

Measured in this process and its children, against the probe's own sample (``Collector``'s
host and GPU sample, this machine) as the reference:

- **a SMART read** (``SmartReader.read``), split in what it is made of, because this machine
  has no drive smartctl can read: the real ``smartctl --scan-open -j`` (one per read), the
  real ``smartctl -j -a -n standby DEV`` on this machine's disk (the binary's start, device
  open and JSON out: one per drive; a drive that answers adds its SMART log's read), and the
  probe's parsing of real captures (tests/fixtures/smartctl: NVMe, SATA, SAS), per drive.
  Then a whole read of N drives = scan + N × (smartctl + parse), and its share per 1 s sample
  at the 5-minute period. Also a whole ``SmartReader.read`` of 8 drives through the fake
  smartctl (a Python script: its start dominates, an upper bound on the child's cost);
- **the stack check** (``read_stack``), once per connection, on this machine's files and on a
  5 MB dpkg status file; and how often the sampling loop calls it (it must be never).

Prints figures only; nothing is asserted.

    python bench/smart_read.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.node.probe import collect, smart, stack  # noqa: E402
from dltui.node.probe.collect import Collector  # noqa: E402

CAPTURES = ROOT / "tests" / "fixtures" / "smartctl"
REAL = (
    "nvme_samsung-mzql23t8hcls_healthy.json",
    "nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json",
    "sata_seagate-st3500418as_reallocated-304.json",
    "sata_hitachi-hds721050dle630_failed-usb.json",
    "sas_seagate-st373453lc_grown-defects.json",
)


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def measure(fn, rounds: int) -> tuple[float, float]:
    """(median CPU ms, median wall ms) of ``fn`` over ``rounds``."""
    cpus, walls = [], []
    for _ in range(rounds):
        c0, w0 = cpu(), time.perf_counter()
        fn()
        cpus.append(cpu() - c0)
        walls.append(time.perf_counter() - w0)
    return 1000 * statistics.median(cpus), 1000 * statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds

    collector = Collector(1.0)
    collector.smart.close()  # the reference is the sample alone
    collector.facts()
    collector.sample()
    sample_cpu, sample_wall = measure(collector.sample, rounds)
    print(f"reference: one probe sample (this machine) {sample_cpu:.2f} ms CPU, {sample_wall:.2f} ms wall")

    real = smart.find_tool("smartctl")
    if real is None:
        print("no smartctl here: the per-call figures need smartmontools 7+ (apt-get install smartmontools)")
        scan_cpu = call_cpu = 0.0
    else:
        scan_cpu, scan_wall = measure(
            lambda: subprocess.run([real, "--scan-open", "-j"], capture_output=True), rounds
        )
        disk = "/dev/vda" if Path("/dev/vda").exists() else "/dev/sda"
        call_cpu, call_wall = measure(
            lambda: subprocess.run([real, "-j", "-a", "-n", "standby", disk], capture_output=True), rounds
        )
        print(f"real smartctl --scan-open -j: {scan_cpu:.1f} ms CPU, {scan_wall:.1f} ms wall")
        print(f"real smartctl -j -a -n standby {disk}: {call_cpu:.1f} ms CPU, {call_wall:.1f} ms wall (per drive)")
    texts = [(CAPTURES / name).read_text() for name in REAL]
    parse_cpu, _ = measure(
        lambda: [smart.drive_record("/dev/x", json.loads(t), 0.0) for t in texts], rounds
    )
    parse_cpu /= len(texts)
    print(f"parsing a real capture into a drive record: {parse_cpu:.3f} ms CPU per drive")
    for drives in (2, 8, 24):
        total = scan_cpu + drives * (call_cpu + parse_cpu)
        per_sample = total / smart.SMART_EVERY_S
        print(
            f"SMART read of {drives} drives ≈ {total:.0f} ms CPU, once per {smart.SMART_EVERY_S:.0f} s: "
            f"{per_sample:.3f} ms per 1 s sample = {per_sample / sample_cpu:.3f}x the sample's own CPU"
        )

    folder = Path(tempfile.mkdtemp(prefix="dltui-bench-smart-"))
    try:
        shutil.copy(ROOT / "tests" / "fakes" / "smartctl", folder / "smartctl")
        table = {f"/dev/nvme{i}": [str(CAPTURES / REAL[i % len(REAL)])] for i in range(8)}
        (folder / "smartctl.drives.json").write_text(json.dumps(table))
        reader = smart.SmartReader(root=True, find=lambda n: str(folder / "smartctl"))
        fake_cpu, fake_wall = measure(reader.read, max(3, rounds // 4))
        print(
            f"SmartReader.read of 8 drives through the fake smartctl (Python start per call: an "
            f"upper bound): {fake_cpu:.0f} ms CPU, {fake_wall:.0f} ms wall, in its own thread"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    stack_cpu, stack_wall = measure(stack.read_stack, rounds)
    print(f"stack check on this machine's files: {stack_cpu:.2f} ms CPU, {stack_wall:.2f} ms wall, once per connection")
    big = b"".join(
        b"Package: lib%05d-dev\nStatus: install ok installed\nVersion: 1.0-1\nDescription: a library\n\n" % i
        for i in range(60000)
    )
    big += (ROOT / "tests" / "fixtures" / "stack" / "dpkg-status_ubuntu-driver-535_held").read_bytes()
    scan_cpu, _ = measure(lambda: stack.dpkg_driver_packages(big), rounds)
    print(f"its dpkg scan of a {len(big) / 1e6:.1f} MB status file: {scan_cpu:.1f} ms CPU")
    calls = [0]
    original = collect.read_stack

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    collect.read_stack = counted
    try:
        for _ in range(100):
            collector.sample()
        during_samples = calls[0]
        collector.facts()
    finally:
        collect.read_stack = original
    print(f"stack checks during 100 samples: {during_samples}; during one facts() (a connection): {calls[0] - during_samples}")
    collector.close()


if __name__ == "__main__":
    main()
