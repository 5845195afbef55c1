"""CPU per GPU sample of the probe's AMD sources against its NVIDIA sources, same GPU count,
measured in the same run on the same machine (issue 31: AMD at most 1.2x NVIDIA's).

Every source runs against the project's fakes, the tools' and the kernel's stand-ins the tests
use, and the CPU counted is everything the sampling costs: the probe's own and that of every
process it starts (the fake tools are Python scripts, as heavy to start as the real ones are
to run, so the CLI sources' figures are rough):

- nvml: the NVML collector on the fake NVML (pynvml with its functions replaced, in process)
- nvidia-smi: the fallback, one long-lived fake ``nvidia-smi -lms`` loop
- amd-sysfs: the AMD collector reading an amdgpu sysfs tree (tests/sysfs_tree.py), no process
  started; a node without amd-smi lists processes from this machine's real /proc (DRM fdinfo,
  every 15 s in a thread: its share is counted)
- amd-sysfs+proc: the same with amd-smi installed: ``amd-smi process --json`` every 15 s
- amd-smi: the fake ``amd-smi metric --json`` every 2 s (+ ``process`` every 5 s)
- rocm-smi: the fake ``rocm-smi -a --json`` every 5 s
- amdsmi: the AMD SMI library source: the real ``amdsmi`` binding (ctypes) over the fake
  libamd_smi.so (tests/fakes/fake_amdsmi.py), in process as NVML's; processes from DRM fdinfo.
  amdsmi+proc: the same with amd-smi installed (``amd-smi process`` every 15 s), as
  amd-sysfs+proc. Also printed: what the binding costs once per connection on a node (compiling its shipped
  source: the loader has no .pyc) and its import + init here.

What a real library would change: the fakes answer in Python, so both in-process rows
(nvml, amdsmi) measure the bindings' own Python (argument checks, structures, dicts), which is
most of what a real call costs in this process. A real NVML call is an ioctl (tens of µs); a
real libamd_smi call reads the same kernel files itself (hwmon, gpu_metrics) inside the call,
so on a real node the library row would rise to the amd-sysfs row or above it (not measured
here: no AMD GPU), and the kernel files stay the cheaper AMD source; the library's worth is
what the files lack (it runs where sysfs is hidden, e.g. in some containers). Once per
connection the node compiles the shipped binding (~400 KB of source: the figure printed) and
the library's init enumerates every GPU.

    python bench/amd_probe_cost.py [--gpus 8] [--seconds 12] [--interval 0.5]

Prints figures and ratios only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _pytest.monkeypatch import MonkeyPatch  # noqa: E402

from dltui.node.probe.amd import open_amd  # noqa: E402
from dltui.node.probe.gpu import which  # noqa: E402
from dltui.node.probe.problems import Problems  # noqa: E402
from tests import sysfs_tree  # noqa: E402

FAKES = REPO / "tests" / "fakes"
H100 = REPO / "tests" / "fixtures" / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"


def cpu_now() -> float:
    """This process's CPU (every thread) and its reaped children's, in µs resolution."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def run(make, seconds: float, interval: float) -> tuple[float, int]:
    """-> (CPU seconds per sample, samples): open, facts, then a sample per interval for
    ``seconds`` of wall time, then close (the loops' CPU is counted once they are reaped)."""
    collector = make()
    collector.facts()
    collector.sample()  # the first sample waits for a loop's first rows: not a steady one
    start, samples = cpu_now(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tick = time.monotonic()
        collector.sample()
        samples += 1
        time.sleep(max(0.0, interval - (time.monotonic() - tick)))
    collector.close()
    return (cpu_now() - start) / samples, samples


def back_to_back(make, samples: int = 200) -> float:
    """CPU seconds per sample taken back to back (no sleeping, no thread's share): the
    in-process sources' own per-sample cost, with less of this loaded machine's noise."""
    collector = make()
    collector.facts()
    collector.sample()
    before = time.process_time()
    for _ in range(samples):
        collector.sample()
    spent = time.process_time() - before
    collector.close()
    return spent / samples


def shipped_compile_s() -> float:
    """CPU to compile the amdsmi modules as shipped (a node compiles them from source)."""
    from dltui.node import bundle

    mods = {n: s for n, s in bundle.sources().items() if n.split(".")[0] == "amdsmi"}
    before = time.process_time()
    for name, src in mods.items():
        compile(bundle.without_comment_lines(src), "<%s>" % name, "exec")
    return time.process_time() - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=12.0, help="wall time per source")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="amd-probe-cost-"))
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in ("amd-smi", "rocm-smi", "nvidia-smi"):
        os.symlink(FAKES / name, bin_dir / name)
    os.environ["PATH"] = "%s:/usr/bin:/bin" % bin_dir
    os.environ["FAKE_SMI_CAPTURE"] = str(H100)
    os.environ["FAKE_SMI_GPU_COUNT"] = str(args.gpus)
    tree = sysfs_tree.amd_cards(tmp / "sys", count=args.gpus)
    problems = Problems()

    def nvml():
        from dltui.node.probe.nvml import NvmlCollector
        from tests.fakes.fake_nvml import install_fake_nvml

        install_fake_nvml(MonkeyPatch(), H100, gpu_count=args.gpus)
        return NvmlCollector(problems, args.interval)

    def smi():
        from dltui.node.probe.smi import SmiCollector

        return SmiCollector(problems, args.interval, str(bin_dir / "nvidia-smi"))

    def amd(source: str):
        def make():
            hide = {"amd-sysfs": ("amd-smi", "rocm-smi"), "amd-sysfs+proc": (), "amd-smi": (),
                    "rocm-smi": ("amd-smi",)}[source]
            sys_dir = str(tree) if source.startswith("amd-sysfs") else str(tmp / "no-sys")
            return open_amd(problems, args.interval, sys_dir, lambda n: None if n in hide else which(n))

        return make

    print("host: %d CPUs, Python %s, load average %.2f; %d GPUs, a sample every %g s, %g s per source"
          % (os.cpu_count(), sys.version.split()[0], os.getloadavg()[0], args.gpus, args.interval,
             args.seconds))
    opened: dict[str, float] = {}

    def library(processes_by_amd_smi: bool):
        def make():
            # last: from here on ROCM_PATH holds a fake libamd_smi.so, chosen before the files
            from tests.fakes import fake_amdsmi

            fake_amdsmi.install(MonkeyPatch(), fake_amdsmi.FakeLibAmdSmi(gpu_count=args.gpus), tmp / "rocm")
            before = cpu_now()
            collector = open_amd(problems, args.interval, str(tree),
                                 lambda n: which(n) if processes_by_amd_smi and n == "amd-smi" else None)
            opened["amdsmi"] = cpu_now() - before
            assert collector is not None and collector.source == "amdsmi"
            return collector

        return make

    results = {}
    for name, make in (("nvml", nvml), ("nvidia-smi", smi), ("amd-sysfs", amd("amd-sysfs")),
                       ("amd-sysfs+proc", amd("amd-sysfs+proc")), ("amd-smi", amd("amd-smi")),
                       ("rocm-smi", amd("rocm-smi")), ("amdsmi", library(False)),
                       ("amdsmi+proc", library(True))):
        per_sample, samples = run(make, args.seconds, args.interval)
        results[name] = per_sample
        print("  %-14s %7.3f ms CPU per sample (%d samples)" % (name, per_sample * 1e3, samples))
    print("once per connection, amdsmi: %.0f ms CPU to import + init here (.pyc cached), %.0f ms to "
          "compile the shipped binding as a node does" % (opened["amdsmi"] * 1e3, shipped_compile_s() * 1e3))
    tight = {name: back_to_back(make) for name, make in (("nvml", nvml), ("amd-sysfs", amd("amd-sysfs+proc")),
                                                        ("amdsmi", library(True)))}
    print("back to back, in process (200 samples each): " + ", ".join(
        "%s %.3f ms" % (name, t * 1e3) for name, t in tight.items()))
    print("  amdsmi / nvml = %.2fx, amd-sysfs / nvml = %.2fx"
          % (tight["amdsmi"] / tight["nvml"], tight["amd-sysfs"] / tight["nvml"]))
    print("ratios (target: AMD's cheapest source at most 1.2x the NVIDIA path's):")
    for amd_name in ("amdsmi", "amdsmi+proc", "amd-sysfs", "amd-sysfs+proc", "amd-smi", "rocm-smi"):
        for nv in ("nvml", "nvidia-smi"):
            print("  %-14s / %-10s = %6.2fx" % (amd_name, nv, results[amd_name] / results[nv]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
