"""The burn-in's per-GPU checks: the GPU stressor's own verdict (gpu_burn, dcgmi diag, the
torch matmul), and the telemetry under load (XIDs, ECC, clock events, thermal, power, PCIe),
each GPU also against its peers on the node."""

from __future__ import annotations

import statistics
from typing import Any

from dltui.config import BurninSection
from dltui.core.vendors import vendor
from dltui.node.burnin import parse, rvs

from .fold import GpuFold, RunFold
from .items import FAIL, NOT_RUN, PASS, WARN, Item, NodeRun, NodeVerdict

# --- the GPU stressor ----------------------------------------------------------------------

_STRESSOR_NEXT = "rerun on this GPU alone; if it fails again, RMA the GPU"


# Which GPU stressor works on which vendor's GPUs: gpu_burn and dcgmi are NVIDIA's own (CUDA,
# NVML); rvs (the ROCm Validation Suite's gst) is AMD's own; the torch matmul runs on AMD too
# (a ROCm build of torch answers to torch.cuda), not on Gaudi (torch reaches it as "hpu").
# Gaudi's own qualification tool (hl_qual) documents its report only as pictures, so dltui
# cannot judge it: GPU load is not supported for Gaudi, and says so, never passes.
STRESSORS_BY_VENDOR = {
    "nvidia": {"gpu-burn", "dcgm", "torch"},
    "amd": {"rvs", "torch"},
    "intel": set(),
}
_VENDOR_STRESSOR = {
    "amd": "install the ROCm Validation Suite (package rocm-validation-suite) so the burn-in "
    "runs its gst stressor (--gpu rvs), or torch built for ROCm",
    "intel": "GPU load is not supported for Intel Gaudi in dltui: run Intel Gaudi's own "
    "qualification (hl_qual) by hand",
}


def gpu_vendor(run: NodeRun, index: int) -> str:
    """The GPU's vendor as the probe reported it (facts, else a sample); NVIDIA's unsaid."""
    for g in run.facts.gpus if run.facts is not None else ():
        if g.index == index and g.vendor:
            return g.vendor
    fold = run.folded().gpus.get(index)
    sample = fold.first if fold is not None else None
    return (sample.vendor if sample is not None else None) or "nvidia"


def unsupported_stressor(run: NodeRun, index: int) -> Item | None:
    """A clear NOT_RUN for a GPU the node's stressor cannot load: another vendor's GPU under
    gpu_burn or dcgmi (or no stressor at all for it), never a silent pass."""
    key = gpu_vendor(run, index)
    if key == "nvidia":
        return None
    tool = (run.result.get("gpu") or {}).get("tool")
    if tool in STRESSORS_BY_VENDOR.get(key, set()):
        return None
    who = vendor(key).label
    if not STRESSORS_BY_VENDOR.get(key):
        what = f"GPU load is not supported for {who}: no stressor dltui can run and judge"
    elif tool:
        what = f"{tool} is not supported for {who} GPUs"
    else:
        what = f"no GPU stressor here supports {who} GPUs"
    return Item("stressor", NOT_RUN, what, _VENDOR_STRESSOR.get(key, ""), index)


def gpu_stressor(run: NodeRun, indexes: list[int]) -> dict[int, Item]:
    tool = (run.result.get("gpu") or {}).get("tool")
    if tool == "gpu-burn":
        return _gpu_burn_items(run, indexes)
    if tool == "dcgm":
        return _dcgm_items(run, indexes)
    if tool == "torch":
        return _matmul_items(run, indexes)
    if tool == "rvs":
        return _rvs_items(run, indexes)
    return {}


def _gpu_burn_items(run: NodeRun, indexes: list[int]) -> dict[int, Item]:
    out: dict[int, Item] = {}
    burn = parse.parse_gpu_burn(run.outputs.get("gpu_burn.log", ""))
    problems = burn.problems(len(indexes) or None)
    for index in indexes:
        why = problems.get(index, []) + problems.get(None, [])
        gpu = burn.gpus.get(index)
        if why:
            out[index] = Item("stressor", FAIL, "; ".join(why), _STRESSOR_NEXT, index)
        else:
            done = f"{gpu.procd} iterations" if gpu else "no progress"
            out[index] = Item("stressor", PASS, f"gpu_burn OK, {done}, 0 errors", "", index)
    return out


def _dcgm_items(run: NodeRun, indexes: list[int]) -> dict[int, Item]:
    """Per GPU, DCGM's own words for what failed there (its message and error id)."""
    out: dict[int, Item] = {}
    code = (run.result.get("gpu") or {}).get("exit_code")
    diag = parse.parse_dcgm(run.outputs.get("dcgm.json", ""), code)
    failed = diag.failed()
    for index in indexes:
        said = diag.evidence(index)
        if diag.verdict == "unknown" or diag.error:
            out[index] = Item("stressor", NOT_RUN, diag.error or "dcgmi diag gave no results",
                              "check the nvidia-dcgm service (dcgmi discovery -l)", index)
        elif diag.verdict == "fail" and (said or not failed):
            out[index] = Item("stressor", FAIL, f"dcgmi diag {said or f'exited {code}'}",
                              _STRESSOR_NEXT, index)
        elif said:
            out[index] = Item("stressor", WARN, f"dcgmi diag {said}", "rerun dcgmi diag", index)
        else:
            out[index] = Item("stressor", PASS, "dcgmi diag: all tests passed", "", index)
    return out


def _matmul_items(run: NodeRun, indexes: list[int]) -> dict[int, Item]:
    out: dict[int, Item] = {}
    checks = parse.parse_matmul(run.outputs.get("matmul.jsonl", "").splitlines())
    for index in indexes:
        mm = checks.get(index)
        if mm is None or mm["result"] is None:
            out[index] = Item("stressor", FAIL, "matmul check gave no result for this GPU",
                              "look at matmul.jsonl and run.log on the node", index)
        elif mm["result"] != "OK" or mm["errors"]:
            why = f"matmul: {mm['result']}, {mm['errors']} mismatches"
            out[index] = Item("stressor", FAIL, why,
                              _STRESSOR_NEXT, index)
        elif mm["iters"] <= 0:
            out[index] = Item("stressor", FAIL, "matmul: no iterations done",
                              "look at matmul.jsonl on the node", index)
        else:
            out[index] = Item("stressor", PASS, f"matmul OK, {mm['iters']} iterations", "", index)
    return out


def _rvs_items(run: NodeRun, indexes: list[int]) -> dict[int, Item]:
    """Per GPU, rvs gst's own verdict ("met: TRUE/FALSE" against its GFLOPS target); a GPU it
    gave no final line for (killed, crashed, cut short) fails, as gpu_burn's missing one."""
    out: dict[int, Item] = {}
    code = (run.result.get("gpu") or {}).get("exit_code")
    res = rvs.parse_rvs(run.outputs.get("rvs.log", ""))
    gpus = res.by_index()
    failed_actions = res.failed_actions()
    for index in indexes:
        g = gpus.get(index)
        if g is None or g.met is None:
            said = f", exit code {code}" if code else ""
            out[index] = Item("stressor", FAIL, f"rvs gst gave no result for this GPU{said}",
                              "look at rvs.log and run.log on the node", index)
        elif not g.met:
            why = "; ".join(g.problems) or (
                f"{g.final:.0f} GFLOPS, target {g.target:.0f} not met" if g.final is not None
                and g.target is not None else "target not met")
            out[index] = Item("stressor", FAIL, f"rvs gst: {why}", _STRESSOR_NEXT, index)
        elif failed_actions:
            out[index] = Item("stressor", FAIL,
                              f"rvs summary: {', '.join(failed_actions)} FAIL",
                              "look at rvs.log on the node", index)
        else:
            target = f"target {g.target:.0f}" if g.target else "no GFLOPS target set"
            out[index] = Item("stressor", PASS,
                              f"rvs gst met its target: {g.final or 0:.0f} GFLOPS ({target})",
                              "", index)
    return out


# --- per-GPU telemetry ---------------------------------------------------------------------


def preflight(index: int, gf: GpuFold | None, run: NodeRun) -> list[Item]:
    """The state before load: what would make the run meaningless or is already wrong."""
    items = []
    step = "fix it (nvidia-smi -pm 1 / -e 1, reboot), then rerun"
    if facts_gpu(run, index, "persistence_mode") is False:
        items.append(Item("preflight", WARN, "persistence mode off", step, index))
    if facts_gpu(run, index, "ecc_enabled") is False:
        items.append(Item("preflight", WARN, "ECC disabled", step, index))
    first = gf.first if gf is not None else None
    if first is not None and (first.remapped_rows_pending or first.remapped_rows_failure):
        items.append(
            Item(
                "preflight",
                FAIL,
                "a pending or failed row remap before the run",
                "reset the GPU (pending) or RMA it (failed)",
                index,
            )
        )
    load = run.phase("load")
    before = [
        e for e in run.events if e.kind == "xid" and e.gpu == index and load and e.time < load[0]
    ]
    if before:
        items.append(
            Item(
                "preflight",
                WARN,
                f"XID {before[-1].data.get('xid')} this boot before the run",
                "find what caused it (the node's kernel log)",
                index,
            )
        )
    return items


def gpu_checks(index: int, gf: GpuFold, run: NodeRun, cfg: BurninSection) -> list[Item]:
    items = [
        _xid(index, run, cfg),
        ecc_item(index, gf),
        _clock_events(index, gf),
        thermal_item(index, gf, run, cfg),
        pcie_item(index, gf, cfg),
    ]
    power = _power(index, gf, run, cfg)
    if power is not None:
        items.append(power)
    return items


def _xid(index: int, run: NodeRun, cfg: BurninSection) -> Item:
    load = run.phase("load")
    start = load[0] if load else float("-inf")
    stop = load[1] if load else float("inf")
    bad = []
    for e in run.events:
        if e.kind != "xid" or e.gpu != index or e.time < start:
            continue
        if e.data.get("xid") == 45 and stop <= e.time <= stop + cfg.xid_after_stop_s:
            continue  # the stressor stopping its own workers
        bad.append(e)
    if bad:
        codes = ", ".join(str(e.data.get("xid")) for e in bad)
        return Item(
            "xid",
            FAIL,
            f"XID {codes} during the run: {bad[0].message}",
            "look up the XID; reseat the GPU, then RMA if it comes back",
            index,
        )
    return Item("xid", PASS, "no XID during the run", "", index)


def ecc_item(index: int, gf: GpuFold) -> Item:
    unc = gf.delta("ecc_uncorrected_volatile") or gf.delta("ecc_uncorrected_aggregate")
    cor = gf.delta("ecc_corrected_volatile") or gf.delta("ecc_corrected_aggregate")
    first, last = gf.first, gf.last
    assert first is not None and last is not None  # a GPU under load has samples
    new_remap = (last.remapped_rows_pending and not first.remapped_rows_pending) or (
        last.remapped_rows_failure and not first.remapped_rows_failure
    )
    if unc or new_remap:
        what = f"uncorrectable ECC +{unc}" if unc else "a new pending or failed row remap"
        return Item("ecc", FAIL, what, "RMA the GPU (memory errors under load)", index)
    if cor:
        return Item(
            "ecc", WARN, f"correctable ECC +{cor}", "rerun; RMA if the count keeps rising", index
        )
    if all(
        getattr(last, n) is None for n in ("ecc_uncorrected_volatile", "ecc_uncorrected_aggregate")
    ):
        return Item("ecc", NOT_RUN, "this GPU reports no ECC counters", "", index)
    return Item("ecc", PASS, "no ECC errors, no new remaps", "", index)


_CLOCK_COUNTERS = (
    ("clock_event_hw_thermal_us", "HW thermal slowdown", "fix airflow (fans, blanking, inlet)"),
    ("clock_event_sw_thermal_us", "SW thermal slowdown", "fix airflow (fans, blanking, inlet)"),
    ("clock_event_hw_power_brake_us", "HW power brake", "check the PSUs and power cabling"),
)


def _clock_events(index: int, gf: GpuFold) -> Item:
    seen = False
    for name, label, step in _CLOCK_COUNTERS:
        d = gf.delta(name)
        seen = seen or d is not None
        if d:
            return Item(
                "throttle", FAIL, f"{label} for {d / 1e6:.1f} s during the run", step, index
            )
    if not seen:
        return Item("throttle", NOT_RUN, "this GPU reports no clock-event counters", "", index)
    return Item("throttle", PASS, "no HW/SW thermal slowdown or power brake", "", index)


def thermal_item(index: int, gf: GpuFold, run: NodeRun, cfg: BurninSection,
             sensor: str = "core") -> Item:
    step = "fix airflow, or lower the power limit or clocks, then rerun"
    hot = gf.temperature_max
    if hot is not None and hot > cfg.temperature_max_c:
        return Item(
            "thermal", FAIL, f"{sensor} {hot:g} °C > {cfg.temperature_max_c:g} °C", step, index
        )
    if gf.margin_min is not None and gf.margin_min <= cfg.margin_min_c:
        return Item("thermal", FAIL, f"margin down to {gf.margin_min:g} °C", step, index)
    hbm = gf.hbm_max
    hbm_max = facts_gpu(run, index, "memory_temperature_max_c") or cfg.hbm_max_c
    if hbm is not None and hbm > hbm_max - cfg.hbm_headroom_c:
        return Item("thermal", FAIL, f"HBM {hbm:g} °C, max {hbm_max:g} °C", step, index)
    if hot is None:
        return Item("thermal", NOT_RUN, "no temperature reported", "", index)
    return Item(
        "thermal",
        PASS,
        f"{sensor} max {hot:g} °C" + (f", HBM max {hbm:g} °C" if hbm is not None else ""),
        "",
        index,
    )


def facts_gpu(run: NodeRun, index: int, name: str) -> Any:
    for g in run.facts.gpus if run.facts else ():
        if g.index == index:
            return getattr(g, name)
    return None


def _power(index: int, gf: GpuFold, run: NodeRun, cfg: BurninSection) -> Item | None:
    if (run.result.get("gpu") or {}).get("tool") != "gpu-burn":
        return None  # the sustained-power check is defined under gpu_burn only
    late = gf.after_ramp()
    if not late.power.n or late.power_limit is None:
        return Item("power", NOT_RUN, "no power or power limit reported", "", index)
    median = late.power.median()
    limit = late.power_limit
    if median < cfg.power_fraction_min * limit:
        return Item(
            "power",
            FAIL,
            f"median {median:.0f} W under load, limit {limit:.0f} W",
            "check the PSUs and power cabling, then the power limit",
            index,
        )
    return Item("power", PASS, f"median {median:.0f} W of {limit:.0f} W", "", index)


def pcie_item(index: int, gf: GpuFold, cfg: BurninSection) -> Item:
    last = gf.load_last
    assert last is not None  # judged only with samples under load
    if last.pcie_gen is not None and last.pcie_max_gen and last.pcie_gen < last.pcie_max_gen:
        return Item(
            "pcie",
            FAIL,
            f"link at gen {last.pcie_gen}, max {last.pcie_max_gen} under load",
            "reseat the GPU or its riser; check the slot's BIOS setting",
            index,
        )
    if (
        last.pcie_width is not None
        and last.pcie_max_width
        and last.pcie_width < last.pcie_max_width
    ):
        return Item(
            "pcie",
            FAIL,
            f"link x{last.pcie_width}, max x{last.pcie_max_width} under load",
            "reseat the GPU or its riser/cable",
            index,
        )
    replays = gf.delta("pcie_replay_count")
    if replays and replays > cfg.pcie_replay_max:
        return Item(
            "pcie",
            FAIL,
            f"{replays} PCIe replays during the run",
            "reseat the GPU or its riser/cable",
            index,
        )
    if replays:
        return Item(
            "pcie",
            WARN,
            f"{replays} PCIe replays during the run (ideally 0)",
            "watch it; reseat if it grows",
            index,
        )
    if last.pcie_gen is None:
        return Item("pcie", NOT_RUN, "no PCIe link state reported", "", index)
    return Item("pcie", PASS, f"gen {last.pcie_gen} x{last.pcie_width}", "", index)


def consistency(
    verdict: NodeVerdict, fold: RunFold | None, run: NodeRun, cfg: BurninSection
) -> None:
    """Siblings compared: Gflop/s (from gpu_burn after the ramp) and SM clock spread."""
    rates: dict[int, float] = {}
    tool = (run.result.get("gpu") or {}).get("tool")
    if tool == "gpu-burn":
        res = parse.parse_gpu_burn(run.outputs.get("gpu_burn.log", ""))
        for index, g in res.gpus.items():
            tail = [x for x in g.gflops[len(g.gflops) // 4 :] if x > 0]  # past the ramp
            if tail:
                rates[index] = statistics.median(tail)
    elif tool == "rvs":
        for index, rg in rvs.parse_rvs(run.outputs.get("rvs.log", "")).by_index().items():
            tail = [x for x in rg.gflops[len(rg.gflops) // 4 :] if x > 0]  # past the ramp
            if tail:
                rates[index] = statistics.median(tail)
    median = statistics.median(rates.values()) if len(rates) >= 2 else None
    for gv in verdict.gpus:
        if median and gv.index in rates and rates[gv.index] < (1 - cfg.gflops_spread) * median:
            gv.items.append(
                Item(
                    "consistency",
                    FAIL,
                    f"{rates[gv.index]:.0f} Gflop/s vs node median {median:.0f}",
                    "compare its clocks and temperature; reseat, then RMA if it stays slow",
                    gv.index,
                )
            )
        gf = fold.gpus.get(gv.index) if fold is not None else None
        clocks = gf.after_ramp().clock if gf is not None and gf.load_n else None
        if clocks is not None and clocks.n >= 20:
            p5 = clocks.kth(clocks.n // 20)
            mid = clocks.median()
            if p5 < cfg.sm_clock_p5_fraction * mid:
                gv.items.append(
                    Item(
                        "consistency",
                        FAIL,
                        f"SM clock 5th percentile {p5:.0f} MHz vs median {mid:.0f}",
                        "look at its throttle reasons; fix airflow or power",
                        gv.index,
                    )
                )
