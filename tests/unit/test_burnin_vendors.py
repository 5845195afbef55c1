"""Burn-in on other vendors' GPUs: a stressor that cannot load them (gpu_burn, dcgmi on AMD or
Gaudi; torch on Gaudi) is a clear NOT_RUN in the vendor's words, never a pass; torch on AMD
(a ROCm build) is judged as on NVIDIA. The real gpu_burn capture stands for what the node ran."""

from __future__ import annotations

from dataclasses import replace

from dltui.burnin import verdict as v
from tests.unit.test_burnin_verdict import _run


def _as(vendor: str, run: v.NodeRun) -> v.NodeRun:
    samples = [replace(s, gpus=[replace(g, vendor=vendor) for g in s.gpus]) for s in run.samples]
    return replace(run, samples=samples)


def test_gpu_burn_on_an_amd_node_is_not_supported_never_pass():
    verdict = v.judge(_as("amd", _run()))
    stressor = [i for g in verdict.gpus for i in g.items if i.check == "stressor"]
    assert {i.status for i in stressor} == {v.NOT_RUN}
    assert stressor[0].evidence == "gpu-burn is not supported for AMD GPUs"
    assert "ROCm Validation Suite" in stressor[0].next_step
    assert v.exit_code([verdict]) == 3


def test_no_stressor_on_a_gaudi_node_names_gaudis_own_tool():
    verdict = v.judge(_as("intel", _run(tool=None, log=None)))
    item = next(i for i in verdict.gpus[0].items if i.check == "stressor")
    assert (item.status, item.evidence) == (
        v.NOT_RUN, "GPU load is not supported for Intel Gaudi: no stressor dltui can run and judge"
    )
    assert "hl_qual" in item.next_step


def test_the_nvidia_path_is_unchanged():
    verdict = v.judge(_run())
    assert verdict.status == v.PASS
