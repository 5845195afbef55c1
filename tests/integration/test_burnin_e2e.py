"""Burn-in over real sshd with the real driver, real stress-ng, fio and iperf3. The GPU is
faked at the edge: nvidia-smi (a real H100 capture, 8 copies) and gpu_burn (replaying the real
superbench capture or a variant derived from it) on the node's PATH; the test names say so."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.burnin import verdict as v
from dltui.burnin.session import BurnIn, Plan
from dltui.core.models import Sample
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions

from .conftest import build_lab, require
from .sshd import REPO, client_env, free_port

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"
FAKES = Path(__file__).resolve().parent.parent / "fakes"
TOOLS = ("stress-ng", "fio", "iperf3")


def _burnin_node(node, capture: str | None) -> None:
    """Gives a lab node its own burn-in base, 8 fake GPUs and (maybe) a fake gpu_burn."""
    node.env["DLTUI_BURNIN_DIR"] = str(node.dir / "burnin")
    node.env["FAKE_SMI_GPU_COUNT"] = "8"
    if capture:
        shutil.copy(FAKES / "gpu_burn", node.bin / "gpu_burn")
        shutil.copy(FIX / capture, node.bin / "gpu_burn.capture")


@pytest.fixture
def burnin_lab(tmp_path):
    for tool in TOOLS:
        require(shutil.which(tool) is not None, f"{tool} is missing: install it (make system-deps)")
    lab = build_lab(tmp_path / "lab")
    _burnin_node(lab.nodes["gpu01"], "superbench_gpu_burn.log")
    gpu01 = lab.nodes["gpu01"]  # nccl-tests and a BMC whose event log stays quiet, faked
    shutil.copy(FAKES / "all_reduce_perf", gpu01.bin / "all_reduce_perf")
    shutil.copy(FIX / "superbench_nccl_allreduce.log", gpu01.bin / "all_reduce_perf.capture")
    shutil.copy(FAKES / "ipmitool", gpu01.bin / "ipmitool")
    sel = "   1 | 11/28/2026 | 09:13:02 | System Boot Initiated #0x8a | Initiated by power up | Asserted\n"
    (gpu01.bin / "ipmitool.sel").write_text(sel)
    shutil.copy(FAKES / "smartctl", gpu01.bin / "smartctl")  # a healthy NVMe drive, real capture
    healthy = REPO / "tests" / "fixtures" / "smartctl" / "nvme_samsung-mzql23t8hcls_healthy.json"
    (gpu01.bin / "smartctl.drives.json").write_text(json.dumps({"/dev/nvme0": [str(healthy)]}))
    _burnin_node(lab.nodes["gpu02"], None)  # no GPU stressor at all
    try:
        yield lab.start()
    finally:
        lab.close()


def _iperf_servers(port: int) -> list:
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd[:2] == ["iperf3", "-s"] and str(port) in cmd:
            found.append(proc)
    return found


def _sample_lines(node, run_id: str) -> int:
    path = node.dir / "burnin" / run_id / "samples.jsonl"
    return sum(1 for line in path.read_text().splitlines() if line.startswith('{"type":"sample"'))


async def test_burnin_survives_a_dropped_connection_no_sample_lost_fake_gpu_burn_fake_smi_fake_nccl_fake_ipmitool_fake_smartctl(
    burnin_lab, tmp_path, use_home
):
    use_home(burnin_lab.make_home(tmp_path / "client"))
    gpu01 = burnin_lab.nodes["gpu01"]
    disk = tmp_path / "disk"
    disk.mkdir()
    runner = SshCommands(SshOptions())
    session = BurnIn(runner, ["gpu01", "gpu02"], "drop1")
    duration = 12
    plan = Plan(
        duration_s=duration,
        gpu="auto",
        cpu=True,
        disk=str(disk),
        disk_size="8M",
        net="gpu02",
        net_port=free_port(),
        expected_gpus=8,
        preflight_s=2,
        post_s=2,
        launcher="setsid",
    )
    try:
        await session.start(plan)
        assert session.failed == {}
        view = session.views["gpu01"]
        follow = asyncio.create_task(session.follow())
        while view.collector.count < 5:  # mid-run, samples flowing
            await asyncio.sleep(0.1)
        gpu01.kill()  # the node's sshd and every session it had: the connection is gone
        await asyncio.sleep(1.5)  # the run goes on meanwhile, samples pile up on the node
        gpu01.start()
        await follow
        assert view.ended and view.reattached >= 1
        on_node = _sample_lines(gpu01, "drop1")
        assert view.collector.count == on_node  # no sample lost, none twice
        spooled = view.collector.spool  # the local copy of every sample (memory holds a fold)
        spooled.close()
        lines = [json.loads(x) for x in spooled.path.read_text().splitlines()[1:]]
        times = [x["sample"]["time"] for x in lines if x["kind"] == "sample"]
        assert len(times) == on_node
        assert times == sorted(times) and len(set(times)) == len(times)
        load = view.status["phases"]["load"]
        in_load = [t for t in times if load[0] <= t <= load[0] + duration]
        # 1 Hz: never faster (no burst after the drop); a loaded machine may skip a tick, so
        # the count is bounded from below loosely
        assert duration // 2 <= len(in_load) <= duration + 1, in_load
        assert all(b - a >= 0.5 for a, b in zip(in_load, in_load[1:])), in_load

        code = await session.judge()
        by_node = {vd.node: vd for vd in session.verdicts}
        one = by_node["gpu01"]
        # the fold made live (phases from the status lines, through a drop) judges as the
        # whole series of the same samples does
        run = next(r for r in session.runs if r.node == "gpu01")
        whole = [Sample.from_dict(x["sample"]) for x in lines if x["kind"] == "sample"]
        again = v.NodeRun(run.node, run.plan, run.result, whole, run.events, run.facts,
                          run.outputs)
        judged = v.judge(again, session.thresholds)
        assert judged.to_dict()["gpus"] == one.to_dict()["gpus"]
        node_items = [i for i in one.items if i.check != "disk_speed"]  # that one is cross-node
        assert judged.items == node_items
        assert [i.status for g in one.gpus for i in g.items if i.check == "stressor"] == [
            v.PASS
        ] * 8
        host = {i.check: i for i in one.items}
        assert host["cpu"].status == v.PASS, host["cpu"]
        assert host["disk"].status == v.PASS, host["disk"]
        assert host["net"].status == v.PASS, host["net"]  # real iperf3 both ways to gpu02
        two = by_node["gpu02"]  # no gpu_burn, no dcgmi, no torch: not run, never pass
        assert all(g.status == v.NOT_RUN for g in two.gpus) and len(two.gpus) == 8
        assert "no GPU stressor found on the node" in two.gpus[0].items[0].evidence
        assert host["nccl"].status == v.PASS and "68.4048" in host["nccl"].evidence
        assert host["bmc"].status == v.PASS, host["bmc"]  # no new SEL line during the run
        assert host["drives"].status == v.PASS, host["drives"]  # SMART before and after the load
        assert host["drives"].evidence.startswith("1 drive: SMART passing")
        assert host["smoke"].status == v.NOT_RUN  # none configured: said, never a pass
        # both nodes' scratch is on this machine's one file system: shared storage, said so
        assert host["disk_speed"].status == v.NOT_RUN
        assert host["disk_speed"].evidence.startswith("measured a file system gpu01 and gpu02 share (")
        rest = [i for i in one.problems() if i.check not in ("smoke", "disk_speed")]
        assert not rest, [i.to_dict() for i in rest]
        assert code == 3  # gpu02 had no GPU stressor: never a pass
        assert not any(disk.iterdir())  # the scratch directory is gone
        assert not _iperf_servers(plan.net_port)  # the peer's iperf3 server was stopped

        paths = session.write_report(tmp_path / "report")
        await session.leave_report_on_nodes(paths)
        recorded = [json.loads(x) for x in paths["recording"].read_text().splitlines()[1:]]
        assert sum(1 for x in recorded if x["kind"] == "sample" and x["node"] == "gpu01") == on_node
        assert not spooled.path.exists()  # merged into the recording, then removed
        doc = json.loads(paths["json"].read_text())
        assert doc["exit_code"] == code and {n["node"] for n in doc["nodes"]} == {"gpu01", "gpu02"}
        assert "<svg" in paths["html"].read_text() and "http" not in paths[
            "html"
        ].read_text().replace("http://www.w3.org/2000/svg", "")
        assert (gpu01.dir / "burnin" / "drop1" / "report.md").read_text() == paths["md"].read_text()
    finally:
        await runner.close()


@pytest.mark.oldest_python_only  # node side; the dropped connection is the smoke
async def test_three_nodes_on_one_scratch_file_system_measure_the_storage_not_the_nodes(tmp_path, use_home):
    """Three lab nodes (real sshd, the real driver, real fio) whose --disk folders are on one
    file system, as a shared scratch is: enough peers for a median, yet no node is compared
    with the others; each says it measured the file system the three share."""
    require(shutil.which("fio") is not None, "fio is missing: install it (make system-deps)")
    lab = build_lab(tmp_path / "lab", extra_nodes=("gpu03",))
    for name in ("gpu01", "gpu02", "gpu03"):
        _burnin_node(lab.nodes[name], None)
    lab.start()
    runner = SshCommands(SshOptions())
    try:
        use_home(lab.make_home(tmp_path / "client"))
        disk = tmp_path / "scratch"
        disk.mkdir()
        session = BurnIn(runner, ["gpu01", "gpu02", "gpu03"], "shared1")
        plan = Plan(duration_s=4, gpu="none", cpu=False, disk=str(disk), disk_size="8M",
                    preflight_s=1, post_s=1, launcher="setsid")
        await session.start(plan)
        assert session.failed == {}
        await session.follow()
        await session.judge()
        for vd in session.verdicts:
            items = {i.check: i for i in vd.items}
            assert items["disk"].status == v.PASS, items["disk"]  # fio ran clean on each
            speed = items["disk_speed"]
            assert speed.status == v.NOT_RUN, speed
            assert speed.evidence.startswith(
                "measured a file system gpu01, gpu02 and gpu03 share ("
            ), speed.evidence
            assert "median" not in speed.evidence
    finally:
        await runner.close()
        lab.close()


def _cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    if args[0] not in ("stop", "attach"):
        args = (*args, "--launcher", "setsid")  # the systemd path is not this lab's to test
    return subprocess.run(
        [sys.executable, "-m", "dltui", "burn-in", *args],
        cwd=REPO,
        env=client_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.oldest_python_only  # node side; the dropped connection is the smoke
def test_burnin_cli_refuses_device_second_start_and_stops_with_cleanup_fake_gpu_burn(
    burnin_lab, tmp_path
):
    home = burnin_lab.make_home(tmp_path / "client")
    disk = tmp_path / "disk"
    disk.mkdir()
    dev = _cli(home, "gpu01", "--disk", "/dev/null", "--duration", "5s", "--report", str(tmp_path))
    assert dev.returncode == 3 and "under /dev" in dev.stderr + dev.stdout
    existing = tmp_path / "afile"
    existing.write_text("keep me")
    notdir = _cli(
        home, "gpu01", "--disk", str(existing), "--duration", "5s", "--report", str(tmp_path)
    )
    assert notdir.returncode == 3 and "not a directory" in notdir.stderr + notdir.stdout
    assert existing.read_text() == "keep me"

    long_run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dltui",
            "burn-in",
            "gpu01",
            "--duration",
            "10m",
            "--preflight",
            "1s",
            "--disk",
            str(disk),
            "--disk-size",
            "8M",
            "--run-id",
            "long1",
            "--report",
            str(tmp_path),
            "--launcher",
            "setsid",
        ],
        cwd=REPO,
        env=client_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        status = burnin_lab.nodes["gpu01"].dir / "burnin" / "long1" / "status.json"
        _wait_for(lambda: status.exists() and json.loads(status.read_text())["phase"] == "load")
        _wait_for(lambda: any(disk.iterdir()))  # the scratch directory exists while fio runs
        second = _cli(
            home, "gpu01", "--duration", "5s", "--run-id", "second", "--report", str(tmp_path)
        )
        assert second.returncode == 3
        assert "already running on this node (run long1)" in second.stderr
        stop = _cli(home, "stop", "long1", "gpu01")
        assert stop.returncode == 0, stop.stderr
        assert "gpu01: stopped" in stop.stdout and "LEFT" not in stop.stdout
        out, err = long_run.communicate(timeout=120)
    finally:
        if long_run.poll() is None:
            long_run.kill()
            long_run.wait()
    assert not any(disk.iterdir())  # scratch deleted on stop
    assert "run: not run: the run was stopped before its end" in out
    assert long_run.returncode in (2, 3)
    report = tmp_path / "burnin-long1" / "report.md"
    assert report.exists()


def _wait_for(cond, limit_s: float = 60.0) -> None:
    import time

    end = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.1)


@pytest.mark.oldest_python_only  # node side; the dropped connection is the smoke
def test_burnin_node_runs_without_dltui_setsid_not_a_child_of_sshd_fake_gpu_burn(
    burnin_lab, tmp_path
):
    """The driver left the SSH session's process tree: sshd's crash cannot take it along.
    A loader smoke test from the config file runs after the load and is judged."""
    home = burnin_lab.make_home(tmp_path / "client")
    gpu01 = burnin_lab.nodes["gpu01"]
    config = tmp_path / "config" / "dltui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[burnin]\nsmoke = "sleep 4; echo smoke done"\nsmoke_ramp_s = 1\n')
    env = dict(client_env(home), XDG_CONFIG_HOME=str(tmp_path / "config"))
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dltui",
            "burn-in",
            "gpu01",
            "--duration",
            "4s",
            "--preflight",
            "1s",
            "--post",
            "1s",
            "--run-id",
            "tree1",
            "--report",
            str(tmp_path),
            "--launcher",
            "setsid",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_file = gpu01.dir / "burnin" / "tree1" / "pid"
    _wait_for(pid_file.exists)
    pid = int(pid_file.read_text())
    assert pid not in {p.pid for p in gpu01.processes()}
    assert os.getsid(pid) == pid  # its own session (setsid)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, out + err  # the real capture: every GPU OK, telemetry in bounds
    assert "gpu01: PASS" in out
    smoke = json.loads((gpu01.dir / "burnin" / "tree1" / "result.json").read_text())["smoke"]
    assert smoke["exit_code"] == 0 and smoke["samples"] >= 1  # ran after the load, sampled
    # Attaching afterwards (a new dltui, offset 0) reads the whole run again and judges the same.
    report = tmp_path / "burnin-tree1" / "report.json"
    first = json.loads(report.read_text())
    report.unlink()
    again = _cli(home, "attach", "tree1", "gpu01", "--report", str(tmp_path))
    assert again.returncode == 0, again.stdout + again.stderr
    second = json.loads(report.read_text())
    assert second["nodes"][0]["samples"] == first["nodes"][0]["samples"] > 0
