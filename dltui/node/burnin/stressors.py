"""The stressors: one process each in its own process group, its output in a file of the run
folder; which tool the node has and the command line each one gets (gpu_burn, dcgmi diag, a
torch matmul per GPU, stress-ng, fio, iperf3)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess

from dltui.node.burnin import parse, rvs
from dltui.node.burnin.places import Result, RunDir

STOP_GRACE_S = 20.0  # how long a stressor gets after SIGTERM before SIGKILL

# The torch stressor: one process per GPU, a fixed fp16 product checked against its first
# result (a GPU that computes wrong answers under load is faulty even when it does not crash).
MATMUL = r"""
import json, os, sys, time
import torch
gpu, deadline, n = int(sys.argv[1]), time.time() + float(sys.argv[2]), 8192
torch.manual_seed(1234)
dev = torch.device("cuda:0")
a = torch.randn(n, n, device=dev, dtype=torch.float16)
b = torch.randn(n, n, device=dev, dtype=torch.float16)
ref = a @ b
torch.cuda.synchronize()
iters = errors = 0
t0 = time.time()
while time.time() < deadline:
    for _ in range(50):
        c = a @ b
    torch.cuda.synchronize()
    iters += 50
    if not torch.equal(c, ref):
        errors += 1
    dt = time.time() - t0
    print(json.dumps({"gpu": gpu, "t": round(dt, 2), "iters": iters,
                      "tflops": round(2 * n ** 3 * iters / dt / 1e12, 1), "errors": errors}),
          flush=True)
print(json.dumps({"gpu": gpu, "result": "FAULTY" if errors else "OK"}), flush=True)
sys.exit(1 if errors else 0)
"""


class Stressor:
    """One stressor process in its own process group, its output in a file of the run dir."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        out_path: str,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.name = name  # its entry in result.json: gpu, cpu, disk, net, nccl, smoke
        self.argv = argv
        self.out_path = out_path
        self.out = open(out_path, "ab")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=cwd,
        )
        self.exit_code: int | None = None

    def poll(self) -> int | None:
        if self.exit_code is None:
            code = self.proc.poll()
            if code is not None:
                self.exit_code = code
                self.out.close()
        return self.exit_code

    def terminate(self) -> None:
        if self.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.poll()


def spawn(
    run: RunDir,
    result: Result,
    key: str,
    tool: str,
    argv: list[str],
    out: str,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> Stressor | None:
    """Starts ``tool`` as result[key]'s stressor, said in run.log; one that cannot start is
    recorded as not run, with why."""
    run.log("start %s: %s" % (tool, " ".join(argv)))
    try:
        s = Stressor(key, argv, run.path(out), env=env, cwd=cwd or run.dir)
    except OSError as exc:
        result[key] = {"tool": None, "reason": "%s could not start: %s" % (tool, exc)}
        return None
    result[key] = {"tool": tool, "exit_code": None, "output": out}
    return s


def last_words(path: str, tail_bytes: int = 4096) -> str:
    """The last non-empty line of a stressor's output (what it said as it failed), shortened."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail_bytes))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [x for x in tail.replace("\r", "\n").splitlines() if x.strip()]
    return parse.shorten(lines[-1]) if lines else ""


# --- what the node has ------------------------------------------------------------------------


def gpu_tool(choice: str) -> str | None:
    """The GPU stressor to run for ``--gpu choice`` (auto: gpu_burn, else dcgmi, else AMD's
    rvs, else torch)."""
    if choice in ("auto", "gpu-burn") and shutil.which("gpu_burn"):
        return "gpu-burn"
    if choice in ("auto", "dcgm") and shutil.which("dcgmi"):
        return "dcgm"
    if choice in ("auto", "rvs") and rvs.rvs_path():
        return "rvs"
    if choice in ("auto", "torch") and has_torch():
        return "torch"
    return None


def no_gpu_tool_reason(choice: str) -> str:
    if choice == "none":
        return "no GPU stressor: --gpu none"
    if choice == "auto":
        return "no GPU stressor found on the node (gpu_burn, dcgmi, rvs, python3 with torch)"
    return "%s is not available on the node" % choice


def has_torch() -> bool:
    try:
        return (
            subprocess.call(
                ["python3", "-c", "import torch"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=60,
            )
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def fio_has(engine: str) -> bool:
    try:
        out = subprocess.run(
            ["fio", "--enghelp"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return engine in out


def direct_ok(scratch: str) -> bool:
    """Whether the scratch folder's file system takes O_DIRECT (tmpfs and some FUSE do not)."""
    probe = os.path.join(scratch, ".direct-probe")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | getattr(os, "O_DIRECT", 0), 0o600)
        os.close(fd)
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(probe)
        except OSError:
            pass


def line_rate_mbps(host: str, sysfs: str = "/sys") -> int | None:
    """The speed of the link the route to ``host`` leaves by, when the kernel knows it."""
    try:
        out = subprocess.run(
            ["ip", "route", "get", host],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=10,
        ).stdout
        m = re.search(r"\bdev (\S+)", out)
        if m is None:
            return None
        with open("%s/class/net/%s/speed" % (sysfs, m.group(1))) as f:
            speed = int(f.read().strip())
        return speed if speed > 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


# --- command lines ----------------------------------------------------------------------------


def stress_ng_argv(duration_s: int, cpu: bool, memory: bool) -> list[str]:
    argv = ["stress-ng", "--verify", "--metrics-brief", "--tz", "-t", "%ds" % duration_s]
    if cpu:
        argv += ["--cpu", "0"]
    if memory:
        argv += ["--vm", "4", "--vm-bytes", "60%"]
    return argv


def fio_argv(scratch: str, size: str, runtime_s: int, engine: str, direct: bool) -> list[str]:
    """Sequential write, read, random read, then a verified write, one after the other."""
    common = [
        "fio",
        "--output-format=json",
        "--directory=" + scratch,
        "--direct=" + ("1" if direct else "0"),
        "--ioengine=" + engine,
        "--group_reporting",
        "--size=" + size,
        "--bs=1M",
        "--iodepth=16",
    ]
    jobs = [
        "--name=seqwrite",
        "--rw=write",
        "--time_based",
        "--runtime=%d" % runtime_s,
        "--name=seqread",
        "--stonewall",
        "--rw=read",
        "--time_based",
        "--runtime=%d" % runtime_s,
        "--name=randread",
        "--stonewall",
        "--rw=randread",
        "--bs=4k",
        "--time_based",
        "--runtime=%d" % runtime_s,
        "--name=verify",
        "--stonewall",
        "--rw=write",
        "--verify=crc32c",
        "--verify_fatal=1",
    ]
    return common + jobs


def iperf_argv(peer: str, seconds: int) -> list[str]:
    host, _, port = peer.partition(":")
    return ["iperf3", "-c", host, "-t", str(seconds), "-P", "8", "-J"] + (
        ["-p", port] if port else []
    )
