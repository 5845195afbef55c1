"""Each accelerator vendor's own words: what its sensors are called, which tool reads them,
which diagnostics it ships. Rules, screens and the exporter ask here instead of writing
"nvidia-smi" or "core" into a message that an AMD or a Gaudi operator would then misread.

A GPU with no vendor (a recording or a probe from before vendors were reported) is NVIDIA's:
that was the only vendor then.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

from .models import GpuFacts, GpuSample, NodeFacts


class HasVendor(Protocol):
    @property
    def vendor(self) -> str | None: ...


class Vendor(NamedTuple):
    key: str  # the wire's word: "nvidia", "amd", "intel"
    label: str  # for people: "NVIDIA", "AMD", "Intel Gaudi"
    core_sensor: str  # what the main temperature (temperature_c) is called
    tool: str  # the vendor's CLI, for a "look here next"
    diagnostics: str  # its own deep check, for a "run this next"
    driver: str  # the kernel driver (stack view, version drift)
    link: str  # its GPU-to-GPU link's name
    lost: str  # where a lost GPU leaves its trace
    collectives: str = "NCCL"  # its collective library, where a stuck all-reduce spins


NVIDIA = Vendor("nvidia", "NVIDIA", "core", "nvidia-smi", "dcgmi diag -r 3", "nvidia", "NVLink",
                "look for XID 79 in the timeline")
AMD = Vendor(
    "amd", "AMD", "edge", "amd-smi", "the ROCm Validation Suite (rvs -c gst_single.conf) or amd-smi's checks",
    "amdgpu", "XGMI", "look for amdgpu errors in the kernel log (journalctl -k | grep amdgpu)", "RCCL",
)
INTEL = Vendor("intel", "Intel Gaudi", "AIP", "hl-smi", "hl_qual (the Gaudi qualification tool)", "habanalabs",
               "RoCE scale-out ports", "look for habanalabs errors in the kernel log (journalctl -k | grep habanalabs)",
               "HCCL")

BY_KEY = {v.key: v for v in (NVIDIA, AMD, INTEL)}


def vendor(key: str | None) -> Vendor:
    """The vendor of a GPU by its ``vendor`` field; NVIDIA when unset (see above)."""
    return BY_KEY.get(key or "nvidia", NVIDIA)


def label(key: str | None, model: str | None) -> str:
    """"AMD Instinct MI300X", "Intel Gaudi HL-325L", "NVIDIA H100": the model with its maker
    named once (a model name that already starts with it is not repeated)."""
    maker = vendor(key).label
    if not model:
        return maker
    first = maker.split()[0].lower()
    return model if model.lower().startswith(first) else f"{maker} {model}"


def vendors_of(gpus: Iterable[HasVendor]) -> list[Vendor]:
    """The vendors of these GPUs (samples or facts), NVIDIA first, each once."""
    keys = {vendor(getattr(g, "vendor", None)).key for g in gpus}
    return [v for v in (NVIDIA, AMD, INTEL) if v.key in keys]


def driver_words(facts: NodeFacts) -> list[tuple[str, str | None]]:
    """(what, version) for each vendor's driver stack on a node, from its facts: NVIDIA's
    driver and CUDA (per node); AMD's amdgpu and Gaudi's habanalabs (per GPU: the first
    known), with the firmware where the GPU reports one. A node without GPUs: NVIDIA's (n/a),
    as before vendors were reported."""
    out: list[tuple[str, str | None]] = []
    for v in vendors_of(facts.gpus) or [NVIDIA]:
        if v is NVIDIA:
            out += [("driver", facts.driver_version), ("CUDA", facts.cuda_version)]
            continue
        mine = [g for g in facts.gpus if vendor(g.vendor) is v]
        out.append((v.driver, next((g.driver_version for g in mine if g.driver_version), None)))
        firmware = next((g.firmware_version for g in mine if g.firmware_version), None)
        if firmware:
            out.append(("firmware", firmware))
    return out


def models_words(gpus: Iterable[GpuSample | GpuFacts]) -> str:
    """"8× H100 80GB HBM3, 2× AMD Instinct MI210": each model once with its count (NVIDIA's
    name without its maker, as before; another vendor's with it)."""
    models: dict[str, int] = {}
    for g in gpus:
        name = g.name or "unknown GPU"
        key = name.removeprefix("NVIDIA ") if vendor(g.vendor) is NVIDIA else label(g.vendor, g.name)
        models[key] = models.get(key, 0) + 1
    return ", ".join(f"{n}× {name}" for name, n in models.items())
