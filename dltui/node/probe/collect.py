"""One collector for a node: host and GPUs together, the same code on nodes and locally."""

import sys
import time

from . import __version__
from .gpu import open_gpu
from .host import HostCollector
from .problems import Problems
from .smart import FIRST_READ_DELAY_S, SmartReader
from .stack import read_stack

# Opening the kernel log (subprocess, journalctl, the whole boot's backlog) costs ~25 ms of
# CPU. It waits this long after the first sample, so a fleet that starts together (or nodes
# sharing a hypervisor's CPUs) puts every node on screen first; the boot's XIDs and OOM kills
# follow seconds later.
KERNEL_LOG_DELAY_S = 3.0


class Collector:
    """Reads facts once and a sample per tick. Never raises for a failing source."""

    def __init__(self, interval_s=1.0, problems=None, proc="/proc", sys_dir="/sys", units=(), checkpoint=None):
        self.interval_s = interval_s
        self.problems = problems if problems is not None else Problems()
        self.host = HostCollector(self.problems, proc=proc, sys=sys_dir)
        self.sys_dir = sys_dir
        # its own thread: a SMART read never delays a sample
        self.smart = SmartReader(first_delay_s=FIRST_READ_DELAY_S)
        self.smart.start()
        self.gpu, self.gpu_source, self.gpu_note = open_gpu(self.problems, interval_s)
        self.kernel_log = None  # opened by events() KERNEL_LOG_DELAY_S after its first call
        self._events_since = None
        self._gpu_facts = []
        self.units = None
        if units or checkpoint:
            from .units import UnitPoller

            self.units = UnitPoller(units, checkpoint, self.problems)

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
        with self.problems.guard("stack"):
            facts["stack"] = read_stack(sys_dir=self.sys_dir, running_kernel=facts.get("kernel"))
        self._gpu_facts = facts["gpus"]
        if self.kernel_log is not None:
            self.kernel_log.set_gpus(self._gpu_facts)
        return facts

    def sample(self):
        sample = {"time": round(time.time(), 3)}
        sample.update(self.host.sample())
        sample["gpus"] = []
        if self.gpu is not None:
            with self.problems.guard("gpu"):
                sample["gpus"] = self.gpu.sample()
        sample["drives"] = self.smart.records
        if self.smart.note is None:
            self.problems.clear("drives")
        else:
            self.problems.report("drives", self.smart.note)
        if self.units is not None:
            with self.problems.guard("units"):
                sample["units"], checkpoint = self.units.sample()
                if checkpoint is not None:
                    sample["checkpoint"] = checkpoint
                if self.units.units and sample["gpus"]:
                    from .units import mark_unit_processes

                    mark_unit_processes(sample["gpus"], self.units.units)
        return sample

    def events(self):
        """Events since the last call (XIDs, OOM kills), as dicts shaped like NodeEvent."""
        if self.kernel_log is None:
            now = time.monotonic()
            if self._events_since is None:
                self._events_since = now
            if now - self._events_since < KERNEL_LOG_DELAY_S:
                return []
            from .kernel_log import KernelLog

            self.kernel_log = KernelLog(self.problems)
            self.kernel_log.set_gpus(self._gpu_facts)
        return self.kernel_log.events()

    def close(self):
        self.smart.close()
        if self.kernel_log is not None:
            self.kernel_log.close()
        self.host.close()
        if self.gpu is not None:
            self.gpu.close()
