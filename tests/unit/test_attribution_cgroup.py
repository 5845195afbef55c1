"""The probe's attribution of GPU processes: real /proc/PID/cgroup captures (tests/fixtures/
scheduler/PROVENANCE.md), real `scontrol listpids` output, and the real /proc of this test."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from dltui.core.models import GpuProcess
from dltui.node.probe.attribution import Attributor, parse_cgroup, parse_listpids, start_time
from dltui.node.probe.problems import Problems
from dltui.node.schema import PROCESS_FIELDS

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scheduler"
DOCKER_V2 = "b176419186d75a44628851daf7841d3374a2ec56d0b038ee3bd1e0c6d331e5b1"

# capture -> what its cgroup names; every cgroup capture is listed (a new one must be added here)
EXPECTED = {
    "cgroup-v1_slurm-interactive-step_sonar-line.txt": {"slurm_job": 280678, "slurm_step": "interactive"},
    "cgroup-v1_slurm-job-step_sonar-ex3-slurm21.txt": {"slurm_job": 748468, "slurm_step": "0"},
    "cgroup-v2_slurm-job-step_cgroup-exporter.txt": {"slurm_job": 4, "slurm_step": "0"},
    "cgroup-v2_slurm-job-step_sonar-fox.txt": {"slurm_job": 1392969, "slurm_step": "0"},
    # slurmstepd's own cgroup: not a job's process
    "cgroup-v2_slurmstepd-system_cgroup-exporter.txt": {},
    "cgroup-v2_cgroupns-relative-session_elastic.txt": {},
    "cgroup-v1_docker-cgroupfs_elastic.txt": {
        "container_id": "b29faf21b7eff959f64b4192c34d5d67a707fe8561e9eaa608cb27693fba4242",
        "container_runtime": "docker",
    },
    "cgroup-v1_docker-systemd_neuvector-centos.txt": {
        "container_id": "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d",
        "container_runtime": "docker",
    },
    "cgroup-v2_docker-systemd_elastic-no-trailing-newline.txt": {
        "container_id": "1c8fa019edd4b9d4b2856f4932c55929c5c118c808ed5faee9a135ca6e84b039",
        "container_runtime": "docker",
    },
    "cgroup-v2_docker-systemd_kepler.txt": {"container_id": DOCKER_V2, "container_runtime": "docker"},
    "cgroup-hybrid_k8s-containerd-systemd-burstable_elastic-eks-amzn2.txt": {
        "container_id": "1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496",
        "container_runtime": "containerd",
        "pod_uid": "7a96c459-d529-44ae-9f99-90d3798d6426",
    },
    "cgroup-v2_k8s-containerd-systemd-besteffort_neuvector.txt": {
        "container_id": "25d057a4c6c9555f2a0eb106e8896968c28f1c44aca4754174851aca7f89ad26",
        "container_runtime": "containerd",
        "pod_uid": "9493223b-520e-4a97-a45f-359dcf967006",
    },
    "cgroup-v1_k8s-crio-systemd-besteffort_neuvector-openshift46.txt": {
        "container_id": "d6d725b909f37c3e232aadfbafa950a58bfe7baa579ba8c47a12be88bb921607",
        "container_runtime": "crio",
        "pod_uid": "8ca306fa-3c03-47fa-97dd-19979c345572",
    },
    "cgroup-v2_k8s-crio-systemd-burstable_neuvector-kubic.txt": {
        "container_id": "f33f47b0db740bb647cb3e7ac62d96c74966dbb99cbfaf4563bfd42d387e8b44",
        "container_runtime": "crio",
        "pod_uid": "042efd86-1f3b-4f2f-8736-f31c58e95bbc",
    },
    "cgroup-v2_podman-rootful_kepler-line.txt": {
        "container_id": "06dc5f321aad8726aa26559f16ec203bc099245bc44894b14a89fc02b022d1d5",
        "container_runtime": "podman",
    },
    "cgroup-v2_podman-rootless_kepler.txt": {
        "container_id": "f992ec4ed807f76e5e54c9c67d78f0a4105bf945420271c2558ba905e38d2108",
        "container_runtime": "podman",
    },
}


def test_every_cgroup_capture_is_checked():
    assert sorted(p.name for p in FIXTURES.glob("cgroup-*")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cgroup_capture(name):
    assert parse_cgroup((FIXTURES / name).read_text()) == EXPECTED[name]


def test_listpids_capture():
    text = (FIXTURES / "scontrol-listpids_datadog.txt").read_text()
    assert parse_listpids(text) == {3771: (14, "batch"), 3772: (14, "batch")}


def test_process_fields_are_the_models():
    assert set(PROCESS_FIELDS) == set(GpuProcess.__slots__)


def fake_proc(tmp_path: Path, pid: int, cgroup: str, start: int = 1234) -> None:
    """A /proc/PID with a real stat line's shape and a captured cgroup file."""
    d = tmp_path / str(pid)
    d.mkdir()
    (d / "stat").write_text(f"{pid} (py (thon)) S 1 {pid} {pid} 0 -1 4194560 " + "0 " * 12 + f"{start} 1 2\n")
    (d / "cgroup").write_text(cgroup)


def gpus_with(*pids: int) -> list[dict]:
    return [{"index": 0, "processes": [{"pid": p, "name": "python3"} for p in pids]}]


class Runs:
    """``subprocess.run`` for the Attributor, answering a real listpids capture; counts calls."""

    def __init__(self, stdout: str, returncode: int = 0, stderr: str = ""):
        self.calls: list[list[str]] = []
        self.stdout, self.returncode, self.stderr = stdout, returncode, stderr

    def __call__(self, argv, **kwargs):
        self.calls.append(argv)
        return subprocess.CompletedProcess(argv, self.returncode, self.stdout, self.stderr)


def test_real_proc_owner_of_this_process():
    att = Attributor(Problems(), scontrol="")
    gpus = gpus_with(os.getpid())
    att.mark(gpus)
    p = gpus[0]["processes"][0]
    assert p["uid"] == os.getuid()
    assert p["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert start_time("/proc", os.getpid()) is not None
    GpuProcess(**p)  # the record decodes into the model


def test_cgroup_read_once_per_process_not_per_sample(tmp_path):
    fake_proc(tmp_path, 3771, (FIXTURES / "cgroup-v2_docker-systemd_kepler.txt").read_text())
    att = Attributor(Problems(), proc=str(tmp_path), scontrol="")
    for _ in range(50):
        gpus = gpus_with(3771, 3771)  # one process on two rows: still one read
        att.mark(gpus)
        assert gpus[0]["processes"][1]["container_id"] == DOCKER_V2
    assert att.cgroup_reads == 1


def test_reused_pid_is_read_again(tmp_path):
    fake_proc(tmp_path, 3771, (FIXTURES / "cgroup-v2_docker-systemd_kepler.txt").read_text(), start=100)
    att = Attributor(Problems(), proc=str(tmp_path), scontrol="")
    att.mark(gpus_with(3771))
    att.mark(gpus_with())  # gone
    shutil.rmtree(tmp_path / "3771")
    fake_proc(tmp_path, 3771, (FIXTURES / "cgroup-v2_slurm-job-step_sonar-fox.txt").read_text(), start=200)
    gpus = gpus_with(3771)
    att.mark(gpus)
    p = gpus[0]["processes"][0]
    assert p["slurm_job"] == 1392969 and "container_id" not in p
    assert att.cgroup_reads == 2


def test_linuxproc_job_from_scontrol_listpids_once(tmp_path):
    """A cgroup that says nothing of Slurm: one `scontrol listpids` places the new processes;
    a process it does not list is outside every job, never given a neighbour's."""
    host = (FIXTURES / "cgroup-v2_cgroupns-relative-session_elastic.txt").read_text()
    for pid in (3771, 3772, 9999):
        fake_proc(tmp_path, pid, host)
    runs = Runs((FIXTURES / "scontrol-listpids_datadog.txt").read_text())
    clock = [0.0]
    att = Attributor(Problems(), proc=str(tmp_path), scontrol="/usr/bin/scontrol", run=runs, clock=lambda: clock[0])
    gpus = gpus_with(3771, 3772, 9999)
    att.mark(gpus)
    p = {q["pid"]: q for q in gpus[0]["processes"]}
    assert (p[3771]["slurm_job"], p[3771]["slurm_step"]) == (14, "batch")
    assert p[3772]["slurm_job"] == 14
    assert p[9999].get("slurm_job") is None and p[9999]["outside_job"] is True
    for _ in range(20):
        clock[0] += 1.0
        att.mark(gpus_with(3771, 3772, 9999))
    assert runs.calls == [["/usr/bin/scontrol", "listpids"]]


def test_listpids_refused_said_once_and_nothing_guessed(tmp_path):
    fake_proc(tmp_path, 4000, (FIXTURES / "cgroup-v2_cgroupns-relative-session_elastic.txt").read_text())
    problems = Problems()
    runs = Runs("", returncode=1, stderr="slurm_load_partitions: Unable to contact slurm controller\n")
    clock = [0.0]
    att = Attributor(problems, proc=str(tmp_path), scontrol="/usr/bin/scontrol", run=runs, clock=lambda: clock[0])
    for _ in range(30):
        gpus = gpus_with(4000)
        att.mark(gpus)
        clock[0] += 1.0
    p = gpus[0]["processes"][0]
    assert "slurm_job" not in p and "outside_job" not in p  # unknown, not "no job"
    assert [m for s, m in problems.drain() if s == "slurm jobs"] == [
        "scontrol listpids: slurm_load_partitions: Unable to contact slurm controller"
    ]
    assert len(runs.calls) == 1  # retried a minute later, not every sample


def test_cgroup_job_needs_no_scontrol(tmp_path):
    fake_proc(tmp_path, 5000, (FIXTURES / "cgroup-v1_slurm-job-step_sonar-ex3-slurm21.txt").read_text())
    runs = Runs("")
    att = Attributor(Problems(), proc=str(tmp_path), scontrol="/usr/bin/scontrol", run=runs)
    gpus = gpus_with(5000)
    att.mark(gpus)
    assert gpus[0]["processes"][0]["slurm_job"] == 748468
    assert runs.calls == []
