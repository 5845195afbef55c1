"""Fleet rules: nodes that should match but do not ("lock your versions").

Versions are compared within each configured group, and among the nodes in no group; GPU
models only within configured groups (an unconfigured fleet may mix node types on purpose).
The alert lands on every node that differs from the most common value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..models import NodeFacts
from ..timeline import WARNING
from ..vendors import label, vendor
from .base import CLEAR, FLEET, Finding, Rule

# group name (None: the nodes in no group) -> [(node name, its facts)]
Groups = dict[str | None, list[tuple[str, NodeFacts]]]


def _where(group: str | None) -> str:
    return "the fleet's" if group is None else f"group {group}'s"


def _version_drift(
    label: str, read: Callable[[NodeFacts], str | None]
) -> Callable[[Groups, dict], dict]:
    def check(groups: Groups, p: dict) -> dict:
        out: dict = {}
        for group, members in groups.items():
            known = {name: read(facts) for name, facts in members if read(facts)}
            counts = Counter(known.values())
            reference, count = max(counts.items(), key=lambda kv: (kv[1], kv[0]), default=(None, 0))
            for name, value in known.items():
                if value == reference:
                    out.setdefault(name, CLEAR)  # a node in two groups keeps any finding
                    continue
                out[name] = Finding(
                    WARNING,
                    f"{label} {value} differs from {_where(group)} {reference} (on {count} of {len(known)} nodes)",
                    "lock versions across nodes that run the same jobs; a reboot may have picked up an upgrade",
                    evidence={"value": value, "reference": reference},
                    lasting=False,
                    immediate=True,
                )
        return out

    return check


def gpu_model_mixed(groups: Groups, p: dict) -> dict:
    out: dict = {}
    for group, members in groups.items():
        if group is None:
            continue
        models = {name: {g.name for g in facts.gpus if g.name} for name, facts in members}
        models = {name: found for name, found in models.items() if found}
        counts = Counter(model for found in models.values() for model in found)
        reference, count = max(counts.items(), key=lambda kv: (kv[1], kv[0]), default=(None, 0))
        for name, found in models.items():
            odd = sorted(found - {reference})
            if not odd:
                out.setdefault(name, CLEAR)
                continue
            out[name] = Finding(
                WARNING,
                f"GPU model {', '.join(odd)} differs from {_where(group)} "
                f"{reference} (on {count} of {len(models)} nodes)",
                "jobs sized for one model will run unevenly: move the node to its own group or swap the card",
                evidence={"models": sorted(found), "reference": reference},
                lasting=False,
                immediate=True,
            )
    return out


def accelerator_stack_drift(groups: Groups, p: dict) -> dict:
    """AMD / Gaudi driver and firmware per GPU model: nodes with the same vendor and model
    should run the same amdgpu / habanalabs driver and firmware (NVIDIA's per-node driver is
    driver_version_drift's)."""
    out: dict = {}
    for group, members in groups.items():
        by_model: dict[tuple[str, str], dict[str, str]] = {}
        for name, facts in members:
            for g in facts.gpus:
                who = vendor(g.vendor)
                if who.key == "nvidia" or not g.name or not (g.driver_version or g.firmware_version):
                    continue
                words = f"{who.driver} {g.driver_version or 'n/a'}"
                if g.firmware_version:
                    words += f", firmware {g.firmware_version}"
                by_model.setdefault((who.key, g.name), {})[name] = words
        for (key, model), known in sorted(by_model.items()):
            counts = Counter(known.values())
            reference, count = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
            for name, value in known.items():
                if value == reference:
                    out.setdefault(name, CLEAR)
                    continue
                out[name] = Finding(
                    WARNING,
                    f"{label(key, model)}: {value} differs from {_where(group)} {reference} "
                    f"(on {count} of {len(known)} nodes)",
                    f"hold the {vendor(key).driver} driver and firmware packages at one version on nodes "
                    "that run the same jobs; a reboot may have picked up an upgrade",
                    evidence={"value": value, "reference": reference, "model": model},
                    lasting=False,
                    immediate=True,
                )
    return out


RULES = (
    Rule(
        "accelerator_stack_drift",
        FLEET,
        accelerator_stack_drift,
        {},
        "AMD / Gaudi driver or firmware differs between nodes with the same GPU model",
        concerns="driver",
    ),
    Rule(
        "driver_version_drift",
        FLEET,
        _version_drift("driver", lambda f: f.driver_version),
        {},
        "NVIDIA driver differs within a group",
        concerns="driver",
    ),
    Rule(
        "cuda_version_drift",
        FLEET,
        _version_drift("CUDA", lambda f: f.cuda_version),
        {},
        "CUDA version differs within a group",
        concerns="cuda",
    ),
    Rule(
        "kernel_version_drift",
        FLEET,
        _version_drift("kernel", lambda f: f.kernel),
        {},
        "Linux kernel differs within a group",
        concerns="kernel",
    ),
    Rule(
        "gpu_model_mixed", FLEET, gpu_model_mixed, {}, "GPU models differ within a configured group"
    ),
)
