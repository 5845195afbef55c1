"""Burn-in costs: the node-side recorder per sample, and the report for a big run.

1. Recorder: the burn-in driver's per-second work on the node (the probe's sample of this
   machine's real /proc plus 8 fake-NVML GPUs from the real H100 capture, encoded, appended to
   samples.jsonl, status.json rewritten atomically, gpu_burn's output read and parsed) against
   the reference measured in the same run: the probe's own per-sample work (the same sample
   encoded and written to a stream). Target: the recorder's extra work <= the probe's cost.
2. Report: verdict, Markdown, JSON and the HTML page with its SVG charts for 8 nodes x 8 GPUs x
   2 h of 1 Hz samples (the gpu_burn capture as the stressor output), in CPU seconds (a
   shared machine's wall clock says more about its neighbours), against the reference
   of serialising the same samples once to JSON. Target <= 5 s. Prints the memory it needs
   (peak RSS growth while the samples exist and the report is built).

    python bench/burnin_cost.py [--ticks 120] [--nodes 8] [--hours 2]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from dltui.burnin import driver, report, verdict  # noqa: E402
from dltui.core.models import GpuFacts, GpuSample, NodeFacts, Sample  # noqa: E402
from dltui.probe import collect  # noqa: E402
from dltui.probe.problems import Problems  # noqa: E402
from dltui.probe.wire import Encoder  # noqa: E402
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
        run = driver.Run(str(run_dir))
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
            run._poll_progress()
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


def report_cost(nodes: int, hours: float) -> None:
    seconds = int(hours * 3600)
    gc.collect()
    rss0 = _maxrss_mib()
    t0 = 1_700_000_000.0
    runs = []
    log = GPU_BURN.read_text()
    for n in range(nodes):
        samples = []
        for t in range(seconds):
            gpus = [
                GpuSample(
                    index=i,
                    temperature_c=60.0 + (t + i) % 7,
                    memory_temperature_c=65.0,
                    temperature_margin_c=20.0,
                    power_w=390.0 + (t % 5),
                    power_limit_w=400.0,
                    sm_clock_mhz=1410.0,
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
            samples.append(Sample(time=t0 + t, gpus=gpus))
        result = {
            "phases": {
                "preflight": [t0, t0 + 10],
                "load": [t0 + 10, t0 + seconds - 10],
                "post": [t0 + seconds - 10, t0 + seconds],
            },
            "gpu": {"tool": "gpu-burn", "exit_code": 0},
        }
        facts = NodeFacts(hostname=f"gpu{n:02d}", gpus=[GpuFacts(index=i) for i in range(8)])
        runs.append(
            verdict.NodeRun(
                f"gpu{n:02d}",
                {"expected_gpus": 8},
                result,
                samples,
                [],
                facts,
                {"gpu_burn.log": log},
            )
        )
    rss_data = _maxrss_mib()
    r0 = time.process_time()
    ref = sum(len(json.dumps([s.to_dict() for s in run.samples[: seconds // 10]])) for run in runs)
    ref_s = (time.process_time() - r0) * 10  # a tenth, scaled: the full dump needs gigabytes
    s0 = time.process_time()
    verdicts = [verdict.judge(r) for r in runs]
    s1 = time.process_time()
    doc = report.document("bench", runs, verdicts, verdict.DEFAULTS)
    md = report.markdown(doc)
    js = report.to_json(doc)
    page = report.page(doc, runs)
    s2 = time.process_time()
    rss_end = _maxrss_mib()
    total = s2 - s0
    print(
        f"report ({nodes} nodes x 8 GPUs x {hours:g} h at 1 Hz = "
        f"{nodes * 8 * seconds:,} GPU samples):"
    )
    print(
        f"  CPU: verdict {s1 - s0:.2f} s + report {s2 - s1:.2f} s = {total:.2f} s (target <= 5 s); "
        f"HTML {len(page) / 1e6:.1f} MB, Markdown {len(md) / 1e3:.0f} KB, "
        f"JSON {len(js) / 1e3:.0f} KB"
    )
    print(
        f"  reference: serialising the samples to JSON once ~{ref_s:.2f} s "
        f"({ref * 10 / 1e9:.1f} GB); "
        f"ratio report/reference {total / ref_s:.2f}"
    )
    print(
        f"  memory: samples held {rss_data - rss0:.0f} MiB, "
        f"report on top {rss_end - rss_data:.0f} MiB "
        f"(peak RSS {rss_end:.0f} MiB)"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ticks", type=int, default=120)
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--hours", type=float, default=2.0)
    a = p.parse_args()
    recorder(a.ticks)
    report_cost(a.nodes, a.hours)


if __name__ == "__main__":
    main()
