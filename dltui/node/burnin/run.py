"""A run, detached from dltui: preflight, load, post, then the end (stressors and post jobs
stopped, scratch removed, baselines read again, result.json and exit_code written). A probe
sample every interval goes to samples.jsonl in every phase; status.json is rewritten after each.

SIGTERM or SIGINT asks the run to stop: it winds down through the same end, said ``stopped``."""

from __future__ import annotations

import json
import os
import signal
import time
from types import FrameType
from typing import IO, Any, Literal

from dltui.node.burnin import preflight
from dltui.node.burnin.load import LOAD_KEYS, Load
from dltui.node.burnin.places import Result, RunDir, read_json, write_json_atomic
from dltui.node.burnin.plan import Plan
from dltui.node.burnin.post import PostJobs
from dltui.node.probe.collect import Collector
from dltui.node.probe.main import until_next_tick
from dltui.node.probe.problems import Problems
from dltui.node.schema import BurninPhase
from dltui.node.wire import Encoder

FINISH_GRACE_S = 120.0  # past the duration, before a stressor that did not end is stopped

State = Literal["running", "stopped", "failed", "done"]  # status.json's "state"


def _line(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


class Run:
    def __init__(self, run_dir: str) -> None:
        self.files = RunDir(run_dir)
        self.dir = run_dir
        self.plan: Plan = read_json(self.files.path("plan.json"))
        self.interval = float(self.plan.get("interval_s") or 1.0)
        self.stop_asked = False
        self.phase: BurninPhase = "preflight"
        # [start, end] of each phase (wall-clock seconds), in result.json and status.json.
        self.phases: dict[str, list[float | None]] = {
            "preflight": [time.time(), None],
            "load": [None, None],
            "post": [None, None],
        }
        self.result: Result = {"phases": self.phases, "gpu": {}, "cpu": {}, "disk": {}, "net": {}}
        self.load_end: float | None = None
        self.samples = 0
        self.load = Load(self.files, self.plan, self.result)
        self.post = PostJobs(self.files, self.plan, self.result)
        self.baselines = preflight.baselines()
        self._post_end: float | None = None

    def path(self, name: str) -> str:
        return self.files.path(name)

    def log(self, msg: str) -> None:
        self.files.log(msg)

    def main(self) -> int:
        with open(self.path("pid"), "w") as f:
            f.write("%d\n" % os.getpid())
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        problems = Problems()
        collector = Collector(self.interval, problems, sys_dir=self.plan.get("sysfs") or "/sys")
        code = 3
        samples = open(self.path("samples.jsonl"), "a")
        try:
            facts = collector.facts()
            self.result["facts_gpus"] = len(facts.get("gpus") or [])
            for baseline in self.baselines:
                baseline.before(self.files, self.result)
            samples.write(_line(preflight.hello(facts, self.interval)))
            samples.flush()
            self._loop(collector, problems, samples)
            code = 0
        except Exception as exc:  # noqa: BLE001 - said in result.json and run.log, then cleaned up
            self.result["error"] = "driver error: %s: %s" % (type(exc).__name__, exc)
            self.log(self.result["error"])
        finally:
            self._end()
            samples.close()
            collector.close()
            self._write_results(code)
        return code

    # the loop ----------------------------------------------------------------------------

    def _loop(self, collector: Collector, problems: Problems, samples: IO[str]) -> None:
        preflight_end = time.time() + float(self.plan.get("preflight_s", 10))
        encoder = Encoder()
        last = 0.0
        while True:
            started = time.time()
            sample = collector.sample()
            samples.write(_line(encoder.encode(sample)))
            self.post.count_smoke(sample)
            for event in collector.events():
                samples.write(_line(dict(event, type="event")))
            for source, message in problems.drain():
                error = {
                    "type": "error",
                    "time": round(time.time(), 3),
                    "source": source,
                    "message": message,
                }
                samples.write(json.dumps(error) + "\n")
            samples.flush()
            self.samples += 1
            if not self._step(time.time(), preflight_end):
                break
            self._write_status("running")
            last = started
            self._sleep(until_next_tick(time.time(), self.interval, last))

    def _step(self, now: float, preflight_end: float) -> bool:
        """Moves between phases after a sample; False when the run is over."""
        if self.phase == "preflight" and (now >= preflight_end or self.stop_asked):
            if self.stop_asked:
                self._enter("post", now)
                self._post_end = now
            else:
                self._enter("load", now)
                self.load_end = now + float(self.plan["duration_s"])
                self.load.start()
        elif self.phase == "load":
            self.load.poll(self.stop_asked)
            load_end = self.load_end if self.load_end is not None else now
            # At the end of the duration the stressors get a grace period to finish on their
            # own: gpu_burn prints its verdict block only as it exits.
            if self.stop_asked or (
                now >= load_end
                and (not self.load.running() or now >= load_end + FINISH_GRACE_S)
            ):
                self._stop_load()
                self._enter("post", time.time())
                self._post_end = time.time() + (
                    0 if self.stop_asked else float(self.plan.get("post_s", 10))
                )
                if not self.stop_asked:
                    self.post.plan_jobs()
        elif self.phase == "post" and (
            self.stop_asked or (now >= (self._post_end or 0) and not self.post.busy())
        ):
            return False
        return True

    def _stop_load(self) -> None:
        if self.load.stop(self.stop_asked):
            self.phases["load"][1] = self.phases["load"][1] or time.time()

    def _sleep(self, seconds: float) -> None:
        end = time.time() + seconds
        while not self.stop_asked and time.time() < end:
            time.sleep(min(0.2, max(0.0, end - time.time())))

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_asked = True

    def _enter(self, phase: BurninPhase, when: float) -> None:
        current = self.phases.get(self.phase)
        if current and current[1] is None and self.phase != phase:
            current[1] = when
        self.phase = phase
        if self.phases[phase][0] is None:
            self.phases[phase][0] = when
        self.log("phase %s" % phase)

    # the end -----------------------------------------------------------------------------

    def _end(self) -> None:
        """Whatever ended the run (its end, a stop, an error): nothing of it keeps running,
        nothing of it is left on the disk, the baselines are read again."""
        self._stop_load()
        self.post.stop()
        self.load.cleanup_scratch()
        since = float(self.phases["preflight"][0] or time.time())
        for baseline in self.baselines:
            baseline.after(self.files, self.result, since)
        if self.phases["post"][0] is None:
            self._enter("post", time.time())
        self.phases["post"][1] = time.time()
        self.result["stopped"] = self.stop_asked and not self._reached_end()
        self.result["samples"] = self.samples

    def _write_results(self, code: int) -> None:
        write_json_atomic(self.path("result.json"), self.result)
        self._write_status("stopped" if self.result["stopped"] else ("failed" if code else "done"))
        self.files.write_exit_code(code)
        try:
            active = os.path.join(os.path.dirname(self.dir), "active")
            with open(active) as f:
                if f.read().strip() == self.plan["run_id"]:
                    os.unlink(active)
        except OSError:
            pass

    def _reached_end(self) -> bool:
        return self.load_end is not None and (self.phases["load"][1] or 0) >= self.load_end - 1

    def _write_status(self, state: State) -> None:
        status: dict[str, Any] = {
            "run_id": self.plan["run_id"],
            "state": state,
            "phase": self.phase,
            "time": round(time.time(), 3),
            "phases": self.phases,
            "duration_s": self.plan["duration_s"],
            "load_ends": self.load_end,
            "samples": self.samples,
            "progress": self.load.progress(),
            "tools": {k: self.result[k].get("tool") for k in LOAD_KEYS if self.result.get(k)},
            "scratch": self.plan.get("scratch"),
        }
        write_json_atomic(self.path("status.json"), status)
