"""The verdict of a burn-in, per GPU and per node.

Pure: a ``NodeRun`` (the plan, the node's samples and events, the stressors' raw output and
exit codes) in, a ``NodeVerdict`` out (``items``). Every item that is not a pass carries its
evidence and the next step in words. A check whose tool did not run is "not run", never
"pass". The checks: per GPU in ``gpu_checks``, node-wide and across nodes in ``host_checks``.

Thresholds are defaults; ``[burnin]`` in the config file overrides any of ``DEFAULTS``
(declared in dltui/config.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dltui.config import BURNIN_NODE_CHECKS, BurninSection
from dltui.config_schema import build

from .fabric import items as fabric_items
from .fold import RunFold
from .gpu_checks import (
    consistency,
    gpu_checks,
    gpu_stressor,
    gpu_vendor,
    preflight,
    unsupported_stressor,
)
from .host_checks import host_checks
from .items import (
    DEFAULTS,
    FAIL,
    NOT_RUN,
    PASS,
    WARN,
    GpuVerdict,
    Item,
    NodeRun,
    NodeVerdict,
    VerdictStatus,
    exit_code,
    worst,
)
from .vendor_checks import vendor_gpu_checks

__all__ = [
    "DEFAULTS", "FAIL", "NODE_CHECKS", "NOT_RUN", "PASS", "WARN", "GpuVerdict", "Item",
    "NodeRun", "NodeVerdict", "Thresholds", "VerdictStatus", "exit_code", "judge", "settings", "worst",
]

# The node-wide checks a verdict can hold (what "optional" may name).
NODE_CHECKS = BURNIN_NODE_CHECKS


# the config's checked [burnin] table, or overrides of its defaults (None: the defaults)
Thresholds = BurninSection | Mapping[str, Any] | None


def settings(overrides: Thresholds) -> BurninSection:
    """The verdict's thresholds, typed: the config's checked ``[burnin]`` table as it is, or
    overrides of the defaults checked here the same way (an unknown key, a wrong type:
    ``ConfigError``)."""
    if isinstance(overrides, BurninSection):
        return overrides
    return build(BurninSection, dict(overrides or {}), "[burnin]")


def judge(run: NodeRun, thresholds: Thresholds = None) -> NodeVerdict:
    cfg = settings(thresholds)
    verdict = NodeVerdict(run.node, optional=frozenset(cfg.optional))
    fold = run.folded(cfg.ramp_s)
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
    stress = gpu_stressor(run, indexes)
    for index in indexes:
        gv = GpuVerdict(index)
        gf = fold.gpus.get(index)
        gv.items += preflight(index, gf, run)
        why = (run.result.get("gpu") or {}).get("reason") or "no GPU stressor ran"
        gv.items.append(
            unsupported_stressor(run, index)  # another vendor's GPU: said, never passed
            or stress.get(index)
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
        elif (key := gpu_vendor(run, index)) != "nvidia":  # the probe's readings of AMD, Gaudi
            gv.items += vendor_gpu_checks(key, index, gf, run, cfg)
        else:
            gv.items += gpu_checks(index, gf, run, cfg)
        verdict.gpus.append(gv)
    consistency(verdict, fold if has_load else None, run, cfg)
    verdict.items += host_checks(run, cfg)
    verdict.items += fabric_items(fold.fabric, cfg)
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
