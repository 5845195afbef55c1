"""One simulated node: its facts, a sample a second under its scenario, its link to us."""

from __future__ import annotations

import dataclasses
import random

from dltui.core.models import BlockDeviceFacts, NicFacts, NodeFacts, Sample

from . import accelerators, drives, h100, host, jobs
from .fabric import DemoFabric
from .gpu import SimGpu, loader_util
from .scenarios import (
    CORES,
    CRASHLOOP_INDEX,
    DOWN,
    EPOCH,
    FLAPPING,
    GIB,
    HOT_GPU,
    HOT_GPU_INDEX,
    IDLE,
    OUTAGE_PERIOD_STEPS,
    OUTAGE_START_STEP,
    OUTAGE_STEPS,
    PATTERN,
    RETRY_STEPS,
    RETRYING,
    STARVED,
    UNIT,
    UP,
    scenario_for,
)
from .unit import SimUnit

_BUS_IDS = ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")


class SimNode:
    def __init__(self, name: str, index: int, seed: int, gpus: int):
        self.name = name
        self.index = index
        self.scenario = scenario_for(index)
        self.rng = random.Random(f"{seed}:{name}")
        rng = self.rng
        self.outage_offset = rng.randrange(0, 60) if index >= len(PATTERN) else 0
        job_pid = rng.randrange(20_000, 400_000)
        self.holder = jobs.holder(index)  # whose job it is: drawn from the index, not from rng
        self.gpus = [SimGpu(rng, i, job_pid + 40 + i, self.holder) for i in range(gpus)]
        busy = set(rng.sample(range(CORES), 16))  # where the loader workers run
        self._core_is_busy = [i in busy for i in range(CORES)]
        self.link = UP
        self.crashloops = index % len(PATTERN) == CRASHLOOP_INDEX
        # its own random stream: the samples' numbers stay what they were before units existed
        self.unit = SimUnit(random.Random(f"{seed}:{name}:unit"), job_pid, active=self.scenario != IDLE)
        self.fabric = DemoFabric(name, index, seed, gpus, len(PATTERN))
        self.boot_time = EPOCH - 19 * 86400
        self.vendor = accelerators.vendor_of(self.scenario)  # "amd", "intel": demo/accelerators.py
        self.steps = 0  # samples taken: the other vendors' troubles follow it

    @property
    def unit_name(self) -> str:
        return UNIT

    def gpu_pids(self) -> list[int]:
        return [g.pid for g in self.gpus]

    def facts(self, boot_time: float) -> NodeFacts:
        gpus = [
            h100.facts(g.index, g.uuid, g.serial, f"00000000:{_BUS_IDS[g.index % len(_BUS_IDS)]}:00.0")
            for g in self.gpus
        ]
        if self.vendor != "nvidia":  # an MI300X or Gaudi node: its own facts, no CUDA, no NVLink
            return dataclasses.replace(
                self._nvidia_facts(boot_time, gpus),
                gpu_source="amd-sysfs" if self.vendor == "amd" else "hl-smi",
                driver_version=None, cuda_version=None, nvml_version=None,
                gpus=[
                    accelerators.facts(self.scenario, g.index, g.uuid, g.serial,
                                       f"0000:{_BUS_IDS[g.index % len(_BUS_IDS)].lower()}:00.0")
                    for g in self.gpus
                ],
                stack=accelerators.stack(self.scenario, drives.kernel(self.index)),
            )
        return self._nvidia_facts(boot_time, gpus)

    def _nvidia_facts(self, boot_time: float, gpus: list) -> NodeFacts:
        return NodeFacts(
            hostname=self.name,
            os="Ubuntu 22.04.4 LTS",
            kernel=drives.kernel(self.index),
            cpu_model="Intel(R) Xeon(R) Platinum 8462Y+",
            cpu_count=CORES,
            memory_total_bytes=2048 * GIB,
            boot_time=boot_time,
            python="3.10.12",
            probe_version="demo",
            block_devices=[
                BlockDeviceFacts("nvme0n1", 1_920_383_410_176, "SAMSUNG MZ1L21T9HCLS-00A07", False),
                BlockDeviceFacts("nvme1n1", 7_681_501_126_656, "SAMSUNG MZQL27T6HBLA-00A07", False),
                BlockDeviceFacts("nvme2n1", 7_681_501_126_656, "SAMSUNG MZQL27T6HBLA-00A07", False),
            ],
            nics=[
                NicFacts("eno1", 25_000, "3c:ec:ef:00:00:01", 1500, "up"),
                NicFacts("ens2f0np0", 100_000, "b8:3f:d2:00:00:01", 9000, "up"),
            ],
            gpu_source="nvml" if gpus else None,  # --gpus 0: a CPU node, as the probe reports one
            gpu_note=None if gpus else "no NVIDIA driver found",
            driver_version=drives.driver(self.index) if gpus else None,
            cuda_version="12.4" if gpus else None,
            nvml_version=f"12.{drives.driver(self.index)}" if gpus else None,
            gpus=gpus,
            stack=drives.stack(self.index) if gpus else None,
        )

    def sample(self, now: float, interval_s: float) -> Sample:
        rng, scenario = self.rng, self.scenario
        starved_util = loader_util(now, interval_s) if scenario == STARVED else None
        gpus = [
            g.step(rng, interval_s, scenario == IDLE,
                   scenario == HOT_GPU and g.index == HOT_GPU_INDEX, starved_util)
            for g in self.gpus
        ]
        if self.vendor != "nvidia":
            self.steps += 1
            gpus = [
                accelerators.sample(self.scenario, g, self.steps,
                                    accelerators.xgmi_errors(self.scenario, g.index, self.steps))
                for g in gpus
            ]
        busy = [g.utilization_percent or 0.0 for g in gpus]
        job_share = sum(busy) / (100.0 * len(busy)) if busy else 0.0
        return Sample(
            time=now,
            cpu=host.cpu(rng, scenario, self._core_is_busy, job_share),
            memory=host.memory(rng, scenario, job_share),
            pressure=host.pressure(rng, scenario),
            tasks=host.tasks(rng, scenario),
            disks=host.disks(rng, scenario),
            filesystems=host.filesystems(),
            networks=host.networks(rng, scenario, job_share),
            ib_ports=self.fabric.ib_ports(job_share),
            gpus=gpus,
            nvlinks=self.fabric.nvlinks if self.vendor == "nvidia" else [],
            units=[self.unit.sample(self.boot_time)],
            drives=drives.drives(self.name, self.index, now),
        )

    def link_at(self, step: int) -> str:
        """UP, DOWN (unreachable) or RETRYING (reconnecting) at a step."""
        start = OUTAGE_START_STEP + self.outage_offset
        if self.scenario != FLAPPING or step < start:
            return UP
        phase = (step - start) % OUTAGE_PERIOD_STEPS
        if phase < OUTAGE_STEPS - RETRY_STEPS:
            return DOWN
        return RETRYING if phase < OUTAGE_STEPS else UP
