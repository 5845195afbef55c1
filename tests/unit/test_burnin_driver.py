"""The real driver, started on this machine as a node would start it (the shipped script on
stdin, a new session, its own run directory), with fake GPU tools on its PATH (named so)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dltui.burnin import ship
from dltui.burnin import verdict as v

FAKES = Path(__file__).resolve().parent.parent / "fakes"
FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _node(tmp_path: Path, gpus: int, **env: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(FAKES / "nvidia-smi", bin_dir / "nvidia-smi")
    shutil.copy(FAKES / "capture.csv", bin_dir / "capture.csv")
    (tmp_path / "tmp").mkdir()
    return {
        "PATH": f"{bin_dir}:{SYSTEM_PATH}",
        "HOME": str(tmp_path),
        "FAKE_SMI_GPU_COUNT": str(gpus),
        "TMPDIR": str(tmp_path / "tmp"),
        "DLTUI_BURNIN_DIR": str(tmp_path / "base"),
        **env,
    }


def _run(
    env: dict[str, str], run_id: str, *args: str, python: str = sys.executable
) -> tuple[dict, Path]:
    cmd = ship.start_command(
        [
            "--run-id",
            run_id,
            "--duration",
            "3",
            "--preflight",
            "1",
            "--post",
            "1",
            "--launcher",
            "setsid",
            *args,
        ],
        python=python,
    )
    out = subprocess.run(
        ["sh", "-c", cmd],
        input=ship.driver_script(),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    run_dir = Path(env["DLTUI_BURNIN_DIR"]) / run_id
    if answer["ok"]:
        deadline = time.monotonic() + 90
        while not (run_dir / "exit_code").exists():
            assert time.monotonic() < deadline, (run_dir / "run.log").read_text()
            time.sleep(0.2)
    return answer, run_dir


def _judge(run_dir: Path) -> v.NodeVerdict:
    result = json.loads((run_dir / "result.json").read_text())
    plan = json.loads((run_dir / "plan.json").read_text())
    outputs = {
        p.name: p.read_text() for p in run_dir.iterdir() if p.suffix in (".log", ".json", ".jsonl")
    }
    from dltui.core.models import GpuFacts, NodeFacts

    facts = NodeFacts(gpus=[GpuFacts(index=i) for i in range(result["facts_gpus"])])
    return v.judge(v.NodeRun("n", plan, result, [], [], facts, outputs))


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
@pytest.mark.parametrize(
    "case,expected", [("diag_pass_output", v.PASS), ("diag_fail_output", v.FAIL)]
)
def test_dcgm_path_judged_from_json_fake_dcgmi_gcm_strings(tmp_path, case, expected):
    env = _node(tmp_path, 2)
    bin_dir = Path(env["PATH"].split(":")[0])
    shutil.copy(FAKES / "dcgmi", bin_dir / "dcgmi")
    doc = json.loads((FIX / "gcm_dcgmi-diag-3x_test-strings.json").read_text())[case]
    (bin_dir / "dcgmi.capture.json").write_text(json.dumps(doc["stdout"]))
    answer, run_dir = _run(env, "dcgm1", "--gpu", "auto", "--expected-gpus", "2")
    assert answer["ok"] and answer["launcher"] == "setsid"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["gpu"]["tool"] == "dcgm" and result["gpu"]["exit_code"] == 0
    items = [i for g in _judge(run_dir).gpus for i in g.items if i.check == "stressor"]
    assert [i.status for i in items] == [expected, expected]
    if expected == v.FAIL:
        assert "Persistence Mode fail" in items[0].evidence


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
def test_matmul_path_one_process_per_gpu_fake_torch(tmp_path):
    env = _node(tmp_path, 2, PYTHONPATH=str(FAKES), FAKE_TORCH_FAULTY="1")
    answer, run_dir = _run(env, "mm1", "--gpu", "torch")
    assert answer["ok"]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["gpu"]["tool"] == "torch" and result["gpu"]["exit_codes"] == [0, 1]
    items = {g.index: g.items[0] for g in _judge(run_dir).gpus}
    assert items[0].status == v.PASS and "iterations" in items[0].evidence
    assert items[1].status == v.FAIL and "FAULTY" in items[1].evidence


def test_gpu_none_and_nothing_found_are_not_run(tmp_path):
    env = _node(tmp_path, 1)
    answer, run_dir = _run(env, "none1", "--gpu", "gpu-burn")
    assert answer["ok"]
    item = _judge(run_dir).gpus[0].items[0]
    assert item.status == v.NOT_RUN and "gpu-burn is not available" in item.evidence
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "done" and status["phase"] == "post"
    assert not (run_dir.parent / "active").exists()  # the lock's note is gone with the run


def test_start_refuses_bad_plans_without_touching_anything(tmp_path):
    env = _node(tmp_path, 1)
    for args, words in [
        (["--disk", "/dev/sda"], "under /dev"),
        (["--disk", str(tmp_path / "nope")], "does not exist"),
        (["--run-id", "../x"], "bad run id"),
        (["--disk", str(tmp_path), "--disk-size", "100T"], "free"),
    ]:
        run_id = "ok1" if args[0] != "--run-id" else args[1]
        cmd = ship.start_command(
            ["--run-id", run_id, "--duration", "3", *[a for a in args if args[0] != "--run-id"]],
            python=sys.executable,
        )
        out = subprocess.run(
            ["sh", "-c", cmd], input=ship.driver_script(), env=env, capture_output=True, text=True
        )
        answer = json.loads(out.stdout.strip().splitlines()[-1])
        assert out.returncode == 4 and not answer["ok"] and words in answer["reason"], answer
    assert not (tmp_path / "base" / "ok1").exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # the script sent for each start is gone


def _oldest_python() -> tuple[str, dict[str, str]]:
    """The oldest python3.8+ this machine has (pyenv's versions made visible to its shims)."""
    env = dict(os.environ)
    if shutil.which("pyenv"):
        listed = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True)
        env["PYENV_VERSION"] = ":".join(listed.stdout.split())
    for minor in range(8, 15):
        exe = shutil.which(f"python3.{minor}", path=env.get("PATH"))
        if (
            exe
            and subprocess.run([exe, "-c", "pass"], env=env, capture_output=True).returncode == 0
        ):
            return exe, env
    return sys.executable, env


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
def test_driver_runs_on_the_oldest_python_and_judges_died_derived_died(tmp_path):
    python, penv = _oldest_python()
    env = _node(tmp_path, 8)
    env["PYENV_VERSION"] = penv.get("PYENV_VERSION", "")
    env["PATH"] = env["PATH"] + ":" + penv["PATH"]
    bin_dir = Path(env["PATH"].split(":")[0])
    shutil.copy(FAKES / "gpu_burn", bin_dir / "gpu_burn")
    shutil.copy(FIX / "derived_gpu_burn_died.log", bin_dir / "gpu_burn.capture")
    answer, run_dir = _run(env, "old1", "--expected-gpus", "8", python=python)
    assert answer["ok"], answer
    gpus = _judge(run_dir).gpus
    assert gpus[6].items[0].status == v.FAIL and "DIED" in gpus[6].items[0].evidence
    assert all(g.items[0].status == v.PASS for g in gpus if g.index != 6)


SEL_BEFORE = (  # ipmitool's `sel elist` line format, written here (not a capture)
    "   1 | 11/28/2026 | 09:12:44 | Event Logging Disabled #0x07 | Log area reset/cleared | Asserted\n"
    "   2 | 11/28/2026 | 09:13:02 | System Boot Initiated #0x8a | Initiated by power up | Asserted\n"
)
SEL_NEW = (
    "   3 | 12/03/2026 | 12:40:10 | Power Supply #0x51 | Power Supply AC lost | Asserted\n"
    "   4 | 12/03/2026 | 12:40:12 | Fan #0x30 | Lower Critical going low  | Asserted\n"
)


def _with(bin_dir: Path, fake: str, files: dict[str, str]) -> None:
    shutil.copy(FAKES / fake, bin_dir / fake)
    for name, text in files.items():
        (bin_dir / name).write_text(text)


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
def test_nccl_judged_and_bmc_power_events_fail_fake_nccl_fake_ipmitool(tmp_path):
    env = _node(tmp_path, 2)
    bin_dir = Path(env["PATH"].split(":")[0])
    capture = (FIX / "superbench_nccl_allreduce.log").read_text()
    _with(bin_dir, "all_reduce_perf", {"all_reduce_perf.capture": capture})
    _with(bin_dir, "ipmitool", {"ipmitool.sel": SEL_BEFORE,
                                "ipmitool.sel.after": SEL_BEFORE + SEL_NEW})
    answer, run_dir = _run(env, "nccl1", "--gpu", "none", "--expected-gpus", "2")
    assert answer["ok"]
    assert (bin_dir / "all_reduce_perf.argv").read_text().split() == [
        "-b", "1G", "-e", "8G", "-f", "2", "-g", "2"]
    verdict = _judge(run_dir)
    items = {i.check: i for i in verdict.items}
    assert items["nccl"].status == v.PASS, items["nccl"]
    assert "avg busbw 68.4048 GB/s" in items["nccl"].evidence
    assert items["bmc"].status == v.FAIL
    assert "Power Supply AC lost" in items["bmc"].evidence and "2 new" in items["bmc"].evidence
    assert items["smoke"].status == v.NOT_RUN and "[burnin] smoke" in items["smoke"].evidence
    # the same run against an expected bus bandwidth it does not reach
    cfg = v.settings({"nccl_busbw_expected_gbps": 200})
    run = _node_run(run_dir)
    nccl = next(i for i in v.judge(run, cfg).items if i.check == "nccl")
    assert nccl.status == v.FAIL and "expected 200" in nccl.evidence


def _node_run(run_dir: Path) -> v.NodeRun:
    from dltui.core.models import GpuFacts, NodeFacts

    result = json.loads((run_dir / "result.json").read_text())
    outputs = {p.name: p.read_text() for p in run_dir.iterdir() if p.suffix in (".log", ".json")}
    facts = NodeFacts(gpus=[GpuFacts(index=i) for i in range(result["facts_gpus"])])
    return v.NodeRun("n", json.loads((run_dir / "plan.json").read_text()), result, [], [],
                     facts, outputs)


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
def test_nccl_out_of_bounds_fails_fake_nccl_derived(tmp_path):
    env = _node(tmp_path, 2)
    bin_dir = Path(env["PATH"].split(":")[0])
    derived = (FIX / "derived_nccl_allreduce_out_of_bounds.log").read_text()
    _with(bin_dir, "all_reduce_perf", {"all_reduce_perf.capture": derived})
    answer, run_dir = _run(env, "nccl2", "--gpu", "none")
    assert answer["ok"]
    nccl = next(i for i in _judge(run_dir).items if i.check == "nccl")
    assert nccl.status == v.FAIL and "3 out-of-bounds values" in nccl.evidence


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
def test_missing_nccl_and_unreadable_bmc_are_not_run_with_reasons_fake_ipmitool_denied(tmp_path):
    env = _node(tmp_path, 2)
    bin_dir = Path(env["PATH"].split(":")[0])
    _with(bin_dir, "ipmitool", {"ipmitool.deny": ""})
    answer, run_dir = _run(env, "nobmc", "--gpu", "none")
    assert answer["ok"]
    items = {i.check: i for i in _judge(run_dir).items}
    assert items["nccl"].status == v.NOT_RUN and "all_reduce_perf" in items["nccl"].evidence
    assert items["bmc"].status == v.NOT_RUN and "Permission denied" in items["bmc"].evidence
    assert not (run_dir / "bmc_sel.log").exists()


@pytest.mark.oldest_python_only  # one driver run (gpu none) is the smoke
def test_smoke_command_runs_after_the_load_and_is_judged_fake_smi(tmp_path):
    env = _node(tmp_path, 2)
    answer, run_dir = _run(env, "smoke1", "--gpu", "none", "--smoke", "sleep 4; echo trained",
                           "--smoke-s", "30", "--smoke-ramp", "1")
    assert answer["ok"]
    result = json.loads((run_dir / "result.json").read_text())
    smoke = result["smoke"]
    load_end = result["phases"]["load"][1]
    assert smoke["started"] >= load_end and smoke["exit_code"] == 0 and smoke["samples"] >= 1
    assert (run_dir / "smoke.log").read_text().strip() == "trained"
    item = next(i for i in _judge(run_dir).items if i.check == "smoke")
    assert item.status == v.PASS, item  # the fake GPUs replay a capture under load: busy
