"""What job and container ids mean: the parsers against real captures (tests/fixtures/scheduler/
PROVENANCE.md), and the words the screens, alerts and exporter say about a GPU's holder."""

from __future__ import annotations

from pathlib import Path

from dltui.core.attribution import (
    NO_JOB,
    ContainerInfo,
    JobInfo,
    alert_holder,
    gpu_holder,
    gpu_holders,
    node_jobs,
    parse_crictl_inspect,
    parse_docker_inspect,
    parse_key_values,
    parse_scontrol_job,
    process_holder,
    slurm_duration_s,
)
from dltui.core.models import GpuProcess, GpuSample
from tests.hostile import HOSTILE

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scheduler"


def test_scontrol_show_job_detail_capture():
    job = parse_scontrol_job((FIXTURES / "scontrol-show-job-detail_gcm-multinode-8gpu.txt").read_text())
    assert job == JobInfo(
        job_id=8401413,
        name="slurm_job_name",
        user="test_username",
        partition="learn",
        state="RUNNING",
        elapsed_s=2 * 86400 + 5 * 3600 + 32 * 60 + 24,
        time_left_s=7 * 86400 - (2 * 86400 + 5 * 3600 + 32 * 60 + 24),
        gpus="gres/gpu=64",
    )


def test_scontrol_show_job_oneliner_capture_first_job_only():
    """-o: one job a line; a name with spaces ("OOD Code Server") keeps them."""
    text = (FIXTURES / "scontrol-show-job-oneliner_sonar-fox-pending-gpu.txt").read_text()
    job = parse_scontrol_job(text)
    assert job is not None
    assert (job.job_id, job.name, job.user, job.partition, job.state) == (
        1879824, "chai_ab_ag_champloo", "uc-10000", "accel", "PENDING")
    assert job.time_left_s == 86400.0 and job.gpus == "gres/gpu=1"  # AllocTRES (null): the request
    third = parse_key_values(text.splitlines()[2])
    assert third["JobName"] == "OOD Code Server" and third["UserId"] == "uc-10008"


def test_scontrol_job_gone():
    assert parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n") is None


def test_slurm_durations():
    assert slurm_duration_s("2-05:32:24") == 192744.0
    assert slurm_duration_s("12:00:00") == 43200.0
    assert slurm_duration_s("35:16") == 2116.0  # squeue's MM:SS
    assert slurm_duration_s("1-00:00:00") == 86400.0
    assert slurm_duration_s("UNLIMITED") is None
    assert slurm_duration_s("INVALID") is None


def test_docker_engine_inspect_capture():
    text = (FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json").read_text()
    cid = "b978af0b858aa8855cce46b628817d4ed58e58f2c4f66c9b9c5449134ed4c008"
    assert parse_docker_inspect(text, cid) == ContainerInfo(
        container_id=cid, engine="docker", name="portainer", image="portainer/portainer:latest",
        state="running", restart_policy="always", restart_count=0, oom_killed=False, health="",
        started_at="2019-04-13T22:38:24.498745809Z",
    )
    # the CLI prints the same object in an array
    assert parse_docker_inspect(f"[{text}]", cid) == parse_docker_inspect(text, cid)


def test_podman_capture_is_invalid_json_and_says_nothing():
    """The only permissive podman capture (the man page's) has trailing commas: no guess."""
    text = (FIXTURES / "podman-container-inspect_docs-example-INVALID-JSON.txt").read_text()
    assert parse_docker_inspect(text, "99f66530fe9c", "podman") is None


def test_crictl_inspect_capture_names_the_pod():
    text = (FIXTURES / "crictl-inspect_crio-k8s-container_litmus.json").read_text()
    info = parse_crictl_inspect(text, "c739a31ab698")
    assert info is not None
    assert (info.name, info.pod_name, info.pod_namespace, info.state, info.restart_count) == (
        "nginx-unprivileged", "app-7f99cf5459-gdqw7", "myteam", "CONTAINER_RUNNING", 0)
    assert info.image == "docker.io/nginxinc/nginx-unprivileged:latest"


def test_hostile_job_name_is_cleaned_once():
    job = parse_scontrol_job(f"JobId=7 JobName={HOSTILE} UserId=a(1) Partition=gpu JobState=RUNNING")
    assert job is not None and job.name.isprintable()


ALICE = JobInfo(48213, "llama-ft", "alice", "gpu", "RUNNING", 3600.0, 3 * 3600 + 12 * 60, "gres/gpu=8")


def gpu(*processes: GpuProcess) -> GpuSample:
    return GpuSample(3, processes=list(processes))


def test_gpu_holder_words():
    g = gpu(GpuProcess(11, "python", uid=1000, user="alice", slurm_job=48213, slurm_step="0"),
            GpuProcess(12, "python", uid=1000, user="alice", slurm_job=48213, slurm_step="0"))
    assert gpu_holder(g, {48213: ALICE}, {}) == "job 48213 llama-ft · alice · 3h12m left"
    assert gpu_holder(g, {}, {}) == "job 48213 · alice"  # before the job's facts arrive
    assert alert_holder(g, {48213: ALICE}) == "job 48213 (alice)"
    assert node_jobs([g]) == "48213"


def test_no_job_is_never_a_neighbours():
    stray = GpuProcess(13, "python", uid=0, user="root", outside_job=True)
    g = gpu(GpuProcess(11, "python", uid=1000, user="alice", slurm_job=48213), stray)
    assert process_holder(stray, {48213: ALICE}, {}) == NO_JOB
    assert gpu_holder(g, {48213: ALICE}, {}) == "job 48213 llama-ft · alice · 3h12m left; no job · root"
    assert alert_holder(gpu(stray), {48213: ALICE}) == "no job (root)"


def test_containers_and_pods_named():
    cid = "c739a31ab698e6e1c679442a538d16cc7199703c80f030e159b5de6b46e60518"
    p = GpuProcess(20, "nginx", uid=101, container_id=cid, container_runtime="crio", pod_uid="d2368c41")
    pod = ContainerInfo(cid, "crictl", name="nginx-unprivileged", pod_name="app-7f99", pod_namespace="myteam")
    assert process_holder(p, {}, {cid: pod}) == "pod myteam/app-7f99"
    assert process_holder(p, {}, {}) == "ctr c739a31ab698"
    holders = gpu_holders(gpu(p), {}, {cid: pod})
    assert dict(holders[0]) == {"job": None, "job_name": None, "user": "101", "container": "nginx-unprivileged",
                                "pod": "app-7f99", "namespace": "myteam"}


def test_fleet_jobs_cell():
    assert node_jobs([gpu()]) == "idle"
    many = [gpu(*(GpuProcess(i, slurm_job=i) for i in range(1, 6)))]
    assert node_jobs(many) == "1,2,3 +2"
    assert node_jobs([gpu(GpuProcess(1, user="bob", uid=1001))]) == "bob"


def test_exporter_series_bounded_per_gpu():
    g = gpu(*(GpuProcess(i, user=f"u{i}", uid=i) for i in range(50)))
    assert len(gpu_holders(g, {}, {})) == 4  # never a series per process
