"""Burn-in of AMD and Intel Gaudi nodes over real sshd with the real driver and the real probe.
The GPUs are faked at the edge: an AMD node with a FAKE ``rocm-smi`` (the real MI250 ROCm 5
capture, 2 GCDs) and a FAKE ``rvs`` replaying AMD's published gst output (8x MI355X; its
summary maps RVS ids 42583 and 27226 to GPUs 0 and 1); a Gaudi node with a FAKE ``hl-smi``
(the real 2x HL-325L capture) whose AIP 1 stops answering (every reading N/A) mid-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dltui.burnin import verdict as v
from dltui.burnin.session import BurnIn, Plan
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions

from .conftest import build_lab
from .sshd import REPO

pytestmark = pytest.mark.sshd

FAKES = REPO / "tests" / "fakes"
FIX = REPO / "tests" / "fixtures" / "burn-in"
HL_SMI_READINGS = range(4, 11)  # memory.total … utilization.aip in the captured query


def _install(node, *names: str, **env: str) -> None:
    for name in names:
        shutil.copy(FAKES / name, node.bin / name)
    node.env["DLTUI_BURNIN_DIR"] = str(node.dir / "burnin")
    node.env.update(env)


@pytest.fixture
def vendor_lab(tmp_path: Path):
    lab = build_lab(tmp_path / "lab")
    mi250 = lab.add_node("mi250", fake_smi=False)
    mi250_capture = REPO / "tests" / "fixtures" / "amd" / "rocm-smi-showallinfo-mi250.json"
    _install(mi250, "rocm-smi", "rvs", FAKE_RVS_LOG=str(tmp_path / "rvs-calls.log"),
             FAKE_ROCM_SMI_CAPTURE=str(mi250_capture))
    shutil.copy(FIX / "rvs-1.6.75_gst_mi355x.log", mi250.bin / "rvs.capture")
    gaudi_capture = REPO / "tests" / "fixtures" / "gaudi" / "hl-smi-query-hl325l.csv"
    gone = tmp_path / "aip1-gone.json"
    gone.write_text(json.dumps({"1": {str(k): "N/A" for k in HL_SMI_READINGS}}))
    _install(lab.add_node("gaudi3", fake_smi=False), "hl-smi", FAKE_HLSMI_SET_FILE=str(gone),
             FAKE_HLSMI_SET_AFTER="5", FAKE_HLSMI_CAPTURE=str(gaudi_capture))
    try:
        yield lab.start()
    finally:
        lab.close()


async def test_amd_node_runs_rvs_gst_and_gaudi_aip_that_stops_answering_fails_fake_rvs_fake_rocm_smi_fake_hl_smi(
    vendor_lab, tmp_path, use_home
):
    use_home(vendor_lab.make_home(tmp_path / "client"))
    runner = SshCommands(SshOptions())
    session = BurnIn(runner, ["mi250", "gaudi3"], "vend1")
    plan = Plan(duration_s=8, gpu="auto", expected_gpus=2, preflight_s=1, post_s=1,
                launcher="setsid")
    try:
        await session.start(plan)
        assert session.failed == {}
        await session.follow()
        code = await session.judge()
        by_node = {vd.node: vd for vd in session.verdicts}

        # AMD: the node's own rvs ran AMD's gst action for the run's duration, judged per GPU
        calls = (tmp_path / "rvs-calls.log").read_text().split()
        assert calls[0] == "-c" and calls[1].endswith("/vend1/rvs_gst.conf")
        amd = by_node["mi250"]
        gpus = {g.index: {i.check: i for i in g.items} for g in amd.gpus}
        assert sorted(gpus) == [0, 1]
        assert [gpus[i]["stressor"].status for i in (0, 1)] == [v.PASS, v.PASS]
        assert gpus[0]["stressor"].evidence == (
            "rvs gst met its target: 1063560 GFLOPS (no GFLOPS target set)"
        )
        assert gpus[1]["stressor"].evidence.startswith("rvs gst met its target: 1068301 GFLOPS")
        # the probe's own readings under load; what this source (rocm-smi of ROCm 5) does not
        # report (ECC/RAS, XGMI, throttle status) is "not run", never a pass
        assert {gpus[i]["answering"].status for i in (0, 1)} == {v.PASS}
        assert gpus[0]["thermal"].evidence == "edge max 32 °C, HBM max 43 °C, junction max 35 °C"
        assert gpus[0]["power"].evidence.endswith("of 560 W under load")
        for check in ("ecc", "xgmi", "throttle"):
            assert {gpus[i][check].status for i in (0, 1)} == {v.NOT_RUN}, gpus[0][check]
        assert amd.status == v.NOT_RUN  # the unreported counters: never a silent pass
        # PCIe replays compared over the run (rocm-smi gives the count, not the link state)
        assert gpus[0]["pcie"].evidence == "no PCIe replays (link state not reported)"
        count = {i.check: i for i in amd.items}["gpu_count"]
        assert (count.status, count.evidence) == (v.PASS, "2 GPUs")

        # Gaudi: no load stressor, said clearly; AIP 1 stopped answering: FAIL in hl-smi's words
        gaudi = by_node["gaudi3"]
        aips = {g.index: {i.check: i for i in g.items} for g in gaudi.gpus}
        assert sorted(aips) == [0, 1]
        assert {aips[i]["stressor"].evidence for i in (0, 1)} == {
            "GPU load is not supported for Intel Gaudi: no stressor dltui can run and judge"
        }
        assert {aips[i]["stressor"].status for i in (0, 1)} == {v.NOT_RUN}
        assert aips[0]["answering"].status == v.PASS
        lost = aips[1]["answering"]
        assert lost.status == v.FAIL, lost
        assert lost.evidence.startswith("AIP stopped answering in ")
        assert lost.evidence.endswith("hl-smi reports no readings for this AIP (in reset, or fallen off the bus?)")
        assert (aips[0]["thermal"].status, aips[0]["thermal"].evidence) == (v.PASS, "AIP max 36 °C")
        assert aips[0]["power"].status == v.PASS
        assert aips[0]["power"].evidence.endswith("of 850 W under load")
        assert gaudi.status == v.FAIL
        assert code == 2
    finally:
        await runner.close()
