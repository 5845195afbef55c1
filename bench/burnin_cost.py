"""Burn-in costs: the node-side recorder per sample, and the report for a big run.

1. Recorder: the burn-in driver's per-second work on the node (the probe's sample of this
   machine's real /proc plus 8 fake-NVML GPUs from the real H100 capture, encoded, appended to
   samples.jsonl, status.json rewritten atomically, gpu_burn's output read and parsed) against
   the reference measured in the same run: the probe's own per-sample work (the same sample
   encoded and written to a stream). Target: the recorder's extra work <= the probe's cost.
2. Report: the samples of 8 nodes x 8 GPUs x 2 h and 24 h at 1 Hz folded as the session
   folds them on arrival, then verdict, Markdown, JSON and the HTML page with its SVG charts
   (the gpu_burn capture as the stressor output), in CPU seconds (a shared machine's wall
   clock says more about its neighbours). Each size runs in a child process for its own peak
   RSS. References measured in the same run: the pre-fold way of holding every sample of the
   2 h run (its memory) and serialising them once to JSON (its CPU). Target <= 5 s.

    python bench/burnin_cost.py [--ticks 120] [--nodes 8] [--hours 2 24]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from dltui.burnin import fold, report, spool, verdict  # noqa: E402
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample  # noqa: E402
from dltui.node.burnin import run as driver_run  # noqa: E402
from dltui.node.probe import collect  # noqa: E402
from dltui.node.probe.problems import Problems  # noqa: E402
from dltui.node.wire import Encoder  # noqa: E402
from tests.fakes.fake_nvml import install_fake_nvml  # noqa: E402

CAPTURE = (
    ROOT / "tests" / "fixtures" / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
)
GPU_BURN = ROOT / "tests" / "fixtures" / "burn-in" / "superbench_gpu_burn.log"


def recorder(ticks: int) -> None:
    install_fake_nvml(pynvml, CAPTURE, gpu_count=8)
    collector = collect.Collector(1.0, Problems())
    collector.facts()
    gpu_log = GPU_BURN.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        (run_dir / "plan.json").write_text(json.dumps({"run_id": "bench", "duration_s": ticks}))
        run = driver_run.Run(str(run_dir))
        probe_enc, rec_enc = Encoder(), Encoder()
        stream = io.StringIO()
        samples = open(run_dir / "samples.jsonl", "a")
        log = open(run_dir / "gpu_burn.log", "w")
        sample_cpu, probe_cpu, rec_cpu = [], [], []
        step = len(gpu_log) // ticks
        for tick in range(ticks):
            t0 = time.process_time()
            sample = collector.sample()
            t1 = time.process_time()
            stream.write(json.dumps(probe_enc.encode(sample), separators=(",", ":")) + "\n")
            t2 = time.process_time()
            log.write(gpu_log[tick * step : (tick + 1) * step])  # gpu_burn writing meanwhile
            log.flush()
            t3 = time.process_time()
            samples.write(json.dumps(rec_enc.encode(sample), separators=(",", ":")) + "\n")
            samples.flush()
            run.load.poll(stop_asked=False)
            run._write_status("running")
            t4 = time.process_time()
            sample_cpu.append(t1 - t0)
            probe_cpu.append(t2 - t0)
            rec_cpu.append(t4 - t3)
        samples.close()
        log.close()
    collector.close()
    probe = statistics.median(probe_cpu) * 1e3
    rec = statistics.median(rec_cpu) * 1e3
    print(f"recorder ({ticks} ticks, 8 fake-NVML GPUs + this machine's /proc):")
    print(
        f"  probe's own sample+encode+write (reference): {probe:.3f} ms CPU per sample "
        f"(of which collecting {statistics.median(sample_cpu) * 1e3:.3f} ms)"
    )
    print(
        f"  burn-in recorder's extra work (encode, append, status.json, gpu_burn parse): "
        f"{rec:.3f} ms CPU per sample"
    )
    print(f"  ratio recorder/probe: {rec / probe:.2f} (target <= 1)")


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _gpus(t: int) -> list[GpuSample]:
    return [
        GpuSample(
            index=i,
            temperature_c=60.0 + (t + i) % 7,
            memory_temperature_c=65.0,
            temperature_margin_c=20.0,
            power_w=390.0 + (t % 5) + (t * 7 + i) % 100 / 100,
            power_limit_w=400.0,
            sm_clock_mhz=1410.0 - (t % 3) * 15,
            sm_clock_max_mhz=1410.0,
            utilization_percent=100.0,
            pcie_gen=4,
            pcie_max_gen=4,
            pcie_width=16,
            pcie_max_width=16,
            pcie_replay_count=0,
            ecc_corrected_volatile=0,
            ecc_uncorrected_volatile=0,
            clock_event_hw_thermal_us=0,
            clock_event_sw_thermal_us=0,
            clock_event_hw_power_brake_us=0,
        )
        for i in range(8)
    ]


POOL = 997  # distinct readings per node, reused: the samples' own memory is not what is measured


def report_cost(nodes: int, hours: float) -> dict[str, float]:
    """One run as the session handles it: each sample folded as it arrives (then dropped),
    then verdict and report from the folds. Returns its figures (run in a child process:
    peak RSS is per process)."""
    seconds = int(hours * 3600)
    gc.collect()
    rss0 = _maxrss_mib()
    t0 = 1_700_000_000.0
    log = GPU_BURN.read_text()
    pool = [_gpus(t) for t in range(POOL)]
    phases = {
        "preflight": [t0, t0 + 10],
        "load": [t0 + 10, t0 + seconds - 10],
        "post": [t0 + seconds - 10, t0 + seconds],
    }
    runs = []
    fold_cpu = 0.0
    for n in range(nodes):
        f = fold.RunFold(verdict.DEFAULTS["ramp_s"])
        c0 = time.process_time()
        for t in range(seconds):
            f.add(Sample(time=t0 + t, gpus=pool[t % POOL]))
            if t % 5 == 4:  # the follow's status lines
                f.on_status({"time": t0 + t, "phases": phases})
        f.close(phases)
        fold_cpu += time.process_time() - c0
        result = {"phases": phases, "gpu": {"tool": "gpu-burn", "exit_code": 0}}
        facts = NodeFacts(hostname=f"gpu{n:02d}", gpus=[GpuFacts(index=i) for i in range(8)])
        runs.append(
            verdict.NodeRun(f"gpu{n:02d}", {"expected_gpus": 8}, result, [], [], facts,
                            {"gpu_burn.log": log}, fold=f)
        )
    # the spool: every sample appended to the local file as it arrives (600 of them, scaled)
    with tempfile.TemporaryDirectory() as tmp:
        sp = spool.Spool(Path(tmp) / "n.jsonl", "n")
        c0 = time.process_time()
        for t in range(600):
            sp.sample(Sample(time=t0 + t, gpus=pool[t % POOL]))
        sp.close()
        spool_ms = (time.process_time() - c0) / 600 * 1e3
    rss_data = _maxrss_mib()
    s0 = time.process_time()
    verdicts = [verdict.judge(r) for r in runs]
    s1 = time.process_time()
    doc = report.document("bench", runs, verdicts, verdict.DEFAULTS)
    report.markdown(doc)
    report.to_json(doc)
    page = report.page(doc, runs)
    s2 = time.process_time()
    return {
        "fold_us_per_gpu_sample": fold_cpu / (nodes * seconds * 8) * 1e6,
        "spool_ms_per_sample": spool_ms,
        "verdict_s": s1 - s0,
        "report_s": s2 - s1,
        "html_mb": len(page) / 1e6,
        "kept": sum(r.fold.kept_points() for r in runs if r.fold is not None),
        "rss_fold_mib": rss_data - rss0,
        "peak_rss_mib": _maxrss_mib(),
    }


def held_samples_rss(nodes: int, hours: float) -> dict[str, float]:
    """The reference: the pre-fold way, every sample of the run held (distinct objects, as
    decoded from the wire), and the CPU of serialising a tenth of them to JSON once."""
    seconds = int(hours * 3600)
    gc.collect()
    rss0 = _maxrss_mib()
    held = [[Sample(time=float(t), gpus=_gpus(t)) for t in range(seconds)] for _ in range(nodes)]
    rss = _maxrss_mib() - rss0
    r0 = time.process_time()
    json.dumps([s.to_dict() for s in held[0][: seconds // 10]])
    ref_s = (time.process_time() - r0) * 10 * nodes
    return {"rss_held_mib": rss, "peak_rss_mib": _maxrss_mib(), "json_s": ref_s}


def _child(what: str, nodes: int, hours: float) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, "--nodes", str(nodes), "--hours", str(hours)],
        check=True, capture_output=True, text=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def report_costs(nodes: int, hours_list: list[float]) -> None:
    ref = _child("held", nodes, 2.0)
    print(
        f"reference (pre-fold: {nodes} nodes x 8 GPUs x 2 h of samples held): "
        f"{ref['rss_held_mib']:.0f} MiB (peak RSS {ref['peak_rss_mib']:.0f} MiB); "
        f"serialising them to JSON once ~{ref['json_s']:.2f} s CPU"
    )
    for hours in hours_list:
        r = _child("fold", nodes, hours)
        total = r["verdict_s"] + r["report_s"]
        print(
            f"report ({nodes} nodes x 8 GPUs x {hours:g} h at 1 Hz = "
            f"{nodes * 8 * int(hours * 3600):,} GPU samples, folded as they came):"
        )
        print(
            f"  fold {r['fold_us_per_gpu_sample']:.1f} us CPU per GPU sample; spool write "
            f"{r['spool_ms_per_sample']:.3f} ms per 8-GPU sample"
        )
        print(
            f"  CPU at the end: verdict {r['verdict_s']:.2f} s + report {r['report_s']:.2f} s "
            f"= {total:.2f} s (target <= 5 s); ratio to the JSON reference "
            f"{total / ref['json_s']:.3f}; HTML {r['html_mb']:.1f} MB"
        )
        print(
            f"  memory: folds {r['rss_fold_mib']:.0f} MiB ({r['kept']:,} kept points and bins), "
            f"peak RSS {r['peak_rss_mib']:.0f} MiB; ratio of the fold to the held 2 h "
            f"samples {r['rss_fold_mib'] / max(ref['rss_held_mib'], 1):.3f}"
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ticks", type=int, default=120)
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--hours", type=float, nargs="+", default=[2.0, 24.0])
    p.add_argument("--child", choices=("fold", "held"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child == "fold":
        print(json.dumps(report_cost(a.nodes, a.hours[0])))
        return
    if a.child == "held":
        print(json.dumps(held_samples_rss(a.nodes, a.hours[0])))
        return
    recorder(a.ticks)
    report_costs(a.nodes, a.hours)


if __name__ == "__main__":
    main()
