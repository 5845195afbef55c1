"""Hardware health rules: XIDs, ECC, row remapping, PCIe, lost GPUs.

Counters alert on their rise between readings, never on lifetime values (a GPU with three
corrected errors from 2019 is not failing today); lifetime counts are shown as info.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TypedDict

from dltui.node.xid import describe

from ..models import GpuFacts, GpuSample, NodeEvent, Sample
from ..timeline import CRITICAL, INFO, WARNING
from ..vendors import vendor
from .base import CLEAR, EVENT, FACTS, GPU, GPUS, HOLD, NVIDIA_ONLY, Finding, Rule, rise_since_last
from .condition import RANK
from .memory import GpuMemory, NodeMemory

_RESEAT = "power-cycle the node; check riser, seating and PSU"


def _reseat(keys: list[str | None]) -> str:
    """The next step for a lost GPU, with where each vendor's driver says why."""
    hints = dict.fromkeys(vendor(k).lost for k in keys or [None])
    return "; ".join([_RESEAT, *hints])


def xid(history: list[tuple[float, int]], p: dict) -> Finding:
    """The alert for the XIDs of one GPU since the alert opened: the worst one rates it."""
    latest = history[-1][1]
    worst = max((code for _, code in history), key=lambda code: RANK[describe(code).severity])
    what = f"XID {latest}: {describe(latest).meaning}"
    if len(history) > 1:
        codes = ", ".join(str(code) for _, code in history[-8:])
        what += f" ({len(history)} XIDs so far: {codes})"
    return Finding(
        describe(worst).severity,
        what,
        describe(worst).action,
        evidence={"xids": [code for _, code in history]},
        lasting=False,
        immediate=True,
    )


_XID_HISTORY = "xid_history"  # rule_state: {gpu: [(time, code)]} since the alert opened


def record_xid(
    node: NodeMemory, event: NodeEvent, gpu: int | None, p: dict
) -> Finding | None:
    """An XID line: kept in this GPU's history, which rates the alert."""
    code = event.data.get("xid")
    if not isinstance(code, int):
        return None
    history = node.rule_state.setdefault(_XID_HISTORY, {}).setdefault(gpu, [])
    history.append((event.time, code))
    return xid(history, p)


def forget_xids(node: NodeMemory, gpu: int | None) -> None:
    node.rule_state.get(_XID_HISTORY, {}).pop(gpu, None)


def forget_all_xids(node: NodeMemory) -> None:
    node.rule_state.pop(_XID_HISTORY, None)


def ecc_uncorrectable(g: GpuSample, mem: GpuMemory, p: dict) -> object:
    now = g.ecc_uncorrected_volatile
    if now is None:
        return None
    if now == 0:
        return CLEAR  # volatile counts restart at 0 after a GPU reset or driver reload
    rise = rise_since_last(mem, "ecc_uncorrected_volatile", now)
    if not rise:
        return HOLD
    return Finding(
        CRITICAL,
        f"{rise} new uncorrectable ECC error{'s' if rise != 1 else ''} (volatile {now}, lifetime "
        f"{g.ecc_uncorrected_aggregate if g.ecc_uncorrected_aggregate is not None else 'n/a'})",
        f"drain the node, reset the GPU and run diagnostics ({vendor(g.vendor).diagnostics})",
        evidence={"rise": rise, "ecc_uncorrected_volatile": now},
        lasting=False,
        immediate=True,
    )


def ecc_correctable_burst(g: GpuSample, mem: GpuMemory, p: EccCorrectableBurstParams) -> object:
    now = g.ecc_corrected_volatile
    if now is None:
        return None
    rise = rise_since_last(mem, "ecc_corrected_volatile", now)
    state = mem.rule_state
    window = state.get("ecc_rises")
    if rise:
        if window is None:
            window = state["ecc_rises"] = deque()
        window.append((mem.now, rise))
    if not window:
        return CLEAR
    while window and mem.now - window[0][0] > 3600:
        window.popleft()
    total = sum(r for _, r in window)
    if total <= p["per_hour"]:
        return CLEAR
    return Finding(
        WARNING,
        f"{total} corrected ECC errors in the last hour (more than {p['per_hour']:g})",
        {
            "amd": "watch the retired pages (amd-smi bad-pages) and uncorrectable errors; plan diagnostics",
        }.get(vendor(g.vendor).key, "watch for row remaps and uncorrectable errors; plan diagnostics"),
        evidence={"corrected_last_hour": total},
    )


def ecc_lifetime(g: GpuSample, mem: GpuMemory, p: dict) -> object:
    corrected, uncorrected = g.ecc_corrected_aggregate, g.ecc_uncorrected_aggregate
    if corrected is None and uncorrected is None:
        return None
    if not corrected and not uncorrected:
        return CLEAR
    counts = (
        f"{corrected if corrected is not None else 'n/a'} corrected, "
        f"{uncorrected if uncorrected is not None else 'n/a'} uncorrected"
    )
    return Finding(
        INFO,
        f"lifetime ECC counts: {counts} (aggregate, kept across resets)",
        "history, not a current fault: alerts follow new errors",
        evidence={"ecc_corrected_aggregate": corrected, "ecc_uncorrected_aggregate": uncorrected},
    )


def row_remap_pending(g: GpuSample, mem: GpuMemory, p: dict) -> object:
    remap, retire = g.remapped_rows_pending, g.retired_pages_pending
    if remap is None and retire is None:
        return None
    if not remap and not retire:
        return CLEAR
    what = "row remap pending" if remap else "page retirement pending"
    return Finding(
        WARNING,
        what,
        "reset the GPU to apply it (drain the node first)",
        evidence={"remap": remap, "retire": retire},
    )


def row_remap_failure(g: GpuSample, mem: GpuMemory, p: dict) -> object:
    failed = g.remapped_rows_failure
    if failed is None:
        return None
    if not failed:
        return HOLD  # never clears by itself: a failed remap stays a fact about this card
    return Finding(
        CRITICAL,
        "row remapping failed: no spare rows left for a bad memory row",
        "RMA candidate: drain the node and open a case with the vendor",
        lasting=False,
        immediate=True,
    )


def pcie_degraded(g: GpuSample, mem: GpuMemory, p: PcieDegradedParams) -> object:
    f = mem.facts
    gen, width, util = g.pcie_gen, g.pcie_width, g.utilization_percent
    top_gen = g.pcie_max_gen or (f.pcie_max_gen if f else None)
    top_width = g.pcie_max_width or (f.pcie_max_width if f else None)
    if gen is None or width is None or util is None or top_gen is None or top_width is None:
        return None
    if util < p["busy_util"]:
        return HOLD  # links train down at idle: judge under load only
    if gen >= top_gen and width >= top_width:
        return CLEAR
    return Finding(
        WARNING,
        f"PCIe link at gen {gen} x{width}, below the gen {top_gen} x{top_width} this slot allows, at {util:.0f} % load",
        "reseat the card or riser; check the slot's BIOS link settings",
        evidence={
            "pcie_gen": gen,
            "pcie_width": width,
            "pcie_max_gen": top_gen,
            "pcie_max_width": top_width,
        },
    )


def pcie_replays(g: GpuSample, mem: GpuMemory, p: PcieReplaysParams) -> object:
    now = g.pcie_replay_count
    if now is None:
        return None
    rise = rise_since_last(mem, "pcie_replay_count", now)
    if not rise:
        return CLEAR
    return Finding(
        WARNING,
        f"PCIe replays +{rise} ({now} since reset)",
        "link errors being retried: reseat the card or riser, check the slot",
        evidence={"rise": rise, "pcie_replay_count": now},
        immediate=True,
    )


def reconcile_listed_gpus(node: NodeMemory, now: float) -> None:
    """New facts: which GPUs earlier sessions listed on this node are gone now."""
    if node.inventory is not None and node.facts is not None:
        facts = node.facts
        node.rule_state["gpus_gone"] = node.inventory.reconcile(
            node.name, facts.hostname, facts.gpus, now
        )
        node.rule_state.pop("gpu_missing_all_there", None)  # judge again with what was listed


def accept_gone_gpus(node: NodeMemory, gpu: int | None) -> None:
    """The operator acknowledged the node's alert: the GPUs gone are forgotten (the hardware
    was changed on purpose); a GPU still missing this session raises it again."""
    if gpu is not None:
        return
    gone = node.rule_state.pop("gpus_gone", [])
    if node.inventory is not None and gone:
        node.inventory.forget(node.name, [k.uuid for k in gone])
    node.rule_state.pop("gpu_missing_all_there", None)


def gpu_missing(sample: Sample, node: NodeMemory, p: GpuMissingParams) -> dict | None:
    """Every GPU the facts listed or we have seen must stay readable."""
    state = node.rule_state
    readable = [g.index for g in sample.gpus if g.error is None]
    if readable == state.get("gpu_missing_readable") and state.get("gpu_missing_all_there"):
        return None  # the same GPUs as last time, and they were all there: nothing to judge
    state["gpu_missing_readable"] = readable
    seen: set[int] = state.setdefault("gpus_seen", set())
    seen.update(readable)
    by_index = {g.index: g for g in sample.gpus}
    by_uuid = {g.uuid: g for g in sample.gpus if g.uuid}
    out: dict = {}
    for index in sorted(seen | set(node.gpu_facts)):
        f = node.gpu_facts.get(index)
        g = by_uuid.get(f.uuid) if f is not None and f.uuid and by_uuid else by_index.get(index)
        if g is not None and not g.error:
            out[index] = CLEAR
            continue
        who = ", ".join(x for x in ((f.name, f.bus_id) if f else ()) if x)
        what = (
            f"GPU cannot be read: {g.error}" if g is not None else "GPU missing from the readings"
        )
        out[index] = Finding(
            CRITICAL,
            what + (f" ({who})" if who else ""),
            _reseat([(g.vendor if g is not None else None) or (f.vendor if f else None)]),
            evidence={"error": g.error if g else None},
        )
    expected = p["expected_gpus"]
    healthy = sum(1 for g in sample.gpus if not g.error)
    gone = state.get("gpus_gone")
    words = []
    if expected and healthy < expected:
        words.append(f"{healthy} of the {expected} expected GPUs are readable")
    if gone:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(max(k.last_listed for k in gone)))
        listed = "; ".join(k.describe() for k in gone)
        if len(gone) == 1:
            words.append(f"{listed} is gone (this node listed it until {when})")
        else:
            words.append(
                f"{len(gone)} GPUs are gone (this node listed them until {when}): {listed}"
            )
    if words:
        keys = [f.vendor for f in node.gpu_facts.values()]
        action = _reseat(keys) + (
            "; if the hardware was changed on purpose, acknowledge (a) to accept it" if gone else ""
        )
        out[None] = Finding(
            CRITICAL,
            "; ".join(words),
            action,
            evidence={
                "readable": healthy,
                "expected": expected or None,
                "gone": [k.uuid for k in gone or ()],
            },
        )
    elif expected or gone is not None:
        out[None] = CLEAR
    state["gpu_missing_all_there"] = all(answer is CLEAR for answer in out.values())
    return out


def pcie_host_limited(f: GpuFacts, p: dict) -> object:
    host, gpu = f.pcie_host_max_gen, f.pcie_gpu_max_gen
    if host is None or gpu is None:
        return None
    if host >= gpu:
        return CLEAR
    return Finding(
        INFO,
        f"the slot allows PCIe gen {host}, the GPU could run gen {gpu}",
        "a slot or BIOS limit, not a fault",
        evidence={"pcie_host_max_gen": host, "pcie_gpu_max_gen": gpu},
        lasting=False,
    )


def persistence_off(f: GpuFacts, p: dict) -> object:
    if f.persistence_mode is None:
        return None
    if f.persistence_mode:
        return CLEAR
    return Finding(
        WARNING,
        "persistence mode is off: each nvidia-smi start re-initialises the GPU (~1.5 s at P0)",
        "enable nvidia-persistenced",
        lasting=False,
    )



class EccCorrectableBurstParams(TypedDict):
    """``[rules.ecc_correctable_burst]`` (its defaults in RULES below)."""

    per_hour: float
    clear_s: float
    enabled: bool


class PcieDegradedParams(TypedDict):
    """``[rules.pcie_degraded]`` (its defaults in RULES below)."""

    busy_util: float
    for_s: float
    clear_s: float
    enabled: bool


class PcieReplaysParams(TypedDict):
    """``[rules.pcie_replays]`` (its defaults in RULES below)."""

    clear_s: float
    enabled: bool


class GpuMissingParams(TypedDict):
    """``[rules.gpu_missing]`` (its defaults in RULES below)."""

    expected_gpus: float
    for_samples: float
    enabled: bool


RULES = (
    Rule(
        "xid",
        EVENT,
        xid,
        {},
        "an XID in the kernel log, rated by the XID table; clears on acknowledge or a new boot",
        acknowledgeable=True,
        cleared_by_new_boot=True,
        consumes=("xid",),
        on_event=record_xid,
        on_acknowledge=forget_xids,
        on_new_boot=forget_all_xids,
    ),
    Rule(
        "ecc_uncorrectable",
        GPU,
        ecc_uncorrectable,
        {},
        "a rise in uncorrected volatile ECC errors; clears when volatile is 0 again",
        slow=True,
        acknowledgeable=True,
    ),
    Rule(
        "ecc_correctable_burst",
        GPU,
        ecc_correctable_burst,
        {"per_hour": 100, "clear_s": 3600},
        "corrected ECC errors per sliding hour",
        slow=True,
    ),
    Rule(
        "ecc_lifetime",
        GPU,
        ecc_lifetime,
        {},
        "non-zero lifetime (aggregate) ECC counts, as info",
        slow=True,
    ),
    Rule(
        "row_remap_pending",
        GPU,
        row_remap_pending,
        {},
        "a row remap or page retirement waits for a GPU reset",
        slow=True,
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "row_remap_failure",
        GPU,
        row_remap_failure,
        {},
        "row remapping failed (never clears by itself)",
        slow=True,
        vendors=NVIDIA_ONLY,
    ),
    Rule(
        "pcie_degraded",
        GPU,
        pcie_degraded,
        {"busy_util": 50, "for_s": 10, "clear_s": 60},
        "PCIe link below the slot's gen/width under load",
        slow=True,
        concerns="pcie",
    ),
    Rule(
        "pcie_host_limited",
        FACTS,
        pcie_host_limited,
        {},
        "the slot allows a lower PCIe gen than the GPU (info)",
    ),
    Rule(
        "pcie_replays",
        GPU,
        pcie_replays,
        {"clear_s": 600},
        "a rise in the PCIe replay counter",
        slow=True,
        concerns="pcie",
    ),
    Rule(
        "gpu_missing",
        GPUS,
        gpu_missing,
        {"expected_gpus": 0, "for_samples": 2},
        "fewer readable GPUs than listed, seen this session, listed "
        "in an earlier session, or expected_gpus (0 = not set)",
        acknowledgeable=True,  # a GPU gone since an earlier session: the operator accepts it
        on_facts=reconcile_listed_gpus,
        on_acknowledge=accept_gone_gpus,
    ),
    Rule("persistence_off", FACTS, persistence_off, {}, "persistence mode disabled"),
)
