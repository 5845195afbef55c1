"""One collector for a node: host and GPUs together, the same code on nodes and locally."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, Iterable

from . import __version__
from .gpu import NO_DRIVER, open_accelerators, open_gpu
from .host import HostCollector
from .infiniband import InfinibandCollector
from .nvlink import open_nvlink
from .problems import Problems
from .smart import FIRST_READ_DELAY_S, SmartReader
from .stack import read_stack

if TYPE_CHECKING:
    from .attribution import Attributor
    from .kernel_log import KernelLog
    from .units import UnitPoller

# Opening the kernel log (subprocess, journalctl, the whole boot's backlog) costs ~25 ms of
# CPU. It waits this long after the first sample, so a fleet that starts together (or nodes
# sharing a hypervisor's CPUs) puts every node on screen first; the boot's XIDs and OOM kills
# follow seconds later.
KERNEL_LOG_DELAY_S = 3.0


class Collector:
    """Reads facts once and a sample per tick. Never raises for a failing source."""

    def __init__(
        self,
        interval_s: float = 1.0,
        problems: Problems | None = None,
        proc: str = "/proc",
        sys_dir: str = "/sys",
        units: Iterable[str] = (),
        checkpoint: str | None = None,
        containers: Iterable[str] = (),
    ) -> None:
        self.interval_s = interval_s
        self.problems = problems if problems is not None else Problems()
        self.host = HostCollector(self.problems, proc=proc, sys=sys_dir)
        self.sys_dir = sys_dir
        # its own thread: a SMART read never delays a sample
        self.smart = SmartReader(first_delay_s=FIRST_READ_DELAY_S)
        self.smart.start()
        self.gpu, self.gpu_source, self.gpu_note = open_gpu(self.problems, interval_s)
        self.accelerators: list[tuple[str, Any]] = []  # AMD / Gaudi: (source, collector)
        with self.problems.guard("accelerators"):
            self.accelerators = open_accelerators(self.problems, interval_s, sys_dir, proc)
        # each vendor's GPUs are numbered after the previous vendor's (one ``gpu/N`` each)
        self._index_offsets: list[int] = [0] * len(self.accelerators)
        # each GPU process's owner, Slurm job, container and pod: read once per process. Made
        # when the first GPU process appears: its import is ~6 ms of a cold start on every node.
        self.attribution: Attributor | None = None
        self._proc = proc
        self.infiniband = InfinibandCollector(sys_dir)
        self.nvlink: Any = None
        with self.problems.guard("nvlink"):
            self.nvlink = open_nvlink(self.gpu, self.gpu_source, self.problems)
        self.kernel_log: KernelLog | None = None  # opened by events() KERNEL_LOG_DELAY_S after its first call
        self._events_since: float | None = None
        self._gpu_facts: list[dict[str, Any]] = []
        self.units: UnitPoller | None = None
        if units or checkpoint:
            from .units import UnitPoller

            self.units = UnitPoller(units, checkpoint, self.problems)
        self.containers: Any = None  # the group's training containers (containers.py), polled slowly
        containers = list(containers)
        if containers:
            from .containers import ContainerPoller

            self.containers = ContainerPoller(containers, self.problems)

    def set_interval(self, interval_s: float) -> None:
        """A new sampling interval (the operator's ``+`` / ``-``). NVML reads follow it; a
        running ``nvidia-smi -lms`` keeps its own rate (the newest line is read each tick)."""
        self.interval_s = interval_s
        if self.gpu is not None and self.gpu_source == "nvml":
            self.gpu.interval_s = interval_s

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {}
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
        self._accelerator_facts(facts)
        with self.problems.guard("stack"):
            facts["stack"] = read_stack(sys_dir=self.sys_dir, running_kernel=facts.get("kernel"))
        self._gpu_facts = facts["gpus"]
        if self.kernel_log is not None:
            self.kernel_log.set_gpus(self._gpu_facts)
        return facts

    def _accelerator_facts(self, facts: dict[str, Any]) -> None:
        """AMD / Gaudi GPUs after NVIDIA's, renumbered to follow them; the sources named
        together ("nvml+amd-sysfs"). A vendor tool installed without its cards is dropped."""
        sources = [self.gpu_source] if self.gpu_source else []
        kept, offsets = [], []
        for source, collector in self.accelerators:
            gpus: list[dict[str, Any]] = []
            with self.problems.guard(source):
                gpus = list(collector.facts().get("gpus") or [])
            if not gpus:
                collector.close()
                continue
            offset = len(facts["gpus"])
            for gpu in gpus:
                facts["gpus"].append(dict(gpu, index=gpu["index"] + offset))
            kept.append((source, collector))
            offsets.append(offset)
            sources.append(source)
        self.accelerators, self._index_offsets = kept, offsets
        if kept:
            facts["gpu_source"] = "+".join(sources)
            if facts["gpu_note"] == NO_DRIVER:
                facts["gpu_note"] = None

    def sample(self) -> dict[str, Any]:
        sample: dict[str, Any] = {"time": round(time.time(), 3)}
        sample.update(self.host.sample())
        sample["gpus"] = []
        if self.gpu is not None:
            with self.problems.guard("gpu"):
                sample["gpus"] = self.gpu.sample()
        for (source, collector), offset in zip(self.accelerators, self._index_offsets):
            with self.problems.guard(source):
                for record in collector.sample():
                    record["index"] += offset
                    sample["gpus"].append(record)
        if sample["gpus"]:  # every vendor's GPU processes: owner, job, container (once per process)
            with self.problems.guard("attribution"):
                self._attribute(sample["gpus"])
        with self.problems.guard("infiniband"):
            sample["ib_ports"] = self.infiniband.sample()
        if self.nvlink is not None:
            with self.problems.guard("nvlink"):
                sample["nvlinks"] = self.nvlink.sample()
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
        if self.containers is not None:
            with self.problems.guard("containers"):
                sample["containers"] = self.containers.sample()
        return sample

    def _attribute(self, gpus: list[dict[str, Any]]) -> None:
        if self.attribution is None:
            if not any(gpu.get("processes") for gpu in gpus):
                return  # no GPU process yet: nothing to attribute
            from .attribution import Attributor

            self.attribution = Attributor(self.problems, proc=self._proc)
        self.attribution.mark(gpus)

    def events(self) -> list[dict[str, Any]]:
        """Events since the last call (XIDs, OOM kills, notes), as dicts shaped like NodeEvent."""
        notes = self.problems.drain_notes()
        if self.kernel_log is None:
            now = time.monotonic()
            if self._events_since is None:
                self._events_since = now
            if now - self._events_since < KERNEL_LOG_DELAY_S:
                return notes
            from .kernel_log import KernelLog

            self.kernel_log = KernelLog(self.problems)
            self.kernel_log.set_gpus(self._gpu_facts)
        return notes + self.kernel_log.events()

    def close(self) -> None:
        self.smart.close()
        if self.kernel_log is not None:
            self.kernel_log.close()
        self.host.close()
        self.infiniband.close()
        if self.nvlink is not None:
            self.nvlink.close()
        if self.gpu is not None:
            self.gpu.close()
        for _, collector in self.accelerators:
            collector.close()
