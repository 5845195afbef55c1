"""One collector for a node: host and GPUs together, the same code on nodes and locally."""

import sys
import time

from . import __version__
from .gpu import NO_DRIVER, open_gpu
from .host import HostCollector
from .problems import Problems


class Collector:
    """Reads facts once and a sample per tick. Never raises for a failing source."""

    def __init__(self, interval_s=1.0, problems=None, proc="/proc", sys_dir="/sys"):
        self.interval_s = interval_s
        self.problems = problems if problems is not None else Problems()
        self.host = HostCollector(self.problems, proc=proc, sys=sys_dir)
        self.gpu, self.gpu_source, self.gpu_note = open_gpu(self.problems, interval_s)
        # XIDs are NVIDIA driver messages: no driver, nothing to read (and no note about it).
        self.kernel_log = None
        if self.gpu_note != NO_DRIVER:
            from .kernel_log import KernelLog  # journalctl and subprocess: only where XIDs can be

            self.kernel_log = KernelLog(self.problems)

    def facts(self):
        facts = {}
        with self.problems.guard("host facts"):
            facts.update(self.host.facts())
        facts["probe_version"] = __version__
        facts["python"] = "%d.%d.%d" % sys.version_info[:3]
        facts["gpu_source"] = self.gpu_source
        facts["gpu_note"] = self.gpu_note
        facts.setdefault("gpus", [])
        if self.gpu is not None:
            with self.problems.guard("gpu facts"):
                facts.update(self.gpu.facts())
        if self.kernel_log is not None:
            self.kernel_log.set_gpus(facts["gpus"])
        return facts

    def sample(self):
        sample = {"time": round(time.time(), 3)}
        sample.update(self.host.sample())
        sample["gpus"] = []
        if self.gpu is not None:
            with self.problems.guard("gpu"):
                sample["gpus"] = self.gpu.sample()
        return sample

    def events(self):
        """Events since the last call (XIDs and the like), as dicts shaped like NodeEvent."""
        return self.kernel_log.events() if self.kernel_log is not None else []

    def close(self):
        if self.kernel_log is not None:
            self.kernel_log.close()
        self.host.close()
        if self.gpu is not None:
            self.gpu.close()
