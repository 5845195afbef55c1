"""Whose work is on a GPU, where the operator looks outside the dashboard: an alert on the GPU
names the job and user (whatever the rule), ``snapshot`` (text and JSON) says who holds each
GPU, and ``/metrics`` has one bounded ``dltui_gpu_job_info`` family that ``promtool`` accepts."""

from __future__ import annotations

import json

from dltui import report_text, snapshot
from dltui.core.attribution import ContainerInfo, JobInfo
from dltui.export.metrics import render
from tests.unit.rules_support import Rig, busy_gpu

from .tools import promtool_check

ALICE = JobInfo(48213, "llama-ft", "alice", "gpu", "RUNNING", 3600.0, 3 * 3600 + 12 * 60, "gres/gpu=8")
CID = "b978af0b858aa8855cce46b628817d4ed58e58f2c4f66c9b9c5449134ed4c008"


def job_process(pid: int) -> dict:
    return {"pid": pid, "name": "python3", "gpu_memory_mib": 30000.0, "uid": 1001, "user": "alice",
            "slurm_job": 48213, "slurm_step": "0"}


def hot_fleet() -> Rig:
    """GPU 3 at 91 °C held by job 48213 (alice); GPU 0 by a stray root process in no job, GPU 1
    by a container; the job's facts asked already."""
    rig = Rig(window_s=3)
    node = rig.fleet.node("gpu01")
    node.jobs[48213] = ALICE
    node.containers[CID] = ContainerInfo(CID, "docker", name="trainer", image="nvcr.io/nvidia/pytorch:25.01-py3")

    def gpus(t):
        return [
            busy_gpu(0, processes=[{"pid": 50, "name": "python3", "uid": 0, "user": "root", "outside_job": True}]),
            busy_gpu(1, processes=[{"pid": 60, "name": "python3", "uid": 1002, "user": "bob", "container_id": CID,
                                    "container_runtime": "docker"}]),
            busy_gpu(3, temperature_c=91, temperature_margin_c=None,
                     processes=[job_process(pid) for pid in range(100, 116)]),
        ]

    rig.run(3, gpus)
    return rig


def test_an_alert_on_a_gpu_names_its_job_and_user():
    rig = hot_fleet()
    alert = rig.alert("gpu_temp_high", gpu=3)
    assert alert is not None
    assert alert.message.startswith("core 91 °C")
    assert alert.message.endswith(" — job 48213 (alice)")


def test_snapshot_text_and_json_say_who_holds_each_gpu():
    rig = hot_fleet()
    text = report_text.render(rig.fleet)
    assert "    held by job 48213 llama-ft · alice · 3h12m left" in text.splitlines()
    assert "    held by no job · root" in text.splitlines()
    assert "    held by ctr trainer · bob" in text.splitlines()
    data = json.loads(snapshot.to_json(rig.fleet))["nodes"][0]
    assert data["jobs"] == [{"job_id": 48213, "name": "llama-ft", "user": "alice", "partition": "gpu",
                             "state": "RUNNING", "elapsed_s": 3600.0, "time_left_s": 11520.0, "gpus": "gres/gpu=8"}]
    assert data["containers"][0]["name"] == "trainer"
    procs = {p["pid"]: p for g in data["sample"]["gpus"] for p in g["processes"]}
    assert procs[100]["slurm_job"] == 48213 and procs[50]["outside_job"] is True


def test_job_info_series_one_per_holder_never_per_process():
    page = render(hot_fleet().fleet)
    lines = [line for line in page.splitlines() if line.startswith("dltui_gpu_job_info{")]
    lab = 'node="gpu01",gpu="3",uuid="GPU-00000003",model="NVIDIA H100 80GB HBM3"'
    assert f'dltui_gpu_job_info{{{lab},job="48213",job_name="llama-ft",user="alice"}} 1' in lines
    assert any('gpu="0"' in line and 'job="no job",user="root"' in line for line in lines)
    assert any('gpu="1"' in line and 'user="bob",container="trainer"' in line for line in lines)
    assert len(lines) == 3  # sixteen processes of one job: one series
    assert "pid" not in "".join(lines)
    done = promtool_check(page)
    assert done.returncode == 0, done.stdout + done.stderr
