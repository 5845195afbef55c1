"""The post phase's jobs, after the load and sampled like it: nccl-tests' all_reduce_perf over
every GPU, then the operator's loader smoke test, one at a time, each with a time limit. During
the smoke test the driver counts, per GPU, the samples where it sat idle."""

from __future__ import annotations

import shutil
import time
from typing import Any, NamedTuple

from dltui.node.burnin import stressors
from dltui.node.burnin.places import Result, RunDir
from dltui.node.burnin.plan import SMOKE_RAMP_S, Plan
from dltui.node.burnin.stressors import STOP_GRACE_S, Stressor

NCCL_MAX_S = 900.0  # all_reduce_perf 1G..8G on one node takes minutes; stopped after this


class Job(NamedTuple):
    """A post job waiting its turn."""

    key: str  # its entry in result.json
    tool: str
    argv: list[str]
    output: str  # its output file in the run folder
    limit_s: float


class Running(NamedTuple):
    key: str
    stressor: Stressor
    started: float
    limit_s: float


class PostJobs:
    """The queue of post jobs and the one running."""

    def __init__(self, run: RunDir, plan: Plan, result: Result) -> None:
        self.run = run
        self.plan = plan
        self.result = result
        self._queue: list[Job] = []
        self._job: Running | None = None

    def plan_jobs(self) -> None:
        """Queues what the node can run; what it cannot is recorded as not run, with why."""
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
            self._queue.append(Job("nccl", "nccl-tests", argv, "nccl.log", NCCL_MAX_S))
        smoke = self.plan.get("smoke")
        if not smoke:
            self.result["smoke"] = {
                "tool": None,
                "reason": 'no loader smoke test configured ([burnin] smoke = "CMD")',
            }
        else:
            seconds = float(self.plan.get("smoke_s") or 300)
            self._queue.append(Job("smoke", "smoke", ["sh", "-c", smoke], "smoke.log", seconds))

    def busy(self) -> bool:
        """Whether a post job still runs (starting the next when one ended)."""
        now = time.time()
        if self._job is not None:
            key, job, started, limit = self._job
            if job.poll() is None and now < started + limit:
                return True
            timed_out = job.poll() is None
            job.terminate()
            job.kill()
            self.result[key]["exit_code"] = job.exit_code
            self.result[key]["ended"] = now
            self.result[key]["timed_out"] = timed_out
            if job.exit_code:  # the tool's own failure text: its output's last line
                self.result[key]["last_words"] = stressors.last_words(job.out_path)
            self._job = None
        if not self._queue:
            return False
        nxt = self._queue.pop(0)
        spawned = stressors.spawn(self.run, self.result, nxt.key, nxt.tool, nxt.argv, nxt.output)
        if spawned is not None:
            self.result[nxt.key]["started"] = now
            self._job = Running(nxt.key, spawned, now, nxt.limit_s)
            if nxt.key == "smoke":
                self.result[nxt.key].update({"samples": 0, "zero": {}})
        return True

    def stop(self) -> None:
        """Ends the running job (SIGTERM, then SIGKILL after the grace period); the queued
        ones are recorded as not run."""
        if self._job is not None:
            key, job, _, _ = self._job
            job.terminate()
            deadline = time.time() + STOP_GRACE_S
            while time.time() < deadline and job.poll() is None:
                time.sleep(0.1)
            job.kill()
            self.result[key]["exit_code"] = job.exit_code
            self.result[key]["stopped"] = True
            self._job = None
        for queued in self._queue:
            self.result[queued.key] = {
                "tool": None,
                "reason": "%s not run: the run was stopped" % queued.tool,
            }
        self._queue = []

    def count_smoke(self, sample: dict[str, Any]) -> None:
        """During the smoke test, past its first minute: per GPU, samples and idle ones (the
        loader_starvation pattern is a GPU at 0 % while the job runs)."""
        if self._job is None or self._job.key != "smoke":
            return
        ramp = float(self.plan.get("smoke_ramp_s", SMOKE_RAMP_S))
        if sample["time"] < self._job.started + ramp:
            return
        smoke = self.result["smoke"]
        smoke["samples"] += 1
        for g in sample.get("gpus") or []:
            key = str(g.get("index"))
            if g.get("utilization_percent") == 0:
                smoke["zero"][key] = smoke["zero"].get(key, 0) + 1
            else:
                smoke["zero"].setdefault(key, 0)
