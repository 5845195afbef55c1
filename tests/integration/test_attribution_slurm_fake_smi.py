"""Whose work is on a GPU, for real: a real Slurm (slurmctld + slurmd + munge, proctrack/linuxproc)
runs a real job as another user (``nobody``); a node over a real sshd, whose fake ``nvidia-smi``
lists that job's process and one process outside every job on its GPU, is watched by
``dltui snapshot``. The probe places the job's process with ``scontrol listpids`` (the cgroup
says nothing of Slurm under linuxproc) and the other in no job; dltui asks the node what the job
is (``scontrol show job -o``) over the same connection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from .conftest import require
from .slurm_lab import NOBODY, apps_with_pids
from .sshd import REPO, SSHD, SshLab, client_env

pytestmark = pytest.mark.sshd

@pytest.fixture
def job_on_a_gpu(slurm_lab, tmp_path):
    """(node lab, client home, job id, the job's PID, a PID in no job)."""
    require(Path(SSHD).exists(), f"{SSHD} is missing: install openssh-server")
    job = slurm_lab.submit("sleep 300", "--job-name=llama-ft", user=NOBODY)
    outsider = subprocess.Popen(["sleep", "300"])  # ours (root), in no job
    lab = SshLab(tmp_path / "lab")
    try:  # the job cancelled whatever fails: a job left running makes the next test's node "mix"
        slurm_lab.wait_job(job)
        pids = slurm_lab.job_pids(job)
        assert pids, slurm_lab.scontrol("listpids")
        job_pid = pids[-1]
        apps = tmp_path / "apps.csv"
        apps.write_text(apps_with_pids([job_pid, outsider.pid]))
        node = lab.add_node("gpu01")
        node.env.update(slurm_lab.env, FAKE_SMI_APPS=str(apps))
        lab.start()
        yield lab, lab.make_home(tmp_path / "home"), job, job_pid, outsider.pid
    finally:
        lab.close()
        outsider.kill()
        outsider.wait()
        slurm_lab.run("scancel", str(job), check=False)


def dltui(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dltui", *args], cwd=REPO, env=client_env(home),
                          capture_output=True, text=True, timeout=120)


def test_real_slurm_job_named_on_its_gpu_and_a_stray_process_in_no_job_fake_smi(job_on_a_gpu):
    lab, home, job, job_pid, outsider = job_on_a_gpu
    done = dltui(home, "snapshot", "gpu01", "--json", "--seconds", "4")
    assert done.returncode in (0, 1, 2) and done.stdout, done.stderr
    node = json.loads(done.stdout)["nodes"][0]
    procs = {p["pid"]: p for g in node["sample"]["gpus"] for p in g["processes"]}
    # the job's process: placed by scontrol listpids, owned by nobody on the node
    assert procs[job_pid]["slurm_job"] == job
    assert procs[job_pid]["user"] == psutil.Process(job_pid).username() == "nobody"
    assert procs[job_pid]["uid"] == NOBODY
    assert procs[job_pid]["outside_job"] is None
    # the stray process: in no job, never given its neighbour's
    assert procs[outsider]["slurm_job"] is None
    assert procs[outsider]["outside_job"] is True
    assert procs[outsider]["user"] == "root"
    # what the job is, asked of the node over its connection
    jobs = {j["job_id"]: j for j in node["jobs"]}
    assert jobs[job]["name"] == "llama-ft"
    assert jobs[job]["user"] == "nobody"
    assert jobs[job]["partition"] == "gpu"
    assert jobs[job]["state"] == "RUNNING"
    assert jobs[job]["time_left_s"] is None  # MaxTime=INFINITE: no time limit

    text = dltui(home, "snapshot", "gpu01", "--seconds", "4").stdout
    held = [line.strip() for line in text.splitlines() if line.strip().startswith("held by")]
    assert held == [f"held by job {job} llama-ft · nobody; no job · root"], text
