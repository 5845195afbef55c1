"""A real Slurm for tests: slurmctld + slurmd + munged (Debian's slurm-wlm 22.05) on loopback.

One node whose NodeName is this machine's short hostname (so a node asks ``scontrol show node
$(hostname -s)`` as on a real cluster), partition ``gpu``, ``proctrack/linuxproc`` (no cgroup
setup). Everything lives in one temp directory: slurm.conf, state, spool, logs, and munge's own
key, socket, pid, seed and log (never ``/etc/munge``, ``/run/munge``, ``/var/lib/munge``). The
directory is world-traversable (0755) because jobs run as another user (``nobody``), whose
client commands must reach the munge socket and read slurm.conf.

The daemons run in the foreground as our own children (``-D`` / ``-F``), so ``close()`` stops
exactly the PIDs it started, then the job steps and job processes this lab's slurmd spawned
(found by this lab's directory in their environment), and removes the directory.

Ports come from the kernel (bind to port 0), with a retry when a daemon loses the race, so each
pytest-xdist worker boots a lab of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
MUNGED = "/usr/sbin/munged"
READY_TIMEOUT_S = 30.0
NOBODY = 65534
# a real compute-apps capture, its PIDs replaced by a job's to put the job on a fake GPU
APPS_CAPTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"
                / "h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv")
# Where a Slurm or munge installed by a package keeps its state: close() and the host test check
# that a lab leaves them as they were.
HOST_PATHS = (
    "/etc/munge", "/run/munge", "/var/lib/munge", "/var/log/munge",
    "/etc/slurm", "/run/slurm", "/run/slurmctld", "/run/slurmd",
    "/var/lib/slurm", "/var/spool/slurmd", "/var/spool/slurmctld", "/var/log/slurm",
    "/var/log/slurmctld.log", "/var/log/slurmd.log",
)


def apps_with_pids(pids: list[int]) -> str:
    """The real compute-apps capture with its processes' PIDs replaced by ``pids`` (the GPU's
    UUID is the fake's; nvidia-smi reports host PIDs)."""
    header, *rows = APPS_CAPTURE.read_text().splitlines()
    out = [header]
    for pid, row in zip(pids, rows[: len(pids)], strict=True):
        cells = row.split(", ")
        cells[5] = str(pid)
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


class SlurmLabError(RuntimeError):
    pass


def missing() -> str | None:
    """Why this machine cannot boot the lab, or None."""
    for tool in (SLURMCTLD, SLURMD, MUNGED, shutil.which("sbatch") or "sbatch", shutil.which("scontrol") or "scontrol"):
        if not os.path.exists(tool):
            return f"{tool} is missing: apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "the Slurm lab runs as root (slurmd starts jobs as another user)"
    return None


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_state(paths: Sequence[str] = HOST_PATHS) -> dict[str, tuple]:
    """Every file under ``paths``: (kind, size, mtime, mode) — what a lab must leave unchanged."""
    seen: dict[str, tuple] = {}
    for top in paths:
        if not os.path.lexists(top):
            continue
        for root, dirs, files in os.walk(top) if os.path.isdir(top) else [("", [], [top])]:
            for name in [root, *(os.path.join(root, f) for f in (*dirs, *files))]:
                if not name:
                    continue
                st = os.lstat(name)
                seen[name] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return seen


class SlurmLab:
    """One real Slurm cluster of one node. ``start()`` returns self; ``env`` holds SLURM_CONF."""

    def __init__(self, node_name: str | None = None):
        self.node_name = node_name or short_hostname()
        self.dir = Path(tempfile.mkdtemp(prefix="dltui-slurmlab-"))
        self.dir.chmod(0o755)
        self.conf = self.dir / "slurm.conf"
        self.socket = self.dir / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen] = {}
        self.ctld_port = 0

    @property
    def env(self) -> dict[str, str]:
        """What a Slurm client needs: the lab's slurm.conf (which names the munge socket)."""
        return {"SLURM_CONF": str(self.conf)}

    def _client_env(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    # ---- boot -------------------------------------------------------------------------------

    def start(self) -> SlurmLab:
        for sub in ("state", "spool", "log", "munge", "jobs"):
            (self.dir / sub).mkdir()
        (self.dir / "jobs").chmod(0o1777)  # jobs of any user write their output here
        self._start_munge()
        for _ in range(5):
            self.ctld_port, slurmd_port = _free_port(), _free_port()
            self._write_conf(self.ctld_port, slurmd_port)
            if self._start_slurm():
                return self
            self._stop_daemons(("slurmd", "slurmctld"))  # a port was taken between probe and bind
        raise SlurmLabError(f"the Slurm lab did not come up:\n{self.logs()}")

    def _start_munge(self) -> None:
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        # --force: munged as root, in a temp dir whose parents it would call insecure.
        self.procs["munged"] = subprocess.Popen(
            [MUNGED, "-F", "--force", f"--socket={self.socket}", f"--key-file={key}",
             f"--pid-file={self.dir / 'munge' / 'munged.pid'}", f"--seed-file={self.dir / 'munge' / 'munged.seed'}",
             f"--log-file={self.dir / 'log' / 'munged.log'}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "log" / "munged.err", "w"), start_new_session=True,
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.socket.exists():
            if self.procs["munged"].poll() is not None or time.monotonic() > deadline:
                raise SlurmLabError(f"munged did not start:\n{self.logs()}")
            time.sleep(0.02)
        self.socket.chmod(0o777)  # any user's client reaches it (munged makes it so; be sure)

    def _write_conf(self, ctld_port: int, slurmd_port: int) -> None:
        d = self.dir
        self.conf.write_text(
            "ClusterName=lab\n"
            "SlurmctldHost=localhost\n"
            f"SlurmctldPort={ctld_port}\n"
            f"SlurmdPort={slurmd_port}\n"
            "SlurmUser=root\n"
            "AuthType=auth/munge\n"
            f"AuthInfo=socket={self.socket}\n"
            f"StateSaveLocation={d / 'state'}\n"
            f"SlurmdSpoolDir={d / 'spool'}\n"
            f"SlurmctldPidFile={d / 'slurmctld.pid'}\n"
            f"SlurmdPidFile={d / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}\n"
            f"SlurmdLogFile={d / 'log' / 'slurmd.log'}\n"
            "ProctrackType=proctrack/linuxproc\n"
            "TaskPlugin=task/none\n"
            "JobAcctGatherType=jobacct_gather/none\n"
            "ReturnToService=2\n"
            "SchedulerType=sched/backfill\n"
            "SelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_Core\n"
            "DefMemPerCPU=100\n"
            "MinJobAge=300\n"
            f"NodeName={self.node_name} NodeHostname=localhost CPUs={os.cpu_count() or 1} "
            "RealMemory=1000 State=UNKNOWN\n"
            f"PartitionName=gpu Nodes={self.node_name} Default=YES MaxTime=INFINITE State=UP\n"
        )
        self.conf.chmod(0o644)

    def _start_slurm(self) -> bool:
        env = self._client_env()
        self.procs["slurmctld"] = subprocess.Popen(
            [SLURMCTLD, "-D", "-i", "-f", str(self.conf)], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self.procs["slurmd"] = subprocess.Popen(
            [SLURMD, "-D", "-f", str(self.conf), "-N", self.node_name], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(self.procs[d].poll() is not None for d in ("slurmctld", "slurmd")):
                return False
            if self.node_state().split("+")[0] in ("IDLE", "MIXED", "ALLOCATED"):
                return True
            time.sleep(0.2)
        return False

    # ---- client helpers ---------------------------------------------------------------------

    def run(self, *argv: str, user: int | None = None, check: bool = True) -> subprocess.CompletedProcess:
        """A Slurm client command against this lab, as root or as ``user`` (a uid; setpriv)."""
        prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
        return subprocess.run(
            [*prefix, *argv], env=self._client_env(), capture_output=True, text=True, check=check,
            cwd=self.dir / "jobs", timeout=30,
        )

    def scontrol(self, *args: str, check: bool = True) -> str:
        return self.run("scontrol", *args, check=check).stdout

    def node_state(self) -> str:
        """The node's State= as scontrol prints it (``IDLE``, ``IDLE+DRAIN``…); '' when unreachable."""
        out = self.run("scontrol", "show", "node", "-o", self.node_name, check=False).stdout
        m = re.search(r"\bState=(\S+)", out)
        return m.group(1) if m else ""

    def node_reason(self) -> str:
        out = self.scontrol("show", "node", "-o", self.node_name)
        m = re.search(r"\bReason=(.*?)(?= \w+=|$)", out.strip())
        return m.group(1) if m else ""

    def submit(self, script: str, *sbatch_args: str, user: int = NOBODY) -> int:
        """``sbatch`` a shell script as ``user`` (default nobody); returns the job id."""
        path = self.dir / "jobs" / f"job-{time.monotonic_ns()}.sh"
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(0o755)
        out = self.run("sbatch", "--parsable", f"--chdir={self.dir / 'jobs'}", "-o", str(self.dir / "jobs" / "%j.out"),
                       *sbatch_args, str(path), user=user).stdout
        return int(out.strip().split(";")[0])

    def job_state(self, job: int) -> str:
        out = self.run("scontrol", "show", "job", "-o", str(job), check=False).stdout
        m = re.search(r"\bJobState=(\S+)", out)
        return m.group(1) if m else ""

    def wait_job(self, job: int, states: Sequence[str] = ("RUNNING",), timeout_s: float = READY_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.job_state(job)
            if state in states:
                return state
            time.sleep(0.1)
        raise SlurmLabError(f"job {job} never reached {states} (last {self.job_state(job)!r}):\n{self.logs()}")

    def job_pids(self, job: int, timeout_s: float = READY_TIMEOUT_S) -> list[int]:
        """The job's processes as Slurm lists them (``scontrol listpids``), slurmstepd excluded;
        waited for: a job reads RUNNING a moment before slurmd lists its step's processes."""
        deadline = time.monotonic() + timeout_s
        while True:
            out = self.run("scontrol", "listpids", str(job), check=False).stdout
            pids = []
            for line in out.splitlines()[1:]:
                parts = line.split()
                if parts and parts[0].isdigit() and parts[0] != "-1":
                    pids.append(int(parts[0]))
            if pids or time.monotonic() > deadline:
                return pids
            time.sleep(0.1)

    def cancel_all(self) -> None:
        self.run("scancel", "--full", "--partition=gpu", check=False)

    def idle(self, timeout_s: float = READY_TIMEOUT_S) -> str:
        """Every job cancelled and gone (a cancelled job stays COMPLETING a moment, the node
        MIXED), and the node answering (just after a resume it reads NOT_RESPONDING a moment):
        what a test that reads the node's state starts from. Returns the state."""
        self.cancel_all()
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.node_state()
            busy = any(word in state for word in ("MIXED", "ALLOCATED", "COMPLETING", "NOT_RESPONDING", "DOWN"))
            if not busy or time.monotonic() > deadline:
                return state
            time.sleep(0.1)

    def logs(self) -> str:
        parts = []
        for name in ("munged.err", "munged.log", "slurmctld.log", "slurmd.log"):
            path = self.dir / "log" / name
            if path.exists():
                parts.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(parts)

    # ---- shutdown -----------------------------------------------------------------------------

    def _ours(self, proc: psutil.Process) -> bool:
        """A job step or job process of this lab: a slurmstepd, or a process in a job
        (SLURM_JOB_ID), whose environment names this lab's directory."""
        try:
            env = proc.environ()
            in_job = proc.name() == "slurmstepd" or "SLURM_JOB_ID" in env
            return in_job and any(str(self.dir) in v for v in env.values())
        except (psutil.Error, OSError):
            return False

    def _stop_daemons(self, names: Sequence[str]) -> None:
        for name in names:
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def close(self) -> None:
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.cancel_all()
        # job steps and their processes, each by PID: slurmstepd and the jobs it started carry
        # SLURM_CONF (this lab's path) in their environment; a job that double-forked still does.
        leftovers = [p for p in psutil.process_iter() if p.pid != os.getpid() and self._ours(p)
                     and p.pid not in {d.pid for d in self.procs.values()}]
        self._stop_daemons(("slurmd", "slurmctld", "munged"))
        for proc in leftovers:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(leftovers, timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)
