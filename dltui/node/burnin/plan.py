"""A run's plan (plan.json) and its checks before anything is started: the run id, the GPU
stressor's name, the fio scratch folder (never a device, never an existing file, room enough)."""

from __future__ import annotations

import argparse
import binascii
import os
import re
import time
from typing import TypedDict

from dltui.node.burnin.places import Refused

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GPU_TOOLS = ("auto", "dcgm", "gpu-burn", "rvs", "torch", "none")
SMOKE_RAMP_S = 60.0  # the smoke test's first minute (loading, compiling) is not judged


class Plan(TypedDict, total=False):
    """plan.json: what ``start`` was asked, as the run and the operator's verdict read it."""

    run_id: str
    duration_s: int
    gpu: str
    cpu: bool
    memory: bool
    disk: str | None
    disk_size: str
    net: str | None
    expected_gpus: int | None
    preflight_s: float
    post_s: float
    interval_s: float
    sysfs: str  # where the node's sysfs is mounted ([probe] sysfs)
    smoke: str | None
    smoke_s: float
    smoke_ramp_s: float
    created: float
    scratch: str  # the fio scratch folder, when --disk was given
    unit: str  # the transient systemd unit, when started through systemd


def check_args(args: argparse.Namespace) -> None:
    """Refuses a run id or GPU choice this driver does not know."""
    if not RUN_ID.match(args.run_id):
        raise Refused("bad run id %r" % args.run_id)
    if args.gpu not in GPU_TOOLS:
        raise Refused("--gpu must be one of %s" % ", ".join(GPU_TOOLS))


def plan_from(args: argparse.Namespace) -> Plan:
    """The plan of ``start``'s arguments, the fio scratch folder chosen (and checked)."""
    plan: Plan = {
        "run_id": args.run_id,
        "duration_s": args.duration,
        "gpu": args.gpu,
        "cpu": args.cpu,
        "memory": args.memory,
        "disk": args.disk,
        "disk_size": args.disk_size,
        "net": args.net,
        "expected_gpus": args.expected_gpus,
        "preflight_s": args.preflight,
        "post_s": args.post,
        "interval_s": args.interval,
        "sysfs": args.sysfs,
        "smoke": args.smoke,
        "smoke_s": args.smoke_s,
        "smoke_ramp_s": args.smoke_ramp,
        "created": time.time(),
    }
    if args.disk:
        plan["scratch"] = scratch_for(args.disk, args.run_id, parse_size(args.disk_size))
    return plan


def parse_size(text: str) -> int:
    m = re.match(r"^(\d+)([KMGT]?)$", str(text).upper())
    if not m:
        raise Refused("bad size %r (use e.g. 512M or 4G)" % text)
    return int(m.group(1)) * 1024 ** "BKMGT".index(m.group(2) or "B")


def scratch_for(disk: str, run_id: str, size_bytes: int) -> str:
    """The fio scratch directory under ``disk``: a directory on a file system, never a device,
    never an existing file, with room for twice the job plus 10 %."""
    path = os.path.realpath(disk)
    if path == "/dev" or path.startswith("/dev/") or disk.startswith("/dev/"):
        raise Refused(
            "--disk %s is under /dev: burn-in writes only into a directory on a "
            "mounted file system, never to a device" % disk
        )
    if not os.path.exists(path):
        raise Refused("--disk %s does not exist" % disk)
    if not os.path.isdir(path):
        raise Refused(
            "--disk %s is not a directory (burn-in never writes into an existing "
            "file); give a directory on the file system to test" % disk
        )
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    need = int(2 * size_bytes * 1.1)
    if free < need:
        raise Refused(
            "--disk %s has %d MiB free; the fio jobs need %d MiB" % (disk, free >> 20, need >> 20)
        )
    # The host and a random part too: nodes may share one file system (NFS, a test lab).
    scratch = os.path.join(
        path,
        ".dltui-burnin-%s-%s-%s"
        % (run_id, os.uname()[1].split(".")[0], binascii.hexlify(os.urandom(3)).decode()),
    )
    if os.path.lexists(scratch):
        raise Refused("%s already exists; burn-in writes only into a fresh directory" % scratch)
    return scratch
