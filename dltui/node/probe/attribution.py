"""Who holds each GPU process: its owner, Slurm job and step, container and Kubernetes pod.

Read once per process, never per sample: a process is known by (PID, start time), so a PID the
kernel reuses for another program is read again, and one seen in the previous sample costs a
dict lookup. The owner is the owner of ``/proc/PID`` (uid -> name once per uid); the rest is
``/proc/PID/cgroup`` (v1 and v2):

- Slurm with ``proctrack/cgroup``: ``/slurm/uid_U/job_J/step_S`` (v1) or
  ``/system.slice/slurmstepd.scope/job_J/step_S/…`` (v2); the first ``/job_N`` is the job.
- containers: ``docker-<id>.scope`` and ``/docker/<id>`` (Docker), ``cri-containerd-<id>.scope``,
  ``crio-<id>.scope`` (Kubernetes), ``libpod-<id>.scope`` (podman, rootless under ``user@UID.service``);
  the pod from ``kubepods…-pod<uid>.slice`` (or ``/pod<uid>/`` with cgroupfs).

Where the cgroup says nothing about Slurm on a Slurm node (``proctrack/linuxproc``), one
``scontrol listpids`` (slurmd's own list of its jobs' PIDs on this node) is asked, and only when
a GPU process appears that has no job yet: a process outside every job is then "no job" for
good, never a neighbour's. Stdlib only, Python 3.8.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
from typing import Any, Callable, Dict

from .problems import Problems

Record = Dict[str, Any]

LISTPIDS_TIMEOUT_S = 5.0
# A GPU process that scontrol did not list (yet) is asked about again after this long, no sooner:
# a burst of new processes costs one scontrol, and a stuck slurmd is not asked every sample.
LISTPIDS_RETRY_S = 10.0
LISTPIDS_FAILED_RETRY_S = 60.0

_JOB = re.compile(r"/job_(\d+)(?:/step_([^/\s]+))?")
_HEX_ID = r"([0-9a-f]{64})"
# (pattern, runtime): the container id's cgroup name under each runtime.
_CONTAINERS = (
    (re.compile(r"/docker-" + _HEX_ID + r"\.scope"), "docker"),
    (re.compile(r"/docker/" + _HEX_ID + r"(?:/|$)"), "docker"),
    (re.compile(r"/cri-containerd-" + _HEX_ID + r"\.scope"), "containerd"),
    (re.compile(r"/crio-" + _HEX_ID + r"\.scope"), "crio"),
    (re.compile(r"/libpod-" + _HEX_ID + r"\.scope"), "podman"),
    # kubelet with the cgroupfs driver: /kubepods/<qos>/pod<uid>/<id>; the runtime is not named
    (re.compile(r"/kubepods/(?:[a-z]+/)?pod[0-9a-f-]{36}/" + _HEX_ID + r"(?:/|$)"), "cri"),
)
# systemd driver: kubepods-burstable-pod7a96c459_d529_….slice (dashes escaped as underscores)
_POD = re.compile(r"kubepods[^\n]*?[-/]pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")


def parse_cgroup(text: str) -> Record:
    """The Slurm job/step, container and pod named by a ``/proc/PID/cgroup`` text, as process
    record fields; only those found are set (an empty dict: a plain host process)."""
    found: Record = {}
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        if "slurm_job" not in found:
            job = _JOB.search(path)
            if job is not None and ("slurm" in path):
                found["slurm_job"] = int(job.group(1))
                if job.group(2):
                    found["slurm_step"] = job.group(2)
        if "container_id" not in found:
            for pattern, runtime in _CONTAINERS:
                match = pattern.search(path)
                if match is not None:
                    found["container_id"] = match.group(1)
                    found["container_runtime"] = runtime
                    break
        if "pod_uid" not in found:
            pod = _POD.search(path)
            if pod is not None:
                found["pod_uid"] = pod.group(1).replace("_", "-")
    return found


def parse_listpids(text: str) -> dict[int, tuple[int, str]]:
    """``scontrol listpids`` -> {pid: (job, step)}; the header and anything else skipped."""
    pids: dict[int, tuple[int, str]] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 3 and cols[0].isdigit() and cols[1].isdigit():
            pids[int(cols[0])] = (int(cols[1]), cols[2])
    return pids


def start_time(proc: str, pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or
    None when it is gone."""
    try:
        with open("%s/%d/stat" % (proc, pid), "rb") as f:
            stat = f.read()
    except (OSError, ValueError):
        return None
    # the name (field 2) may hold spaces and parentheses: count from the last ')'
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


class Attributor:
    """Adds owner, job, container and pod fields to the GPU processes of each sample."""

    def __init__(
        self,
        problems: Problems,
        proc: str = "/proc",
        scontrol: str | None = None,
        run: Callable[..., Any] = subprocess.run,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.problems = problems
        self.proc = proc
        self.scontrol = scontrol if scontrol is not None else (shutil.which("scontrol") or "")
        self.run = run
        self.clock = clock
        self.known: dict[tuple[int, int], Record] = {}  # (pid, start time) -> fields
        # pid -> ((pid, start time), fields) for the PIDs of the last sample
        self.live: dict[int, tuple[tuple[int, int], Record]] = {}
        self.users: dict[int, str | None] = {}
        self.waiting: dict[tuple[int, int], Record] = {}  # no job yet, scontrol to be asked
        self.lists: list[Any] = []  # the process lists of the last sample, as handed to mark()
        self.listpids_at: float | None = None
        self.listpids_runs = 0
        self.cgroup_reads = 0

    @property
    def slurm(self) -> bool:
        """Whether this node runs Slurm jobs (scontrol is here)."""
        return bool(self.scontrol)

    def mark(self, gpus: list[Record]) -> None:
        """Set the attribution fields on every process of ``gpus`` (dicts of one sample)."""
        lists = [g.get("processes") for g in gpus]
        last = self.lists
        if not self.waiting and len(lists) == len(last) and all(a is b for a, b in zip(lists, last)):
            return  # the GPU source handed the same process dicts again (between its refreshes)
        self.lists = lists
        previous = self.live
        live: dict[int, tuple[tuple[int, int], Record]] = {}
        placed_later: list[tuple[Record, Record]] = []
        for procs in lists:
            for p in procs or ():
                pid = p.get("pid")
                entry = live.get(pid)
                if entry is None:
                    entry = previous.get(pid)
                    if entry is None:  # new: read once
                        if not isinstance(pid, int):
                            continue
                        entry = self._fields(pid)
                    live[pid] = entry
                key, fields = entry
                if fields:
                    p.update(fields)
                if key in self.waiting:
                    placed_later.append((p, fields))
        self.live = live
        if self.waiting:
            self._ask_scontrol()
            for p, fields in placed_later:  # scontrol's answer, this very sample
                p.update(fields)
        if len(self.known) > 4 * len(live) + 64:  # forget processes long gone (bounded memory)
            keep = {key for key, _ in live.values()}
            self.known = {k: v for k, v in self.known.items() if k in keep}

    def _fields(self, pid: int) -> tuple[tuple[int, int], Record]:
        started = start_time(self.proc, pid)
        key = (pid, -1 if started is None else started)
        if started is None:  # gone already: nothing to say, and nothing kept
            return key, {}
        fields = self.known.get(key)
        if fields is not None:
            return key, fields
        fields = self._read(pid)
        if self.slurm and "slurm_job" not in fields:
            self.waiting[key] = fields  # filled in place when scontrol answers
        self.known[key] = fields
        return key, fields

    def _read(self, pid: int) -> Record:
        fields: Record = {}
        try:
            uid = os.stat("%s/%d" % (self.proc, pid)).st_uid
        except OSError:
            return fields
        fields["uid"] = uid
        user = self._user(uid)
        if user is not None:
            fields["user"] = user
        self.cgroup_reads += 1
        try:
            with open("%s/%d/cgroup" % (self.proc, pid)) as f:
                fields.update(parse_cgroup(f.read()))
        except (OSError, ValueError):
            pass
        return fields

    def _user(self, uid: int) -> str | None:
        if uid not in self.users:
            try:
                self.users[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:  # a uid without a name here (a container's user namespace)
                self.users[uid] = None
        return self.users[uid]

    def _ask_scontrol(self) -> None:
        now = self.clock()
        if self.listpids_at is not None and now - self.listpids_at < LISTPIDS_RETRY_S:
            return
        self.listpids_at = now
        self.listpids_runs += 1
        try:
            done = self.run(
                [self.scontrol, "listpids"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=LISTPIDS_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self._listpids_failed("scontrol listpids failed: %s" % exc)
            return
        if done.returncode != 0:
            words = (done.stderr or done.stdout or "").strip().splitlines()
            self._listpids_failed(
                "scontrol listpids: %s" % (words[0] if words else "exit status %d" % done.returncode)
            )
            return
        self.problems.clear("slurm jobs")
        jobs = parse_listpids(done.stdout)
        euid = os.geteuid()
        for (pid, _), fields in self.waiting.items():
            if pid in jobs:
                fields["slurm_job"], fields["slurm_step"] = jobs[pid]
            elif euid == 0 or fields.get("uid") == euid:
                # in no job on this node (never a neighbour's). Said only where slurmd shows us
                # every job: a cluster with PrivateData=jobs hides other users' from a non-root
                # probe, and their processes are then left unplaced rather than called strays.
                fields["outside_job"] = True
        self.waiting = {}

    def _listpids_failed(self, message: str) -> None:
        """Said once; the processes stay unplaced and are asked about again a minute later."""
        self.problems.report("slurm jobs", message)
        self.listpids_at = self.clock() + LISTPIDS_FAILED_RETRY_S - LISTPIDS_RETRY_S

