"""The Slurm lab itself: real daemons, a real job as another user, and nothing written outside
its own directory (munge's key and socket included)."""

from __future__ import annotations

import os

import psutil

from tests.integration.conftest import require
from tests.integration.slurm_lab import NOBODY, SlurmLab, host_state, missing


def _open_paths(pid: int) -> set[str]:
    """Regular files a process holds open (sockets, pipes and devices left out)."""
    paths = set()
    for f in psutil.Process(pid).open_files():
        if not f.path.startswith(("/dev/", "/proc/", "/sys/")):
            paths.add(f.path)
    return paths


def test_slurm_lab_runs_a_job_as_another_user_and_leaves_the_host_untouched():
    why = missing()
    require(why is None, why or "")
    before = host_state()
    lab = SlurmLab()
    started: list[int] = []
    job_pids: list[int] = []
    try:
        lab.start()
        assert lab.node_state() == "IDLE"
        started = [p.pid for p in lab.procs.values()]
        for pid in started:  # the daemons write only inside the lab's directory
            assert all(p.startswith(str(lab.dir)) for p in _open_paths(pid)), _open_paths(pid)
        job = lab.submit("sleep 300")
        assert lab.wait_job(job) == "RUNNING"
        job_pids = lab.job_pids(job)
        assert job_pids, lab.scontrol("listpids")
        assert {psutil.Process(p).uids().real for p in job_pids} == {NOBODY}
        assert lab.node_state() in ("MIXED", "ALLOCATED")
    finally:
        lab.close()
    assert not lab.dir.exists()
    for pid in [*started, *job_pids]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert host_state() == before, "the lab changed files in the host's Slurm or munge folders"
    assert not os.path.exists("/run/munge/munge.socket.2") or "/run/munge" in before


def test_slurm_lab_fixture_drains_and_resumes_for_real(slurm_lab):
    node = slurm_lab.node_name
    slurm_lab.scontrol("update", f"NodeName={node}", "State=DRAIN", "Reason=lab check")
    try:
        assert "DRAIN" in slurm_lab.node_state()
        assert slurm_lab.node_reason().startswith("lab check")
    finally:
        slurm_lab.scontrol("update", f"NodeName={node}", "State=RESUME")
    assert "DRAIN" not in slurm_lab.node_state()
