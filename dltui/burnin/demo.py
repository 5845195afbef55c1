"""A simulated burn-in, seeded and fixed, for pictures without a node: the burn-in screen's
snapshot test and the report screenshot (``scripts/burnin_report_demo.py``) draw from it.

Two nodes of 8 GPUs ramp to full load over two minutes; on ``gpu02`` GPU 2 runs hot (its
core passes 85 °C and its SM clock drops after five minutes), which the verdict fails with
evidence. The stressor output is the real gpu_burn capture (8x A100, all OK) and the
nccl-tests output the real all_reduce_perf capture, both from tests/fixtures/burn-in.
Pure: no I/O but reading those captures and writing the report files.
"""

from __future__ import annotations

import math
from pathlib import Path

from dltui.core.models import GpuSample, NodeFacts, Sample
from dltui.transport.demo import h100

from . import report, verdict

T0 = 1_767_258_000.0
NODES = {"gpu01": None, "gpu02": 2}  # node -> its hot GPU
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "burn-in"


def gpus_at(t: int, hot_gpu: int | None) -> list[GpuSample]:
    """8 GPUs ``t`` seconds into the run."""
    ramp = min(1.0, t / 120)
    gpus = []
    for i in range(8):
        temp = 40 + 30 * ramp + 2 * math.sin(t / 40 + i) + (18 * ramp if i == hot_gpu else 0)
        gpus.append(
            h100.sample(
                i,
                utilization_percent=100.0 * ramp,
                temperature_c=round(temp, 1),
                memory_temperature_c=round(temp + 5, 1),
                temperature_margin_c=round(max(0.0, 88 - temp), 1),
                power_w=round(100 + 580 * ramp, 1),
                sm_clock_mhz=1980.0 if i != hot_gpu or t < 300 else 1600.0,
            )
        )
    return gpus


def runs(load_s: int = 7200, preflight_s: int = 10, post_s: int = 10) -> list[verdict.NodeRun]:
    """The two nodes' finished runs (1 Hz samples through preflight, load and post)."""
    end = preflight_s + load_s + post_s
    phases = {
        "preflight": [T0, T0 + preflight_s],
        "load": [T0 + preflight_s, T0 + preflight_s + load_s],
        "post": [T0 + preflight_s + load_s, T0 + end],
    }
    outputs = {
        "gpu_burn.log": (FIXTURES / "superbench_gpu_burn.log").read_text(),
        "nccl.log": (FIXTURES / "superbench_nccl_allreduce.log").read_text(),
        "bmc_sel.log": "",
    }
    out = []
    for node, hot in NODES.items():
        result = {
            "phases": phases,
            "gpu": {"tool": "gpu-burn", "exit_code": 0, "output": "gpu_burn.log"},
            "nccl": {"tool": "nccl-tests", "exit_code": 0, "output": "nccl.log"},
            "bmc": {"tool": "ipmitool", "before": 12, "after": 12, "new": 0,
                    "output": "bmc_sel.log", "exit_code": 0},
            "smoke": {"tool": None,
                      "reason": 'no loader smoke test configured ([burnin] smoke = "CMD")'},
        }
        facts = NodeFacts(
            hostname=node,
            gpus=[
                h100.facts(i, serial=f"16523{i:02d}0{node[-1]}",
                           bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0")
                for i in range(8)
            ],
        )
        samples = [Sample(time=T0 + t, gpus=gpus_at(t, hot)) for t in range(end)]
        plan = {"run_id": "demo", "duration_s": load_s, "expected_gpus": 8, "gpu": "auto"}
        out.append(verdict.NodeRun(node, plan, result, samples, [], facts, dict(outputs)))
    return out


def write_report(folder: Path, load_s: int = 7200) -> dict[str, Path]:
    """The demo run's report.json, report.md and report.html in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    nodes = runs(load_s)
    cfg = verdict.settings(None)
    verdicts = [verdict.judge(r, cfg) for r in nodes]
    doc = report.document("demo", nodes, verdicts, cfg)
    doc["generated"] = T0 + load_s + 30  # fixed: the files change only when the report does
    paths = {k: folder / f"report.{k}" for k in ("json", "md", "html")}
    paths["json"].write_text(report.to_json(doc))
    paths["md"].write_text(report.markdown(doc))
    paths["html"].write_text(report.page(doc, nodes))
    return paths
