"""The burn-in driver: the part of a burn-in that runs on the node, detached from dltui.

Shipped as one self-contained file (``ship.py``) with the probe's collectors and the stressor
readers; stdlib only, Python 3.8 syntax. Modes:

- ``start``: validates the plan, takes the node's burn-in lock (a second start is refused),
  makes the run directory, and launches ``run`` detached: a transient systemd unit when root on
  a systemd node, else a new session (setsid) with every stream redirected, so the SSH channel
  that started it closes and a dropped connection cannot reach it. Prints one JSON line.
- ``run``: preflight (baselines), load (the stressors, for the duration), post (deltas); a
  probe sample every second into ``samples.jsonl``; ``status.json`` rewritten atomically.
- ``follow --offset N``: what ``samples.jsonl`` holds from byte N on, plus status lines, until
  the run has ended and everything was read. dltui reattaches with the offset it had.
- ``stop``: ends the run (the run then stops its stressors and deletes its scratch files).

Run directory (``/var/lib/dltui/burnin/<run>/`` as root, else
``~/.local/state/dltui/burnin/<run>/``; ``$DLTUI_BURNIN_DIR`` overrides the base): plan.json,
driver.py, pid, run.log, status.json, samples.jsonl, the stressors' output, result.json,
exit_code.
"""

from __future__ import annotations

import argparse
import binascii
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from dltui.node.burnin import parse
from dltui.node.probe.collect import Collector
from dltui.node.probe.main import until_next_tick
from dltui.node.probe.problems import Problems
from dltui.node.schema import PROTOCOL
from dltui.node.wire import Encoder

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GPU_TOOLS = ("auto", "dcgm", "gpu-burn", "torch", "none")
EXIT_REFUSED = 4  # start refused (bad plan, or a burn-in already running)
STOP_GRACE_S = 20.0  # how long stressors get after SIGTERM before SIGKILL
FINISH_GRACE_S = 120.0  # past the duration, before a stressor that did not end is stopped
NCCL_MAX_S = 900.0  # all_reduce_perf 1G..8G on one node takes minutes; stopped after this
SMOKE_RAMP_S = 60.0  # the smoke test's first minute (loading, compiling) is not judged

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


# --- places --------------------------------------------------------------------------------


def base_dir():
    override = os.environ.get("DLTUI_BURNIN_DIR")
    if override:
        return override
    if os.geteuid() == 0:
        return "/var/lib/dltui/burnin"
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(state, "dltui", "burnin")


def write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


# --- start ---------------------------------------------------------------------------------


class Refused(Exception):
    """The plan cannot run here; the message says why in plain words."""


def parse_size(text):
    m = re.match(r"^(\d+)([KMGT]?)$", str(text).upper())
    if not m:
        raise Refused("bad size %r (use e.g. 512M or 4G)" % text)
    return int(m.group(1)) * 1024 ** "BKMGT".index(m.group(2) or "B")


def scratch_for(disk, run_id, size_bytes):
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


def take_lock(base):
    """The node's burn-in lock (flock on base/lock): held by the running driver for its life."""
    os.makedirs(base, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(base, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        active = ""
        try:
            with open(os.path.join(base, "active")) as f:
                active = f.read().strip()
        except OSError:
            pass
        raise Refused(  # noqa: B904 - the reason is the other run, not the OSError
            "a burn-in is already running on this node%s; stop it first"
            % (" (run %s)" % active if active else "")
        )
    return fd


def systemd_usable():
    return (
        os.geteuid() == 0
        and os.path.isdir("/run/systemd/system")
        and bool(shutil.which("systemd-run"))
    )


def cmd_start(args):
    try:
        if not RUN_ID.match(args.run_id):
            raise Refused("bad run id %r" % args.run_id)
        if args.gpu not in GPU_TOOLS:
            raise Refused("--gpu must be one of %s" % ", ".join(GPU_TOOLS))
        base = base_dir()
        lock_fd = take_lock(base)
        run_dir = os.path.join(base, args.run_id)
        plan = {
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
            "smoke": args.smoke,
            "smoke_s": args.smoke_s,
            "smoke_ramp_s": args.smoke_ramp,
            "created": time.time(),
        }
        if args.disk:
            plan["scratch"] = scratch_for(args.disk, args.run_id, parse_size(args.disk_size))
        try:
            os.mkdir(run_dir, 0o700)
        except OSError as exc:
            raise Refused(
                "cannot create the run directory %s: %s" % (run_dir, exc.strerror)
            ) from None
    except Refused as exc:
        if args.self_path:
            os.unlink(args.self_path)  # the script sent for this start: nothing is left behind
        emit({"ok": False, "reason": str(exc)})
        return EXIT_REFUSED
    write_json_atomic(os.path.join(run_dir, "plan.json"), plan)
    driver = os.path.join(run_dir, "driver.py")
    shutil.copyfile(args.self_path or os.path.abspath(sys.argv[0]), driver)
    if args.self_path:
        os.unlink(args.self_path)
    with open(os.path.join(base, "active"), "w") as f:
        f.write(args.run_id + "\n")
    log = os.path.join(run_dir, "run.log")
    python = sys.executable or "python3"
    launcher = args.launcher
    if launcher == "auto":
        launcher = "systemd" if systemd_usable() else "setsid"
    if launcher == "systemd":
        plan["unit"] = "dltui-burnin-%s" % args.run_id  # stop goes through systemctl then
        write_json_atomic(os.path.join(run_dir, "plan.json"), plan)
        return _start_systemd(args, plan, run_dir, driver, python, log, lock_fd)
    argv = [python, "-I", "-S", driver, "run", "--dir", run_dir, "--lock-fd", str(lock_fd)]
    with open(os.devnull, "rb") as devnull, open(log, "ab") as out:
        # A new session: the SSH session's hang-up does not reach it, and with every stream
        # redirected the channel that started it closes as soon as we exit.
        proc = subprocess.Popen(
            argv,
            stdin=devnull,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(lock_fd,),
            cwd=run_dir,
        )
    emit({"ok": True, "run_id": args.run_id, "dir": run_dir, "launcher": "setsid", "pid": proc.pid})
    return 0


def _start_systemd(args, plan, run_dir, driver, python, log, lock_fd):
    """root + systemd: a transient unit (no --collect: Result and ExecMainStatus must stay)."""
    os.close(lock_fd)  # the unit's driver takes the lock; the unit name is a lock as well
    unit = "dltui-burnin-%s" % args.run_id
    argv = [
        "systemd-run",
        "--unit=" + unit,
        "--description=dltui burn-in %s" % args.run_id,
        "--remain-after-exit",
        "-p",
        "RuntimeMaxSec=%d" % (plan["duration_s"] + 3600),
        # The stressors are looked up on the PATH the operator's session had, not the unit's.
        "--setenv=PATH=" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "-p",
        "StandardOutput=append:" + log,
        "-p",
        "StandardError=append:" + log,
        python,
        "-I",
        "-S",
        driver,
        "run",
        "--dir",
        run_dir,
    ]
    proc = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if proc.returncode != 0:
        emit({"ok": False, "reason": "systemd-run failed: %s" % proc.stdout.strip()[-300:]})
        return EXIT_REFUSED
    emit({"ok": True, "run_id": args.run_id, "dir": run_dir, "launcher": "systemd", "unit": unit})
    return 0


# --- run -----------------------------------------------------------------------------------


class Stressor:
    """One stressor process in its own process group, its output in a file of the run dir."""

    def __init__(self, name, argv, out_path, env=None, cwd=None):
        self.name = name
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
        self.exit_code = None

    def poll(self):
        if self.exit_code is None:
            code = self.proc.poll()
            if code is not None:
                self.exit_code = code
                self.out.close()
        return self.exit_code

    def terminate(self):
        if self.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass

    def kill(self):
        if self.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.poll()


class Run:
    def __init__(self, run_dir):
        self.dir = run_dir
        self.plan = read_json(self.path("plan.json"))
        self.interval = float(self.plan.get("interval_s") or 1.0)
        self.stop_asked = False
        self.phase = "preflight"
        self.phases = {"preflight": [time.time(), None], "load": [None, None], "post": [None, None]}
        self.result = {"phases": self.phases, "gpu": {}, "cpu": {}, "disk": {}, "net": {}}
        self.stressors = []
        self.scratch_made = None
        self.load_end = None
        self.samples = 0
        self.gpu_parser = parse.GpuBurnParser()
        self._gpu_log_pos = 0
        self._matmul_pos = 0
        self._matmul_lines = []
        self._post_queue = []  # (key, tool, argv, output, max seconds) run one after the other
        self._post_job = None  # (key, Stressor, started, max seconds)
        self._sel_before = None

    def path(self, name):
        return os.path.join(self.dir, name)

    def log(self, msg):
        sys.stdout.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), msg))
        sys.stdout.flush()

    # the loop ----------------------------------------------------------------------------

    def main(self):
        with open(self.path("pid"), "w") as f:
            f.write("%d\n" % os.getpid())
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        problems = Problems()
        collector = Collector(self.interval, problems)
        encoder = Encoder()
        code = 3
        samples = open(self.path("samples.jsonl"), "a")
        try:
            facts = collector.facts()
            self.result["facts_gpus"] = len(facts.get("gpus") or [])
            self._bmc_baseline()
            samples.write(
                json.dumps(
                    {
                        "type": "hello",
                        "protocol": PROTOCOL,
                        "time": round(time.time(), 3),
                        "interval_s": self.interval,
                        "facts": facts,
                    },
                    separators=(",", ":"),
                )
                + "\n"
            )
            samples.flush()
            t0 = time.time()
            preflight_end = t0 + float(self.plan.get("preflight_s", 10))
            post_end = None
            last = 0.0
            while True:
                started = time.time()
                sample = collector.sample()
                samples.write(json.dumps(encoder.encode(sample), separators=(",", ":")) + "\n")
                self._count_smoke(sample)
                for event in collector.events():
                    samples.write(
                        json.dumps(dict(event, type="event"), separators=(",", ":")) + "\n"
                    )
                for source, message in problems.drain():
                    samples.write(
                        json.dumps(
                            {
                                "type": "error",
                                "time": round(time.time(), 3),
                                "source": source,
                                "message": message,
                            }
                        )
                        + "\n"
                    )
                samples.flush()
                self.samples += 1
                now = time.time()
                if self.phase == "preflight" and (now >= preflight_end or self.stop_asked):
                    if self.stop_asked:
                        self._enter("post", now)
                        post_end = now
                    else:
                        self._enter("load", now)
                        self.load_end = now + float(self.plan["duration_s"])
                        self._start_stressors()
                elif self.phase == "load":
                    self._poll_progress()
                    # At the end of the duration the stressors get a grace period to finish
                    # on their own: gpu_burn prints its verdict block only as it exits.
                    running = any(s.poll() is None for s in self.stressors)
                    if self.stop_asked or (
                        now >= self.load_end
                        and (not running or now >= self.load_end + FINISH_GRACE_S)
                    ):
                        self._stop_stressors()
                        self._enter("post", time.time())
                        post_end = time.time() + (
                            0 if self.stop_asked else float(self.plan.get("post_s", 10))
                        )
                        if not self.stop_asked:
                            self._plan_post_jobs()
                elif self.phase == "post" and (
                    self.stop_asked or (now >= post_end and not self._post_busy())
                ):
                    break
                self._write_status("running")
                last = started
                collector_wait = until_next_tick(time.time(), self.interval, last)
                self._sleep(collector_wait)
            code = 0
        except Exception as exc:  # noqa: BLE001 - said in result.json and run.log, then cleaned up
            self.result["error"] = "driver error: %s: %s" % (type(exc).__name__, exc)
            self.log(self.result["error"])
        finally:
            self._stop_stressors()
            self._stop_post_jobs()
            self._cleanup_scratch()
            self._kernel_lines()
            self._bmc_after()
            if self.phases["post"][0] is None:
                self._enter("post", time.time())
            self.phases["post"][1] = time.time()
            self.result["stopped"] = self.stop_asked and not self._reached_end()
            self.result["samples"] = self.samples
            samples.close()
            collector.close()
            write_json_atomic(self.path("result.json"), self.result)
            self._write_status(
                "stopped" if self.result["stopped"] else ("failed" if code else "done")
            )
            with open(self.path("exit_code"), "w") as f:
                f.write("%d\n" % code)
            try:
                active = os.path.join(os.path.dirname(self.dir), "active")
                with open(active) as f:
                    if f.read().strip() == self.plan["run_id"]:
                        os.unlink(active)
            except OSError:
                pass
        return code

    def _reached_end(self):
        return self.load_end is not None and (self.phases["load"][1] or 0) >= self.load_end - 1

    def _sleep(self, seconds):
        end = time.time() + seconds
        while not self.stop_asked and time.time() < end:
            time.sleep(min(0.2, max(0.0, end - time.time())))

    def _on_stop(self, signum, frame):
        self.stop_asked = True

    def _enter(self, phase, when):
        if (
            self.phases.get(self.phase)
            and self.phases[self.phase][1] is None
            and self.phase != phase
        ):
            self.phases[self.phase][1] = when
        self.phase = phase
        if self.phases[phase][0] is None:
            self.phases[phase][0] = when
        self.log("phase %s" % phase)

    # stressors ---------------------------------------------------------------------------

    def _start_stressors(self):
        duration = int(self.plan["duration_s"])
        self._start_gpu(duration)
        if self.plan.get("cpu") or self.plan.get("memory"):
            if shutil.which("stress-ng"):
                argv = ["stress-ng", "--verify", "--metrics-brief", "--tz", "-t", "%ds" % duration]
                if self.plan.get("cpu"):
                    argv += ["--cpu", "0"]
                if self.plan.get("memory"):
                    argv += ["--vm", "4", "--vm-bytes", "60%"]
                self._spawn("cpu", "stress-ng", argv, "stress-ng.log")
            else:
                self.result["cpu"] = {
                    "tool": None,
                    "reason": "stress-ng is not installed on the node",
                }
        if self.plan.get("disk"):
            self._start_fio(duration)
        if self.plan.get("net"):
            self._start_iperf(duration)

    def _spawn(self, key, tool, argv, out, env=None, cwd=None):
        self.log("start %s: %s" % (tool, " ".join(argv)))
        try:
            s = Stressor(key, argv, self.path(out), env=env, cwd=cwd or self.dir)
        except OSError as exc:
            self.result[key] = {"tool": None, "reason": "%s could not start: %s" % (tool, exc)}
            return None
        self.result[key] = {"tool": tool, "exit_code": None, "output": out}
        self.stressors.append(s)
        return s

    def _start_gpu(self, duration):
        choice = self.plan.get("gpu") or "auto"
        tool = None
        if choice in ("auto", "gpu-burn") and shutil.which("gpu_burn"):
            tool = "gpu-burn"
        elif choice in ("auto", "dcgm") and shutil.which("dcgmi"):
            tool = "dcgm"
        elif choice in ("auto", "torch") and self._has_torch():
            tool = "torch"
        if tool is None:
            why = (
                "no GPU stressor: --gpu none"
                if choice == "none"
                else "no GPU stressor found on the node (gpu_burn, dcgmi, python3 with torch)"
                if choice == "auto"
                else "%s is not available on the node" % choice
            )
            self.result["gpu"] = {"tool": None, "reason": why}
            return
        if tool == "gpu-burn":
            self._spawn("gpu", tool, ["gpu_burn", str(duration)], "gpu_burn.log")
        elif tool == "dcgm":
            level = "3" if duration >= 1200 else "2"
            self._spawn("gpu", tool, ["dcgmi", "diag", "-r", level, "-j"], "dcgm.json")
        else:
            with open(self.path("matmul.py"), "w") as f:
                f.write(MATMUL)
            gpus = int(self.result.get("facts_gpus") or 0)
            self.result["gpu"] = {
                "tool": "torch",
                "exit_code": None,
                "output": "matmul.jsonl",
                "exit_codes": [],
            }
            for i in range(gpus):
                env = dict(
                    os.environ, CUDA_VISIBLE_DEVICES=str(i), CUBLAS_WORKSPACE_CONFIG=":4096:8"
                )
                self.stressors.append(
                    Stressor(
                        "gpu",
                        ["python3", self.path("matmul.py"), str(i), str(duration)],
                        self.path("matmul.jsonl"),
                        env=env,
                        cwd=self.dir,
                    )
                )

    def _has_torch(self):
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

    def _start_fio(self, duration):
        scratch = self.plan["scratch"]
        if not shutil.which("fio"):
            self.result["disk"] = {"tool": None, "reason": "fio is not installed on the node"}
            return
        try:
            os.mkdir(scratch, 0o700)  # fresh: never into an existing directory
        except OSError as exc:
            self.result["disk"] = {
                "tool": None,
                "reason": "cannot create %s: %s" % (scratch, exc.strerror),
            }
            return
        self.scratch_made = scratch  # only what this run made is ever deleted
        runtime = max(2, min(120, duration // 4))
        size = self.plan.get("disk_size") or "4G"
        engine = "libaio" if self._fio_has("libaio") else "psync"
        direct = "1" if self._direct_ok(scratch) else "0"
        self.result["disk_note"] = None if direct == "1" else "O_DIRECT refused here: buffered I/O"
        common = [
            "fio",
            "--output-format=json",
            "--directory=" + scratch,
            "--direct=" + direct,
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
            "--runtime=%d" % runtime,
            "--name=seqread",
            "--stonewall",
            "--rw=read",
            "--time_based",
            "--runtime=%d" % runtime,
            "--name=randread",
            "--stonewall",
            "--rw=randread",
            "--bs=4k",
            "--time_based",
            "--runtime=%d" % runtime,
            "--name=verify",
            "--stonewall",
            "--rw=write",
            "--verify=crc32c",
            "--verify_fatal=1",
        ]
        self._spawn("disk", "fio", common + jobs, "fio.json", cwd=scratch)  # its verify state too

    def _fio_has(self, engine):
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

    def _direct_ok(self, scratch):
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

    def _start_iperf(self, duration):
        if not shutil.which("iperf3"):
            self.result["net"] = {"tool": None, "reason": "iperf3 is not installed on the node"}
            return
        peer = self.plan["net"]
        host, _, port = peer.partition(":")
        self.result["net"] = {
            "tool": "iperf3",
            "exit_code": None,
            "line_rate_mbps": self._line_rate(host),
        }
        self._iperf_each = max(2, min(30, duration // 4))
        self._iperf_args = ["iperf3", "-c", host, "-t", str(self._iperf_each), "-P", "8", "-J"] + (
            ["-p", port] if port else []
        )
        self._iperf = Stressor("net", self._iperf_args, self.path("iperf3.json"), cwd=self.dir)
        self._iperf_reverse = None
        self.stressors.append(self._iperf)

    def _line_rate(self, host):
        try:
            out = subprocess.run(
                ["ip", "route", "get", host],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                timeout=10,
            ).stdout
            dev = re.search(r"\bdev (\S+)", out).group(1)
            with open("/sys/class/net/%s/speed" % dev) as f:
                speed = int(f.read().strip())
            return speed if speed > 0 else None
        except (OSError, AttributeError, ValueError, subprocess.TimeoutExpired):
            return None

    def _poll_progress(self):
        for s in self.stressors:
            s.poll()
        if (
            getattr(self, "_iperf", None) is not None
            and self._iperf.poll() is not None
            and self._iperf_reverse is None
            and not self.stop_asked
        ):
            self._iperf_reverse = Stressor(
                "net", self._iperf_args + ["-R"], self.path("iperf3-R.json"), cwd=self.dir
            )
            self.stressors.append(self._iperf_reverse)
        gpu_log = self.path("gpu_burn.log")
        if os.path.exists(gpu_log):
            with open(gpu_log, "rb") as f:
                f.seek(self._gpu_log_pos)
                chunk = f.read()
            self._gpu_log_pos += len(chunk)
            self.gpu_parser.feed(chunk.decode("utf-8", "replace"))
        mm = self.path("matmul.jsonl")
        if os.path.exists(mm):
            with open(mm, "rb") as f:
                f.seek(self._matmul_pos)
                chunk = f.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._matmul_pos += len(complete)
            self._matmul_lines += complete.decode("utf-8", "replace").splitlines()

    def _stop_stressors(self):
        if not self.stressors:
            return
        for s in self.stressors:
            s.terminate()
        deadline = time.time() + STOP_GRACE_S
        while time.time() < deadline and any(s.poll() is None for s in self.stressors):
            time.sleep(0.1)
        for s in self.stressors:
            s.kill()
        for key in ("gpu", "cpu", "disk", "net"):
            mine = [s for s in self.stressors if s.name == key]
            if mine and key in self.result and self.result[key].get("tool"):
                codes = [s.exit_code for s in mine]
                self.result[key]["exit_code"] = next((c for c in codes if c), codes[0])
                self.result[key]["exit_codes"] = codes
        self.phases["load"][1] = self.phases["load"][1] or time.time()
        self._poll_progress()
        self.stressors = []
        self._iperf = None

    # after the load: nccl-tests, then the operator's smoke test, one at a time, sampled -------

    def _plan_post_jobs(self):
        gpus = int(self.result.get("facts_gpus") or 0)
        if not gpus:
            self.result["nccl"] = {"tool": None, "reason": "no GPU on the node"}
        elif not shutil.which("all_reduce_perf"):
            self.result["nccl"] = {
                "tool": None,
                "reason": "all_reduce_perf (nccl-tests) is not on the node's PATH",
                "missing": "all_reduce_perf",
            }
        else:
            argv = ["all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", str(gpus)]
            self._post_queue.append(("nccl", "nccl-tests", argv, "nccl.log", NCCL_MAX_S))
        smoke = self.plan.get("smoke")
        if not smoke:
            self.result["smoke"] = {
                "tool": None,
                "reason": 'no loader smoke test configured ([burnin] smoke = "CMD")',
            }
        else:
            seconds = float(self.plan.get("smoke_s") or 300)
            self._post_queue.append(("smoke", "smoke", ["sh", "-c", smoke], "smoke.log", seconds))

    def _post_busy(self):
        """Whether a post job still runs (starting the next when one ended)."""
        now = time.time()
        if self._post_job is not None:
            key, job, started, limit = self._post_job
            if job.poll() is None and now < started + limit:
                return True
            timed_out = job.poll() is None
            job.terminate()
            job.kill()
            self.result[key]["exit_code"] = job.exit_code
            self.result[key]["ended"] = now
            self.result[key]["timed_out"] = timed_out
            self._post_job = None
        if not self._post_queue:
            return False
        key, tool, argv, out, limit = self._post_queue.pop(0)
        job = self._spawn(key, tool, argv, out)
        if job is not None:
            self.stressors.remove(job)  # a post job, not a load stressor
            self.result[key]["started"] = now
            self._post_job = (key, job, now, limit)
            if key == "smoke":
                self.result[key].update({"samples": 0, "zero": {}})
        return True

    def _stop_post_jobs(self):
        if self._post_job is not None:
            key, job, _, _ = self._post_job
            job.terminate()
            deadline = time.time() + STOP_GRACE_S
            while time.time() < deadline and job.poll() is None:
                time.sleep(0.1)
            job.kill()
            self.result[key]["exit_code"] = job.exit_code
            self.result[key]["stopped"] = True
            self._post_job = None
        for key, tool, _, _, _ in self._post_queue:
            self.result[key] = {"tool": None, "reason": "%s not run: the run was stopped" % tool}
        self._post_queue = []

    def _count_smoke(self, sample):
        """During the smoke test, past its first minute: per GPU, samples and idle ones (the
        loader_starvation pattern is a GPU at 0 % while the job runs)."""
        if self._post_job is None or self._post_job[0] != "smoke":
            return
        ramp = float(self.plan.get("smoke_ramp_s", SMOKE_RAMP_S))
        if sample["time"] < self._post_job[2] + ramp:
            return
        smoke = self.result["smoke"]
        smoke["samples"] += 1
        for g in sample.get("gpus") or []:
            key = str(g.get("index"))
            if g.get("utilization_percent") == 0:
                smoke["zero"][key] = smoke["zero"].get(key, 0) + 1
            else:
                smoke["zero"].setdefault(key, 0)

    # BMC event log (PSU, fan, power events) ---------------------------------------------------

    def _sel_lines(self):
        """``ipmitool sel elist`` lines, or (None, why): as this user, else ``sudo -n``."""
        if not shutil.which("ipmitool"):
            return None, "ipmitool is not installed on the node"
        out, why = _run_text(["ipmitool", "sel", "elist"])
        if out is None and os.geteuid() != 0 and shutil.which("sudo"):
            out, why_sudo = _run_text(["sudo", "-n", "ipmitool", "sel", "elist"])
            why = "%s; with sudo -n: %s" % (why.strip(), why_sudo.strip())
        if out is None:
            return None, "ipmitool sel elist failed: %s" % why.strip()[:300]
        return [x for x in out.splitlines() if x.strip()], None

    def _bmc_baseline(self):
        lines, why = self._sel_lines()
        if lines is None:
            self.result["bmc"] = {"tool": None, "reason": why}
            return
        self._sel_before = set(lines)
        self.result["bmc"] = {"tool": "ipmitool", "before": len(lines)}

    def _bmc_after(self):
        if self._sel_before is None:
            return
        lines, why = self._sel_lines()
        if lines is None:
            self.result["bmc"] = {"tool": None, "reason": "after the run: %s" % why}
            return
        new = [x for x in lines if x not in self._sel_before]
        with open(self.path("bmc_sel.log"), "w") as f:
            f.write("".join(x + "\n" for x in new))
        self.result["bmc"].update(
            {"after": len(lines), "new": len(new), "output": "bmc_sel.log", "exit_code": 0}
        )

    def _kernel_lines(self):
        """The kernel's words during the run (EDAC, MCE and PCIe AER lines are judged from
        them): ``journalctl -k`` since the start, else ``dmesg`` lines stamped after it; when
        neither can be read the check is "not run"."""
        since = float(self.phases["preflight"][0] or time.time())
        out, why = _run_text(
            ["journalctl", "-k", "--since", "@%d" % since, "--no-pager", "-o", "short-iso"]
        )
        tool = "journalctl"
        if out is None or "No journal files were found" in why:
            tool = "dmesg"
            out, why = _run_text(["dmesg"])
            if out is not None:
                out = "\n".join(_dmesg_since(out.splitlines(), since)) + "\n"
        if out is None:
            why = "kernel log unreadable: %s" % why[:200]
            self.result["kernel"] = {"tool": None, "reason": why}
            return
        with open(self.path("kernel.log"), "w") as f:
            f.write(out)
        self.result["kernel"] = {"tool": tool, "exit_code": 0, "output": "kernel.log"}

    def _cleanup_scratch(self):
        scratch = self.scratch_made
        if (
            scratch
            and os.path.isdir(scratch)
            and os.path.basename(scratch).startswith(".dltui-burnin-")
        ):
            shutil.rmtree(scratch, ignore_errors=True)
            self.result["scratch_removed"] = not os.path.exists(scratch)

    def _write_status(self, state):
        now = time.time()
        progress = {}
        if self.gpu_parser.result.gpus:
            progress["gpu_burn"] = self.gpu_parser.result.to_dict()
        if self._matmul_lines:
            progress["matmul"] = {
                str(k): {
                    "iters": v["iters"],
                    "tflops": v["tflops"][-1:],
                    "errors": v["errors"],
                    "result": v["result"],
                }
                for k, v in parse.parse_matmul(self._matmul_lines[-64:]).items()
            }
        write_json_atomic(
            self.path("status.json"),
            {
                "run_id": self.plan["run_id"],
                "state": state,
                "phase": self.phase,
                "time": round(now, 3),
                "phases": self.phases,
                "duration_s": self.plan["duration_s"],
                "load_ends": self.load_end,
                "samples": self.samples,
                "progress": progress,
                "tools": {
                    k: self.result[k].get("tool")
                    for k in ("gpu", "cpu", "disk", "net")
                    if self.result.get(k)
                },
                "scratch": self.plan.get("scratch"),
            },
        )


def _run_text(argv):
    """(stdout, stderr) of a short command; (None, why) when it fails."""
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "%s: %s" % (argv[0], exc)
    if proc.returncode != 0:
        return None, "%s: %s" % (argv[0], (proc.stderr.strip() or "exit %d" % proc.returncode))
    return proc.stdout, proc.stderr


def _dmesg_since(lines, since):
    """dmesg lines ("[seconds since boot] text") logged at or after wall time ``since``."""
    try:
        with open("/proc/uptime") as f:
            boot = time.time() - float(f.read().split()[0])
    except (OSError, ValueError):
        return lines
    kept = []
    for line in lines:
        m = re.match(r"^\[\s*(\d+\.\d+)\]", line)
        if m and boot + float(m.group(1)) >= since - 1:
            kept.append(line)
    return kept


def cmd_run(args):
    run = Run(os.path.abspath(args.dir))
    if args.lock_fd is None:  # under systemd: take the lock here
        try:
            take_lock(os.path.dirname(run.dir))
        except Refused as exc:
            run.log(str(exc))
            with open(run.path("exit_code"), "w") as f:
                f.write("%d\n" % EXIT_REFUSED)
            return EXIT_REFUSED
    return run.main()


# --- follow and stop -----------------------------------------------------------------------


def driver_alive(run_dir):
    """Whether the run's driver still runs: its pid file names a live process started from
    this run directory (a pid reused by something else does not count). No pid file yet: the
    driver is still starting."""
    try:
        with open(os.path.join(run_dir, "pid")) as f:
            pid = int(f.read().strip())
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return run_dir.encode() in f.read()
    except OSError:
        return False


def cmd_follow(args):
    """Stream samples.jsonl from ``--offset`` (whole lines only) and status lines, until the
    run has ended and all was sent; a closed pipe (the operator gone) ends it."""
    run_dir = os.path.abspath(args.dir)
    path = os.path.join(run_dir, "samples.jsonl")
    offset = args.offset
    last_status = None
    try:
        while True:
            ended = os.path.exists(os.path.join(run_dir, "exit_code"))
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read(1 << 20)
            except OSError:
                chunk = b""
            complete = chunk[: chunk.rfind(b"\n") + 1]
            if complete:
                sys.stdout.buffer.write(complete)
                offset += len(complete)
            status = read_json(os.path.join(run_dir, "status.json"))
            if status is not None and status != last_status:
                last_status = status
                sys.stdout.buffer.write(
                    json.dumps(
                        {"type": "burnin-status", "offset": offset, "status": status},
                        separators=(",", ":"),
                    ).encode()
                    + b"\n"
                )
            sys.stdout.buffer.flush()
            if len(chunk) == 1 << 20:
                continue
            # A driver gone without an exit code (the node rebooted, it was killed, the OOM
            # killer took it) ends the follow too, said so: nothing more will come.
            lost = not ended and not complete and not driver_alive(run_dir)
            if lost and os.path.exists(os.path.join(run_dir, "exit_code")):
                lost, ended = False, True  # it wrote its exit code just before it ended
            if (ended or lost) and not complete:
                end = {"type": "burnin-end", "offset": offset}
                if lost:
                    end["lost"] = True
                sys.stdout.buffer.write(json.dumps(end, separators=(",", ":")).encode() + b"\n")
                sys.stdout.buffer.flush()
                return 0
            time.sleep(args.poll)
    except (BrokenPipeError, OSError):
        return 0


def _systemctl(*argv):
    return subprocess.run(
        ["systemctl"] + list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stop_unit(run_dir, unit):
    """systemctl stop (SIGTERM to the driver, which winds down), then reset-failed: the
    unit's name is free again and no failed unit is left behind."""
    proc = _systemctl("stop", unit)
    _systemctl("reset-failed", unit)  # nothing to reset after a clean end: that is fine
    plan = read_json(os.path.join(run_dir, "plan.json"), {})
    scratch = plan.get("scratch")
    done = os.path.exists(os.path.join(run_dir, "exit_code"))
    reason = None
    if proc.returncode != 0:
        reason = "systemctl stop %s failed: %s" % (unit, proc.stdout.strip()[-300:])
    elif not done:
        reason = "the run's unit %s stopped but the run wrote no exit code" % unit
    emit(
        {
            "ok": reason is None,
            "unit": unit,
            "scratch_left": bool(scratch and os.path.exists(scratch)),
            "reason": reason,
        }
    )
    return 0 if reason is None else 1


def cmd_stop(args):
    run_dir = os.path.abspath(args.dir)
    unit = read_json(os.path.join(run_dir, "plan.json"), {}).get("unit")
    if unit:
        return _stop_unit(run_dir, unit)
    if os.path.exists(os.path.join(run_dir, "exit_code")):
        emit({"ok": True, "already": True})
        return 0
    try:
        with open(os.path.join(run_dir, "pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if run_dir.encode() not in f.read():  # the pid was reused by something else
                raise OSError("process %d is not this run's driver" % pid)
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError) as exc:
        emit({"ok": False, "reason": "cannot signal the run: %s" % exc})
        return 1
    deadline = time.time() + args.wait
    while time.time() < deadline and not os.path.exists(os.path.join(run_dir, "exit_code")):
        time.sleep(0.2)
    done = os.path.exists(os.path.join(run_dir, "exit_code"))
    plan = read_json(os.path.join(run_dir, "plan.json"), {})
    scratch = plan.get("scratch")
    emit(
        {
            "ok": done,
            "scratch_left": bool(scratch and os.path.exists(scratch)),
            "reason": None if done else "the run did not end within %g s" % args.wait,
        }
    )
    return 0 if done else 1


# --- command line --------------------------------------------------------------------------


def build_parser():
    p = argparse.ArgumentParser(prog="dltui-burnin")
    sub = p.add_subparsers(dest="mode")
    s = sub.add_parser("start")
    s.add_argument("--run-id", required=True)
    s.add_argument("--duration", type=int, required=True)
    s.add_argument("--gpu", default="auto")
    s.add_argument("--cpu", action="store_true")
    s.add_argument("--memory", action="store_true")
    s.add_argument("--disk")
    s.add_argument("--disk-size", default="4G")
    s.add_argument("--net")
    s.add_argument("--expected-gpus", type=int)
    s.add_argument("--preflight", type=float, default=10.0)
    s.add_argument("--post", type=float, default=10.0)
    s.add_argument("--interval", type=float, default=1.0)
    s.add_argument("--smoke", help="a loader smoke test command, run after the load")
    s.add_argument("--smoke-s", type=float, default=300.0)
    s.add_argument("--smoke-ramp", type=float, default=SMOKE_RAMP_S)  # shorter in tests
    s.add_argument("--launcher", choices=("auto", "setsid", "systemd"), default="auto")
    s.add_argument("--self-path", help="where this script was written; moved into the run dir")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--lock-fd", type=int)
    f = sub.add_parser("follow")
    f.add_argument("--dir", required=True)
    f.add_argument("--offset", type=int, default=0)
    f.add_argument("--poll", type=float, default=0.25)
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    t.add_argument("--wait", type=float, default=60.0)
    return p


def main(argv=None):
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    mode = {"start": cmd_start, "run": cmd_run, "follow": cmd_follow, "stop": cmd_stop}.get(
        args.mode
    )
    if mode is None:
        build_parser().print_help()
        return 2
    return mode(args)


if __name__ == "__main__":
    sys.exit(main())
