"""The load phase: the stressors the plan asks for, started together for the duration, their
progress read while they run (gpu_burn's log, the matmul lines, iperf3 forward then reverse),
stopped with a grace period, their exit codes and the fio scratch folder's removal recorded."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from dltui.node.burnin import parse, rvs, stressors
from dltui.node.burnin.filesystem import file_system
from dltui.node.burnin.places import Result, RunDir
from dltui.node.burnin.plan import Plan
from dltui.node.burnin.stressors import STOP_GRACE_S, Stressor

LOAD_KEYS = ("gpu", "cpu", "disk", "net")  # result.json's entries for the load's stressors


class Load:
    """The load's stressors and what they reported so far."""

    def __init__(self, run: RunDir, plan: Plan, result: Result) -> None:
        self.run = run
        self.plan = plan
        self.result = result
        self.stressors: list[Stressor] = []
        self.scratch_made: str | None = None  # only what this run made is ever deleted
        self.gpu_parser = parse.GpuBurnParser()
        self._gpu_log_pos = 0
        self.rvs_parser = rvs.RvsResult()  # AMD's rvs gst, read as its log grows
        self._rvs_log_pos = 0
        self._matmul_pos = 0
        self._matmul_lines: list[str] = []
        self._iperf: Stressor | None = None
        self._iperf_reverse: Stressor | None = None
        self._iperf_args: list[str] = []

    def start(self) -> None:
        duration = int(self.plan["duration_s"])
        self._start_gpu(duration)
        if self.plan.get("cpu") or self.plan.get("memory"):
            if shutil.which("stress-ng"):
                argv = stressors.stress_ng_argv(
                    duration, bool(self.plan.get("cpu")), bool(self.plan.get("memory"))
                )
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

    def running(self) -> bool:
        return any(s.poll() is None for s in self.stressors)

    def poll(self, stop_asked: bool) -> None:
        """Reaps what ended, starts iperf3's reverse pass once the forward one ended (not when
        the run is being stopped), and reads the stressors' new output."""
        for s in self.stressors:
            s.poll()
        if (
            self._iperf is not None
            and self._iperf.poll() is not None
            and self._iperf_reverse is None
            and not stop_asked
        ):
            self._iperf_reverse = Stressor(
                "net", self._iperf_args + ["-R"], self.run.path("iperf3-R.json"), cwd=self.run.dir
            )
            self.stressors.append(self._iperf_reverse)
        chunk = _grown(self.run.path("gpu_burn.log"), self._gpu_log_pos)
        self._gpu_log_pos += len(chunk)
        self.gpu_parser.feed(chunk.decode("utf-8", "replace"))
        chunk = _grown(self.run.path("rvs.log"), self._rvs_log_pos)
        self._rvs_log_pos += len(chunk)
        self.rvs_parser.feed(chunk.decode("utf-8", "replace"))
        mm = self.run.path("matmul.jsonl")
        if os.path.exists(mm):
            with open(mm, "rb") as f:
                f.seek(self._matmul_pos)
                chunk = f.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._matmul_pos += len(complete)
            self._matmul_lines += complete.decode("utf-8", "replace").splitlines()

    def stop(self, stop_asked: bool) -> bool:
        """SIGTERM to every stressor, SIGKILL after the grace period; their exit codes into
        the result. False when none was running (nothing was stopped)."""
        if not self.stressors:
            return False
        for s in self.stressors:
            s.terminate()
        deadline = time.time() + STOP_GRACE_S
        while time.time() < deadline and self.running():
            time.sleep(0.1)
        for s in self.stressors:
            s.kill()
        for key in LOAD_KEYS:
            mine = [s for s in self.stressors if s.name == key]
            if mine and key in self.result and self.result[key].get("tool"):
                codes = [s.exit_code for s in mine]
                self.result[key]["exit_code"] = next((c for c in codes if c), codes[0])
                self.result[key]["exit_codes"] = codes
        self.poll(stop_asked)
        self.stressors = []
        self._iperf = None
        return True

    def cleanup_scratch(self) -> None:
        scratch = self.scratch_made
        if (
            scratch
            and os.path.isdir(scratch)
            and os.path.basename(scratch).startswith(".dltui-burnin-")
        ):
            shutil.rmtree(scratch, ignore_errors=True)
            self.result["scratch_removed"] = not os.path.exists(scratch)

    def progress(self) -> dict[str, Any]:
        """status.json's view of the GPU stressors so far (gpu_burn's counters, matmul's)."""
        progress: dict[str, Any] = {}
        if self.gpu_parser.result.gpus:
            progress["gpu_burn"] = self.gpu_parser.result.to_dict()
        if self.rvs_parser.gpus:  # by RVS's GPU id: its summary (the index map) comes last
            progress["rvs"] = {str(i): g.to_dict() for i, g in self.rvs_parser.gpus.items()}
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
        return progress

    # one stressor each -------------------------------------------------------------------------

    def _spawn(
        self,
        key: str,
        tool: str,
        argv: list[str],
        out: str,
        cwd: str | None = None,
    ) -> None:
        s = stressors.spawn(self.run, self.result, key, tool, argv, out, cwd=cwd)
        if s is not None:
            self.stressors.append(s)

    def _start_gpu(self, duration: int) -> None:
        choice = self.plan.get("gpu") or "auto"
        tool = stressors.gpu_tool(choice)
        if tool is None:
            self.result["gpu"] = {"tool": None, "reason": stressors.no_gpu_tool_reason(choice)}
            return
        if tool == "gpu-burn":
            self._spawn("gpu", tool, ["gpu_burn", str(duration)], "gpu_burn.log")
        elif tool == "dcgm":
            level = "3" if duration >= 1200 else "2"
            self._spawn("gpu", tool, ["dcgmi", "diag", "-r", level, "-j"], "dcgm.json")
        elif tool == "rvs":
            conf = self.run.path("rvs_gst.conf")  # AMD's stress action, the run's duration
            with open(conf, "w") as f:
                f.write(rvs.gst_conf(duration))
            self._spawn("gpu", tool, [rvs.rvs_path() or "rvs", "-c", conf], "rvs.log")
        else:
            self._start_matmul(duration)

    def _start_matmul(self, duration: int) -> None:
        """One matmul process per GPU the facts found, each seeing only its GPU."""
        with open(self.run.path("matmul.py"), "w") as f:
            f.write(stressors.MATMUL)
        gpus = int(self.result.get("facts_gpus") or 0)
        self.result["gpu"] = {
            "tool": "torch",
            "exit_code": None,
            "output": "matmul.jsonl",
            "exit_codes": [],
        }
        for i in range(gpus):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(i), CUBLAS_WORKSPACE_CONFIG=":4096:8")
            self.stressors.append(
                Stressor(
                    "gpu",
                    ["python3", self.run.path("matmul.py"), str(i), str(duration)],
                    self.run.path("matmul.jsonl"),
                    env=env,
                    cwd=self.run.dir,
                )
            )

    def _start_fio(self, duration: int) -> None:
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
        self.scratch_made = scratch
        runtime = max(2, min(120, duration // 4))
        size = self.plan.get("disk_size") or "4G"
        engine = "libaio" if stressors.fio_has("libaio") else "psync"
        direct = stressors.direct_ok(scratch)
        self.result["disk_note"] = None if direct else "O_DIRECT refused here: buffered I/O"
        argv = stressors.fio_argv(scratch, size, runtime, engine, direct)
        self._spawn("disk", "fio", argv, "fio.json", cwd=scratch)  # its verify state too
        self.result["disk"]["fs"] = file_system(scratch)  # a node's drive, or shared storage

    def _start_iperf(self, duration: int) -> None:
        if not shutil.which("iperf3"):
            self.result["net"] = {"tool": None, "reason": "iperf3 is not installed on the node"}
            return
        peer = self.plan["net"] or ""
        self.result["net"] = {
            "tool": "iperf3",
            "exit_code": None,
            "line_rate_mbps": stressors.line_rate_mbps(
                peer.partition(":")[0], self.plan.get("sysfs") or "/sys"
            ),
        }
        self._iperf_args = stressors.iperf_argv(peer, max(2, min(30, duration // 4)))
        self._iperf = Stressor("net", self._iperf_args, self.run.path("iperf3.json"), cwd=self.run.dir)
        self._iperf_reverse = None
        self.stressors.append(self._iperf)


def _grown(path: str, pos: int) -> bytes:
    """What a stressor's output file holds past ``pos`` (nothing while it does not exist)."""
    if not os.path.exists(path):
        return b""
    with open(path, "rb") as f:
        f.seek(pos)
        return f.read()
