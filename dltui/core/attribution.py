"""Whose work is on a GPU: what a Slurm job id and a container id mean, parsed, and the words
the screens, the alerts, the snapshot and the exporter say about a GPU's holder.

Pure functions over the tools' text (``scontrol show job -o ID``, ``docker inspect`` /
``podman inspect`` / ``crictl inspect``); the reads and their cache live in
``dltui.transport.attribution``. Text from a node is cleaned here, once (``dltui.core.text``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dltui.node.schema import inspect_fields

from .models import GpuProcess, GpuSample
from .text import clean

NO_JOB = "no job"  # a process a Slurm node placed in no job: never a neighbour's


@dataclass(frozen=True)
class JobInfo:
    """One Slurm job as ``scontrol show job`` says it."""

    job_id: int
    name: str = ""
    user: str = ""
    partition: str = ""
    state: str = ""  # RUNNING, COMPLETING, …
    elapsed_s: float | None = None
    time_left_s: float | None = None  # None: no limit (UNLIMITED) or unknown
    gpus: str = ""  # the allocated GPU TRES, e.g. "gres/gpu=8"


@dataclass(frozen=True)
class ContainerInfo:
    """One container as its engine's ``inspect`` says it."""

    container_id: str
    engine: str  # docker, podman, crictl
    name: str = ""
    image: str = ""
    state: str = ""  # running, exited, CONTAINER_RUNNING…
    restart_policy: str = ""  # no, always, unless-stopped, on-failure[:N]; "" for CRI
    restart_count: int | None = None
    oom_killed: bool | None = None
    health: str = ""  # healthy, unhealthy, starting; "" without a health check
    started_at: str = ""
    pod_name: str = ""  # CRI: the Kubernetes pod and namespace, from the container's labels
    pod_namespace: str = ""


# -- Slurm ----------------------------------------------------------------------------------

# "Key=" at the start or after a space; keys hold letters, digits and ":/_" (AllocNode:Sid,
# CPUs/Task). A value runs to the next key: JobName=OOD Code Server UserId=… keeps its spaces.
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/]*)=")


def parse_key_values(text: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol show`` record (``-o`` or the indented form)."""
    line = " ".join(part.strip() for part in text.strip().splitlines())
    found = list(_KEY.finditer(line))
    pairs: dict[str, str] = {}
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(line)
        pairs.setdefault(m.group(1), line[m.end() : end].strip())
    return pairs


def slurm_duration_s(text: str) -> float | None:
    """``[D-]HH:MM:SS``, ``MM:SS`` or ``M`` (minutes) as Slurm prints them; None for
    UNLIMITED, N/A, INVALID or anything else."""
    text = text.strip()
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        return None
    days = int(m.group(1) or 0)
    parts = [int(p) for p in m.group(2, 3, 4) if p is not None]
    if len(parts) == 3:
        h, mi, s = parts
    elif len(parts) == 2:
        h, mi, s = (0, *parts) if not m.group(1) else (parts[0], parts[1], 0)
    else:
        h, mi, s = (parts[0], 0, 0) if m.group(1) else (0, parts[0], 0)
    return float(((days * 24 + h) * 60 + mi) * 60 + s)


def parse_scontrol_job(text: str) -> JobInfo | None:
    """The first job of ``scontrol show job [-o] ID``; None when the text holds none
    (``slurm_load_jobs error: Invalid job id specified``)."""
    lines = text.strip().splitlines()
    record = lines[:1]
    for line in lines[1:]:  # the indented form's lines, up to the next job or a blank line
        if not line.strip() or line.startswith("JobId="):
            break
        record.append(line)
    kv = parse_key_values("\n".join(record))
    job = kv.get("JobId", "")
    if not job.isdigit():
        return None
    user = kv.get("UserId", "")
    user = user.split("(", 1)[0]  # "alice(1000)" -> "alice"
    elapsed = slurm_duration_s(kv.get("RunTime", ""))
    limit = slurm_duration_s(kv.get("TimeLimit", ""))
    left = None if limit is None or elapsed is None else max(0.0, limit - elapsed)
    tres = kv.get("AllocTRES", "")
    if tres in ("", "(null)"):
        tres = kv.get("ReqTRES", "")
    gpus = ",".join(t for t in tres.split(",") if t.startswith("gres/gpu"))
    return JobInfo(
        job_id=int(job),
        name=clean(kv.get("JobName", "")),
        user=clean(user),
        partition=clean(kv.get("Partition", "")),
        state=clean(kv.get("JobState", "")),
        elapsed_s=elapsed,
        time_left_s=left,
        gpus=clean(gpus),
    )


# -- containers -----------------------------------------------------------------------------


def _first_object(text: str) -> dict[str, Any] | None:
    """The object of an ``inspect`` output: the CLI's one-element array, or the Engine API's
    object; None for anything else (an engine's error, invalid JSON)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, list):
        data = data[0] if data else None
    return data if isinstance(data, dict) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return clean(value) if isinstance(value, str) else ""


def parse_docker_inspect(text: str, container_id: str, engine: str = "docker") -> ContainerInfo | None:
    """``docker inspect ID`` (or ``podman inspect ID``: close, not identical; both shapes read
    by the contract's one ``inspect_fields``, as the probe reads its configured containers)."""
    c = _first_object(text)
    if c is None:
        return None
    f = inspect_fields(c)
    return ContainerInfo(
        container_id=container_id,
        engine=engine,
        name=_str(f["name"]),
        image=_str(f["image"]),
        state=_str(f["state"]),
        restart_policy=_str(f["restart_policy"]),
        restart_count=f["restarts_total"],
        oom_killed=f["oom_killed"],
        health=_str(f["health"]),
        started_at=_str(f["started_at"]),
    )


def parse_crictl_inspect(text: str, container_id: str) -> ContainerInfo | None:
    """``crictl inspect ID``: the container's state and its pod's name and namespace."""
    c = _first_object(text)
    if c is None:
        return None
    status = _dict(c.get("status"))
    labels = _dict(status.get("labels"))
    annotations = _dict(status.get("annotations"))
    restarts = annotations.get("io.kubernetes.container.restartCount")
    return ContainerInfo(
        container_id=container_id,
        engine="crictl",
        name=_str(labels.get("io.kubernetes.container.name")) or _str(_dict(status.get("metadata")).get("name")),
        image=_str(_dict(status.get("image")).get("image")),
        state=_str(status.get("state")),
        restart_count=int(restarts) if isinstance(restarts, str) and restarts.isdigit() else None,
        oom_killed=(_str(status.get("reason")) == "OOMKilled") if status.get("reason") is not None else None,
        started_at=_str(status.get("startedAt")),
        pod_name=_str(labels.get("io.kubernetes.pod.name")),
        pod_namespace=_str(labels.get("io.kubernetes.pod.namespace")),
    )


# -- the words shown --------------------------------------------------------------------------


def short_duration(seconds: float | None) -> str:
    """``3h12m``, ``2d05h``, ``45m``, ``30s``."""
    if seconds is None:
        return "?"
    s = int(seconds)
    if s >= 86400:
        return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m"
    return f"{s}s"


def process_owner(p: GpuProcess) -> str:
    """The USER column: the name, else the uid, else ''."""
    if p.user:
        return p.user
    return "" if p.uid is None else str(p.uid)


def process_holder(p: GpuProcess, jobs: dict[int, JobInfo], containers: dict[str, ContainerInfo]) -> str:
    """The JOB / CONTAINER column: ``job 48213 llama-ft``, ``ctr trainer``, ``pod ns/name``,
    ``no job`` (a Slurm node placed it in none), or ''."""
    words = []
    if p.slurm_job is not None:
        job = jobs.get(p.slurm_job)
        words.append(f"job {p.slurm_job}" + (f" {job.name}" if job and job.name else ""))
    elif p.outside_job:
        words.append(NO_JOB)
    if p.container_id:
        info = containers.get(p.container_id)
        if info is not None and info.pod_name:
            words.append(f"pod {info.pod_namespace}/{info.pod_name}" if info.pod_namespace else f"pod {info.pod_name}")
        elif info is not None and info.name:
            words.append(f"ctr {info.name}")
        else:
            words.append(f"ctr {p.container_id[:12]}")
    elif p.pod_uid:
        words.append(f"pod {p.pod_uid[:8]}")
    return " · ".join(words)


def gpu_holder(gpu: GpuSample, jobs: dict[int, JobInfo], containers: dict[str, ContainerInfo]) -> str:
    """Who holds a GPU, in one line: ``job 48213 llama-ft · alice · 3h12m left``; several
    holders joined by ``; ``; '' when the GPU holds no process."""
    seen: list[str] = []
    for p in gpu.processes:
        if p.slurm_job is not None:
            job = jobs.get(p.slurm_job)
            parts = [f"job {p.slurm_job}" + (f" {job.name}" if job and job.name else "")]
            user = (job.user if job and job.user else "") or process_owner(p)
            if user:
                parts.append(user)
            if job is not None and job.time_left_s is not None:
                parts.append(f"{short_duration(job.time_left_s)} left")
            text = " · ".join(parts)
        else:
            holder = process_holder(p, jobs, containers)
            owner = process_owner(p)
            text = " · ".join(w for w in (holder, owner) if w)
        if text and text not in seen:
            seen.append(text)
    return "; ".join(seen)


MAX_HOLDERS_PER_GPU = 4  # the exporter's bound: series per GPU in dltui_gpu_job_info


def gpu_holders(
    gpu: GpuSample, jobs: dict[int, JobInfo], containers: dict[str, ContainerInfo]
) -> list[tuple[tuple[str, str | None], ...]]:
    """The distinct holders of a GPU as label pairs (``job``, ``job_name``, ``user``,
    ``container``, ``pod``, ``namespace``; unknown ones None), at most MAX_HOLDERS_PER_GPU:
    one per job, else per container, else per user — never per PID."""
    seen: list[tuple[tuple[str, str | None], ...]] = []
    for p in gpu.processes:
        job = jobs.get(p.slurm_job) if p.slurm_job is not None else None
        ctr = containers.get(p.container_id) if p.container_id else None
        user = (job.user if job and job.user else "") or process_owner(p)
        pairs = (
            ("job", str(p.slurm_job) if p.slurm_job is not None else (NO_JOB if p.outside_job else None)),
            ("job_name", job.name if job and job.name else None),
            ("user", user or None),
            ("container", (ctr.name if ctr and ctr.name else None) or (p.container_id or "")[:12] or None),
            ("pod", ctr.pod_name if ctr and ctr.pod_name else None),
            ("namespace", ctr.pod_namespace if ctr and ctr.pod_namespace else None),
        )
        if all(v is None for _, v in pairs) or pairs in seen:
            continue
        seen.append(pairs)
        if len(seen) == MAX_HOLDERS_PER_GPU:
            break
    return seen


def alert_holder(gpu: GpuSample | None, jobs: dict[int, JobInfo]) -> str:
    """What an alert on a GPU adds: ``job 48213 (alice)``, ``jobs 1, 2 (alice, bob)``,
    ``no job (carol)``, ``alice``; '' when the GPU holds nothing known."""
    if gpu is None or not gpu.processes:
        return ""
    job_ids: list[int] = []
    users: list[str] = []
    outside = False
    for p in gpu.processes:
        if p.slurm_job is not None and p.slurm_job not in job_ids:
            job_ids.append(p.slurm_job)
        outside = outside or bool(p.outside_job)
        job = jobs.get(p.slurm_job) if p.slurm_job is not None else None
        user = (job.user if job and job.user else "") or process_owner(p)
        if user and user not in users:
            users.append(user)
    who = f" ({', '.join(users)})" if users else ""
    if job_ids:
        label = "job" if len(job_ids) == 1 else "jobs"
        return f"{label} {', '.join(str(j) for j in job_ids)}{who}"
    if outside:
        return NO_JOB + who
    return ", ".join(users)


def node_jobs(gpus: Iterable[GpuSample], limit: int = 3) -> str:
    """The fleet row's JOBS cell: job ids (else users) on the node's GPUs, ``idle`` when the
    GPUs hold no process; more than ``limit`` end in ``+N``."""
    jobs: list[str] = []
    users: list[str] = []
    any_process = False
    for g in gpus:
        for p in g.processes:
            any_process = True
            if p.slurm_job is not None:
                if str(p.slurm_job) not in jobs:
                    jobs.append(str(p.slurm_job))
            else:
                owner = process_owner(p) or (NO_JOB if p.outside_job else "")
                if owner and owner not in users:
                    users.append(owner)
    if not any_process:
        return "idle"
    words = jobs + [u for u in users if u not in jobs]
    if not words:
        return "busy"
    more = len(words) - limit
    return ",".join(words[:limit]) + (f" +{more}" if more > 0 else "")


def gpu_matches_job(gpu: GpuSample, job: str) -> bool:
    return any(p.slurm_job is not None and str(p.slurm_job) == job for p in gpu.processes)


def gpu_matches_user(gpu: GpuSample, user: str, jobs: dict[int, JobInfo]) -> bool:
    for p in gpu.processes:
        if process_owner(p) == user:
            return True
        info = jobs.get(p.slurm_job) if p.slurm_job is not None else None
        if info is not None and info.user == user:
            return True
    return False
