"""The verdict of a burn-in, per GPU and per node, from the defaults of the burn-in notes §4.

Pure: a ``NodeRun`` (the plan, the node's samples and events, the stressors' raw output and
exit codes) in, a ``NodeVerdict`` out. Every item that is not a pass carries its evidence and
the next step in words. A check whose tool did not run is "not run", never "pass".

Thresholds are defaults; ``[burnin]`` in the config file overrides any of ``DEFAULTS``
(declared in dltui/config.py).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dltui.config import BURNIN_NODE_CHECKS, BurninSection
from dltui.config_schema import as_dict, build
from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.text import clean
from dltui.node.burnin import parse

from .fold import GpuFold, RunFold

PASS, WARN, FAIL, NOT_RUN = "pass", "warn", "fail", "not run"
_RANK = {PASS: 0, WARN: 1, NOT_RUN: 2, FAIL: 3}

# The thresholds are declared (type, range, default, words) in dltui/config.py, BurninSection.
DEFAULTS: dict[str, Any] = as_dict(BurninSection())
# The node-wide checks a verdict can hold (what "optional" may name).
NODE_CHECKS = BURNIN_NODE_CHECKS


def settings(overrides: BurninSection | Mapping[str, Any] | None) -> dict[str, Any]:
    """The verdict's thresholds: the config's checked ``[burnin]`` table, or overrides of the
    defaults checked here the same way (an unknown key, a wrong type: ``ConfigError``)."""
    if not isinstance(overrides, BurninSection):
        overrides = build(BurninSection, dict(overrides or {}), "[burnin]")
    return as_dict(overrides)


@dataclass
class Item:
    check: str  # short name: "stressor", "thermal", "ecc", ...
    status: str
    evidence: str
    next_step: str = ""
    gpu: int | None = None

    def __post_init__(self) -> None:
        # Evidence quotes the node's tools (a stressor's error line, dcgmi's words): cleaned
        # here, so the screen, the CLI, the Markdown and the HTML report all show the safe form.
        self.evidence = clean(self.evidence)
        self.next_step = clean(self.next_step)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "evidence": self.evidence,
            "next_step": self.next_step,
            "gpu": self.gpu,
        }


@dataclass
class GpuVerdict:
    index: int
    items: list[Item] = field(default_factory=list)

    @property
    def status(self) -> str:
        return worst(i.status for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "status": self.status,
            "items": [i.to_dict() for i in self.items],
        }


@dataclass
class NodeVerdict:
    node: str
    gpus: list[GpuVerdict] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)  # node-wide checks
    optional: frozenset[str] = frozenset()  # checks whose "not run" does not hold back a pass

    @property
    def status(self) -> str:
        counted = [i.status for i in self.items if i not in self.not_run_optional()]
        return worst(counted + [g.status for g in self.gpus])

    def not_run_optional(self) -> list[Item]:
        """The optional checks that did not run: listed with the verdict, never a pass."""
        return [i for i in self.items if i.status == NOT_RUN and i.check in self.optional]

    def headline(self) -> str:
        """``PASS`` or ``PASS (not run: smoke, bmc)``: what the status leaves out, said."""
        skipped = ", ".join(i.check for i in self.not_run_optional())
        return self.status.upper() + (f" (not run: {skipped})" if skipped else "")

    def problems(self) -> list[Item]:
        """Every item that did not pass, the worst first (failures before "not run")."""
        every = self.items + [i for g in self.gpus for i in g.items]
        return sorted((i for i in every if i.status != PASS), key=lambda i: -_RANK[i.status])

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "status": self.status,
            "headline": self.headline(),
            "exit_code": exit_code([self]),
            "optional": sorted(self.optional),
            "items": [i.to_dict() for i in self.items],
            "gpus": [g.to_dict() for g in self.gpus],
        }


def worst(statuses: Iterable[str]) -> str:
    return max(statuses, key=lambda s: _RANK[s], default=NOT_RUN)


def exit_code(verdicts: list[NodeVerdict]) -> int:
    """0 pass, 1 warnings, 2 a failure anywhere, 3 something could not run or be judged."""
    statuses = [v.status for v in verdicts]
    if not statuses:
        return 3
    if FAIL in statuses:
        return 2
    if NOT_RUN in statuses:
        return 3
    return 1 if WARN in statuses else 0


@dataclass
class NodeRun:
    """Everything the verdict reads about one node's run."""

    node: str
    plan: dict[str, Any]  # the driver's plan.json
    result: dict[str, Any]  # the driver's result.json (phases, tools, exit codes)
    samples: list[Sample] = field(default_factory=list)
    events: list[NodeEvent] = field(default_factory=list)
    facts: NodeFacts | None = None
    outputs: dict[str, str] = field(default_factory=dict)  # stressor output file -> text
    # The samples folded as they came (what a live session keeps instead of ``samples``).
    fold: RunFold | None = None
    _made: tuple[tuple[float, int], RunFold] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def folded(self, ramp_s: float = DEFAULTS["ramp_s"]) -> RunFold:
        """The run's fold: the live one, else one made once from ``samples``."""
        if self.fold is not None:
            return self.fold
        key = (ramp_s, len(self.samples))
        if self._made is None or self._made[0] != key:
            self._made = (key, RunFold.of(self.samples, self.result.get("phases"), ramp_s))
        return self._made[1]

    @property
    def sample_count(self) -> int:
        return self.fold.count if self.fold is not None else len(self.samples)

    def phase(self, name: str) -> tuple[float, float] | None:
        span = (self.result.get("phases") or {}).get(name)
        if not span or span[0] is None:
            return None
        return float(span[0]), float(span[1] if span[1] is not None else float("inf"))



def judge(run: NodeRun, cfg: dict[str, Any] | None = None) -> NodeVerdict:
    cfg = cfg or DEFAULTS
    verdict = NodeVerdict(run.node, optional=frozenset(cfg["optional"]))
    fold = run.folded(cfg["ramp_s"])
    expected = run.plan.get("expected_gpus")
    indexes = _gpu_indexes(run, fold)
    if expected is not None and len(indexes) != expected:
        verdict.items.append(
            Item(
                "gpu_count",
                FAIL,
                f"{len(indexes)} GPUs seen, {expected} expected",
                "reseat the missing GPU or its riser/cable, check the BIOS PCIe settings",
            )
        )
    elif indexes:
        verdict.items.append(Item("gpu_count", PASS, f"{len(indexes)} GPUs"))
    # Counters: baseline in preflight, deltas through post; the rest over the load only
    # (nothing of it without a load phase in the run's result).
    has_load = run.phase("load") is not None
    stress = _gpu_stressor(run, indexes)
    for index in indexes:
        gv = GpuVerdict(index)
        gf = fold.gpus.get(index)
        gv.items += _preflight(index, gf, run)
        why = (run.result.get("gpu") or {}).get("reason") or "no GPU stressor ran"
        gv.items.append(
            stress.get(index)
            or Item(
                "stressor", NOT_RUN, why, "install gpu_burn or DCGM (or torch) on the node", index
            )
        )
        if gf is None or not gf.load_n or not has_load:
            gv.items.append(
                Item(
                    "telemetry",
                    NOT_RUN,
                    "no samples of this GPU under load",
                    "check the probe on this node (nvidia-smi / NVML)",
                    index,
                )
            )
        else:
            gv.items += _gpu_checks(index, gf, run, cfg)
        verdict.gpus.append(gv)
    _consistency(verdict, fold if has_load else None, run, cfg)
    verdict.items += _host_checks(run, cfg)
    if run.result.get("stopped"):
        verdict.items.append(
            Item(
                "run",
                NOT_RUN,
                "the run was stopped before its end",
                "rerun the burn-in for its full duration",
            )
        )
    elif run.result.get("error"):
        verdict.items.append(Item("run", NOT_RUN, str(run.result["error"]), "see run.log"))
    return verdict


def _gpu_indexes(run: NodeRun, fold: RunFold) -> list[int]:
    seen: set[int] = set(fold.head_indexes)
    if run.facts is not None:
        seen.update(g.index for g in run.facts.gpus)
    return sorted(seen)


# --- the GPU stressor ----------------------------------------------------------------------

_STRESSOR_NEXT = "rerun on this GPU alone; if it fails again, RMA the GPU"


def _gpu_stressor(run: NodeRun, indexes: list[int]) -> dict[int, Item]:
    tool = (run.result.get("gpu") or {}).get("tool")
    if tool == "gpu-burn":
        return _gpu_burn_items(run, indexes)
    if tool == "dcgm":
        return _dcgm_items(run, indexes)
    if tool == "torch":
        return _matmul_items(run, indexes)
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
    out: dict[int, Item] = {}
    code = (run.result.get("gpu") or {}).get("exit_code")
    diag = parse.parse_dcgm(run.outputs.get("dcgm.json", ""), code)
    failed = diag.failed()
    node_wide = [t for t in failed if t["gpu"] is None]
    for index in indexes:
        mine = [t for t in failed if t["gpu"] == index] + node_wide
        what = ", ".join(f"{t['name']} {t['status']}" for t in mine)
        if diag.verdict == "unknown" or diag.error:
            out[index] = Item("stressor", NOT_RUN, diag.error or "dcgmi diag gave no results",
                              "check the nvidia-dcgm service (dcgmi discovery -l)", index)
        elif diag.verdict == "fail" and (mine or not failed):
            out[index] = Item("stressor", FAIL, f"dcgmi diag: {what or f'exit {code}'}",
                              _STRESSOR_NEXT, index)
        elif mine:
            out[index] = Item("stressor", WARN, f"dcgmi diag: {what}", "rerun dcgmi diag", index)
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


# --- per-GPU telemetry ---------------------------------------------------------------------


def _preflight(index: int, gf: GpuFold | None, run: NodeRun) -> list[Item]:
    """The state before load: what would make the run meaningless or is already wrong."""
    items = []
    step = "fix it (nvidia-smi -pm 1 / -e 1, reboot), then rerun"
    if _facts_gpu(run, index, "persistence_mode") is False:
        items.append(Item("preflight", WARN, "persistence mode off", step, index))
    if _facts_gpu(run, index, "ecc_enabled") is False:
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


def _gpu_checks(index: int, gf: GpuFold, run: NodeRun, cfg: dict[str, Any]) -> list[Item]:
    items = [
        _xid(index, run, cfg),
        _ecc(index, gf),
        _clock_events(index, gf),
        _thermal(index, gf, run, cfg),
        _pcie(index, gf, cfg),
    ]
    power = _power(index, gf, run, cfg)
    if power is not None:
        items.append(power)
    return items


def _xid(index: int, run: NodeRun, cfg: dict[str, Any]) -> Item:
    load = run.phase("load")
    start = load[0] if load else float("-inf")
    stop = load[1] if load else float("inf")
    bad = []
    for e in run.events:
        if e.kind != "xid" or e.gpu != index or e.time < start:
            continue
        if e.data.get("xid") == 45 and stop <= e.time <= stop + cfg["xid_after_stop_s"]:
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


def _ecc(index: int, gf: GpuFold) -> Item:
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


def _thermal(index: int, gf: GpuFold, run: NodeRun, cfg: dict[str, Any]) -> Item:
    step = "fix airflow, or lower the power limit or clocks, then rerun"
    hot = gf.temperature_max
    if hot is not None and hot > cfg["temperature_max_c"]:
        return Item(
            "thermal", FAIL, f"core {hot:g} °C > {cfg['temperature_max_c']:g} °C", step, index
        )
    if gf.margin_min is not None and gf.margin_min <= cfg["margin_min_c"]:
        return Item("thermal", FAIL, f"margin down to {gf.margin_min:g} °C", step, index)
    hbm = gf.hbm_max
    hbm_max = _facts_gpu(run, index, "memory_temperature_max_c") or cfg["hbm_max_c"]
    if hbm is not None and hbm > hbm_max - cfg["hbm_headroom_c"]:
        return Item("thermal", FAIL, f"HBM {hbm:g} °C, max {hbm_max:g} °C", step, index)
    if hot is None:
        return Item("thermal", NOT_RUN, "no temperature reported", "", index)
    return Item(
        "thermal",
        PASS,
        f"core max {hot:g} °C" + (f", HBM max {hbm:g} °C" if hbm is not None else ""),
        "",
        index,
    )


def _facts_gpu(run: NodeRun, index: int, name: str) -> Any:
    for g in run.facts.gpus if run.facts else ():
        if g.index == index:
            return getattr(g, name)
    return None


def _power(index: int, gf: GpuFold, run: NodeRun, cfg: dict[str, Any]) -> Item | None:
    if (run.result.get("gpu") or {}).get("tool") != "gpu-burn":
        return None  # the sustained-power check is defined under gpu_burn only
    late = gf.after_ramp()
    if not late.power.n or late.power_limit is None:
        return Item("power", NOT_RUN, "no power or power limit reported", "", index)
    median = late.power.median()
    limit = late.power_limit
    if median < cfg["power_fraction_min"] * limit:
        return Item(
            "power",
            FAIL,
            f"median {median:.0f} W under load, limit {limit:.0f} W",
            "check the PSUs and power cabling, then the power limit",
            index,
        )
    return Item("power", PASS, f"median {median:.0f} W of {limit:.0f} W", "", index)


def _pcie(index: int, gf: GpuFold, cfg: dict[str, Any]) -> Item:
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
    if replays and replays > cfg["pcie_replay_max"]:
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


def _consistency(
    verdict: NodeVerdict, fold: RunFold | None, run: NodeRun, cfg: dict[str, Any]
) -> None:
    """Siblings compared: Gflop/s (from gpu_burn after the ramp) and SM clock spread."""
    rates: dict[int, float] = {}
    if (run.result.get("gpu") or {}).get("tool") == "gpu-burn":
        res = parse.parse_gpu_burn(run.outputs.get("gpu_burn.log", ""))
        for index, g in res.gpus.items():
            tail = [x for x in g.gflops[len(g.gflops) // 4 :] if x > 0]  # past the ramp
            if tail:
                rates[index] = statistics.median(tail)
    median = statistics.median(rates.values()) if len(rates) >= 2 else None
    for gv in verdict.gpus:
        if median and gv.index in rates and rates[gv.index] < (1 - cfg["gflops_spread"]) * median:
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
            if p5 < cfg["sm_clock_p5_fraction"] * mid:
                gv.items.append(
                    Item(
                        "consistency",
                        FAIL,
                        f"SM clock 5th percentile {p5:.0f} MHz vs median {mid:.0f}",
                        "look at its throttle reasons; fix airflow or power",
                        gv.index,
                    )
                )


# --- host ----------------------------------------------------------------------------------


def _host_checks(run: NodeRun, cfg: dict[str, Any]) -> list[Item]:
    items: list[Item] = []
    plan, result = run.plan, run.result
    if plan.get("cpu") or plan.get("memory"):
        code = (result.get("cpu") or {}).get("exit_code")
        if (result.get("cpu") or {}).get("tool") is None:
            items.append(
                Item(
                    "cpu",
                    NOT_RUN,
                    (result.get("cpu") or {}).get("reason") or "stress-ng not run",
                    "install stress-ng",
                )
            )
        else:
            v = parse.stress_ng_verdict(code)
            status = {"pass": PASS, "fail": FAIL}.get(v["verdict"], NOT_RUN)
            items.append(
                Item(
                    "cpu",
                    status,
                    v["reason"],
                    "" if status == PASS else "check EDAC/MCE lines; test the DIMMs",
                )
            )
    if plan.get("disk"):
        disk = result.get("disk") or {}
        if disk.get("tool") is None:
            items.append(Item("disk", NOT_RUN, disk.get("reason") or "fio not run", "install fio"))
        else:
            res = parse.parse_fio(run.outputs.get("fio.json", ""))
            if res["error"]:
                items.append(Item("disk", FAIL, res["error"], "check the drive's SMART log"))
            else:
                j = res["jobs"]
                bw = sum(x["write_bytes_per_s"] or 0 for x in j) + sum(
                    x["read_bytes_per_s"] or 0 for x in j
                )
                items.append(Item("disk", PASS, f"fio clean (verify), {bw / 1e6:.0f} MB/s total"))
    if "kernel" in result:
        items += _kernel(run)
    from .drive_check import judge as _drives  # it builds on this module's Item

    for key, check in (("nccl", _nccl), ("bmc", _bmc), ("smoke", _smoke), ("drives", _drives)):
        if key in result:  # judged by drivers that run them; older runs never had them
            items.append(check(run, cfg))
    if plan.get("net"):
        net = result.get("net") or {}
        if net.get("tool") is None:
            items.append(
                Item("net", NOT_RUN, net.get("reason") or "iperf3 not run", "install iperf3")
            )
        else:
            items.append(_iperf(run, cfg))
    return items


_MACHINE_CHECK = re.compile(r"\bEDAC\b|\bmce:|Machine check|Hardware Error", re.IGNORECASE)
_PCIE_AER = re.compile(r"\bAER\b|PCIe Bus Error")


def _kernel(run: NodeRun) -> list[Item]:
    """New EDAC/MCE lines fail the host; PCIe AER lines fail the PCIe check (kernel.log)."""
    kernel = run.result.get("kernel") or {}
    if kernel.get("tool") is None:
        why = kernel.get("reason") or "the kernel log was not read"
        return [Item("kernel", NOT_RUN, why, "let the account read the journal (group adm)")]
    lines = run.outputs.get("kernel.log", "").splitlines()
    items = []
    mce = [x for x in lines if _MACHINE_CHECK.search(x)]
    aer = [x for x in lines if _PCIE_AER.search(x)]
    if mce:
        items.append(Item("kernel", FAIL, f"{len(mce)} EDAC/MCE lines, first: {mce[0][-160:]}",
                          "find the DIMM or CPU it names (edac-util, mcelog); replace it"))
    if aer:
        items.append(Item("pcie_aer", FAIL, f"{len(aer)} PCIe AER lines, first: {aer[0][-160:]}",
                          "reseat the device at that bus address, or its riser/cable"))
    return items or [Item("kernel", PASS, "no EDAC, MCE or PCIe AER line during the run")]


def _iperf(run: NodeRun, cfg: dict[str, Any]) -> Item:
    rates = []
    for name in ("iperf3.json", "iperf3-R.json"):
        res = parse.parse_iperf3(run.outputs.get(name, ""))
        if res.get("error"):
            return Item("net", FAIL, res["error"], "check the link, the peer and its iperf3 server")
        rates.append(res.get("received_bits_per_s") or 0.0)
    speed = (run.result.get("net") or {}).get("line_rate_mbps")
    text = " / ".join(f"{r / 1e9:.2f}" for r in rates) + " Gbit/s (both directions)"
    if speed and min(rates) < cfg["line_rate_fraction"] * speed * 1e6:
        return Item(
            "net",
            FAIL,
            f"{text}, line rate {speed / 1000:g} Gbit/s",
            "check the cable/optic, the switch port and the NIC firmware",
        )
    return Item("net", PASS, text + ("" if speed else "; line rate unknown, not compared"))


def _nccl(run: NodeRun, cfg: dict[str, Any]) -> Item:
    """nccl-tests all_reduce_perf on this node's GPUs: data correct, bus bandwidth."""
    nccl = run.result.get("nccl") or {}
    if nccl.get("tool") is None:
        step = "install nccl-tests (all_reduce_perf) on the node" if nccl.get("missing") else ""
        return Item("nccl", NOT_RUN, nccl.get("reason") or "all_reduce_perf not run", step)
    res = parse.parse_nccl(run.outputs.get("nccl.log", ""))
    code = nccl.get("exit_code")
    step = "check NVLink/NVSwitch (nvidia-smi nvlink -s, fabric manager), then the GPUs"
    if res["out_of_bounds"]:
        return Item("nccl", FAIL, f"all_reduce_perf: {res['out_of_bounds']} out-of-bounds "
                    "values (wrong results)", step)
    if res["out_of_bounds"] is None or res["avg_busbw_gbps"] is None:
        why = "timed out" if nccl.get("timed_out") else f"exit {code}"
        return Item("nccl", FAIL if code else NOT_RUN,
                    f"all_reduce_perf gave no result ({why}); see nccl.log", step)
    avg = res["avg_busbw_gbps"]
    text = f"avg busbw {avg:g} GB/s, 0 out-of-bounds"
    if code:
        return Item("nccl", FAIL, f"all_reduce_perf exit {code} ({text})", step)
    expected = cfg["nccl_busbw_expected_gbps"]
    if expected and avg < cfg["nccl_busbw_fraction"] * expected:
        return Item("nccl", FAIL, f"{text} < {cfg['nccl_busbw_fraction']:g} x expected "
                    f"{expected:g} GB/s", step)
    return Item("nccl", PASS, text + (f" (expected {expected:g})" if expected else
                                      "; no expected value set, not compared"))


_BMC_POWER = re.compile(r"power supply|power unit|\bpsu|\bps\d|\bfan|\bvoltage|power",
                        re.IGNORECASE)


def _bmc(run: NodeRun, cfg: dict[str, Any]) -> Item:
    """New BMC event-log (SEL) lines about PSUs, fans or power during the run fail it."""
    bmc = run.result.get("bmc") or {}
    if bmc.get("tool") is None:
        return Item("bmc", NOT_RUN, bmc.get("reason") or "the BMC event log was not read",
                    "install ipmitool and let the account run it (root, or sudo -n)")
    new = [x for x in run.outputs.get("bmc_sel.log", "").splitlines() if x.strip()]
    bad = [x for x in new if _BMC_POWER.search(x)]
    if bad:
        shown = "; ".join(x.strip()[-120:] for x in bad[:3])
        return Item("bmc", FAIL, f"{len(bad)} new BMC PSU/fan/power events: {shown}",
                    "check the PSUs, their feeds and the fans the events name")
    other = f"; {len(new)} other new SEL entries" if new else ""
    return Item("bmc", PASS, f"no new BMC PSU/fan/power event{other}")


def _smoke(run: NodeRun, cfg: dict[str, Any]) -> Item:
    """The operator's loader smoke test: a GPU idle (0 %) in >= 5 % of its samples after the
    first minute is the loader_starvation pattern."""
    smoke = run.result.get("smoke") or {}
    if smoke.get("tool") is None:
        return Item("smoke", NOT_RUN, smoke.get("reason") or "no smoke test ran",
                    'set [burnin] smoke = "CMD" (a short loader-heavy training run)')
    code = smoke.get("exit_code")
    if code and not smoke.get("timed_out"):
        return Item("smoke", FAIL, f"the smoke command exited {code}; see smoke.log",
                    "run it by hand on the node and fix what it says")
    n = int(smoke.get("samples") or 0)
    ramp = f"{float(run.plan.get('smoke_ramp_s', 60.0)):g} s"
    if not n:
        return Item("smoke", NOT_RUN, f"the smoke test ended within its first {ramp}",
                    "give it a command that runs for a few minutes")
    zero = {int(k): int(v) for k, v in (smoke.get("zero") or {}).items()}
    idle = {k: v / n for k, v in zero.items() if v / n >= cfg["smoke_idle_fraction"]}
    if idle:
        shown = ", ".join(f"GPU {k} {100 * f:.0f} %" for k, f in sorted(idle.items()))
        return Item("smoke", FAIL, f"loader starvation: GPUs idle during the smoke test "
                    f"({shown} of {n} samples after its first {ramp})",
                    "feed the GPUs faster: more loader workers, faster storage or network")
    worst_idle = max(zero.values(), default=0) / n
    return Item("smoke", PASS, f"GPUs busy: at most {100 * worst_idle:.1f} % idle over {n} "
                f"samples after its first {ramp}")


# --- across the run's nodes ----------------------------------------------------------------

_FIO_FIGURES = (  # (job, field, spec setting, label, unit scale, unit)
    ("seqread", "read_bytes_per_s", "disk_seq_read_mbps", "sequential read", 1e6, "MB/s"),
    ("seqwrite", "write_bytes_per_s", "disk_seq_write_mbps", "sequential write", 1e6, "MB/s"),
    ("randread", "read_iops", "disk_randread_iops", "4k random read", 1.0, "IOPS"),
)


def _fio_figures(run: NodeRun) -> dict[str, float]:
    """The node's clean fio figures (job -> value), empty when fio did not run clean."""
    if not (run.result.get("disk") or {}).get("tool"):
        return {}
    res = parse.parse_fio(run.outputs.get("fio.json", ""))
    if res["error"]:
        return {}
    jobs = {j["name"]: j for j in res["jobs"]}
    out = {}
    for job, name, *_ in _FIO_FIGURES:
        value = (jobs.get(job) or {}).get(name)
        if value:
            out[job] = float(value)
    return out


def compare_disks(runs: list[NodeRun], verdicts: list[NodeVerdict], cfg: dict[str, Any]) -> None:
    """fio's figures against the device spec when ``[burnin]`` gives one, else against the
    median of the run's other nodes (item 9); one "disk_speed" item per node that ran fio."""
    figures = [_fio_figures(r) for r in runs]
    spec = {job: cfg[key] for job, _, key, *_ in _FIO_FIGURES if cfg[key]}
    frac = cfg["disk_fraction"]
    for n, vd in enumerate(verdicts):
        mine = figures[n]
        if not mine:
            continue
        if spec:
            ref, against = spec, "the device spec"
            ref = {j: v * (1e6 if j != "randread" else 1.0) for j, v in spec.items()}
        else:
            others = [f for k, f in enumerate(figures) if k != n and f]
            if not others:
                vd.items.append(Item(
                    "disk_speed", NOT_RUN,
                    "could not compare: no device spec set ([burnin] disk_seq_read_mbps, "
                    "disk_seq_write_mbps, disk_randread_iops) and no other node of the run ran fio",
                    "set the drive's spec in [burnin], or burn in its sibling nodes together"))
                continue
            ref = {job: statistics.median(f[job] for f in others if job in f)
                   for job, *_ in _FIO_FIGURES if any(job in f for f in others)}
            against = f"the median of {len(others)} other node{'s' if len(others) > 1 else ''}"
        slow, said = [], []
        for job, _, _, label, scale, unit in _FIO_FIGURES:
            if job not in mine or job not in ref:
                continue
            said.append(f"{label} {mine[job] / scale:,.0f} {unit} (vs {ref[job] / scale:,.0f})")
            if mine[job] < frac * ref[job]:
                slow.append(said[-1])
        if slow:
            vd.items.append(Item(
                "disk_speed", FAIL, f"below {frac:.0%} of {against}: " + "; ".join(slow),
                "check the drive (SMART, firmware, its PCIe link), the file system and mount"))
        else:
            vd.items.append(Item("disk_speed", PASS, f"within {frac:.0%} of {against}: "
                                 + "; ".join(said)))
