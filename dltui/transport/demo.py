"""A seeded simulated fleet: the data behind ``dltui demo``, the screenshots, UI tests and benchmarks.

Every node follows a scenario chosen by its position in the fleet (the pattern repeats every 16
nodes): steady training, one GPU running hot and throttling, a data loader starving its GPUs
while the dataset disk is saturated, a node that drops off the network and comes back, an idle
node, a node whose kernel OOM-kills a DataLoader worker. Values come only from
``random.Random`` seeded with (seed, node name) and the step number, and time from a simulated
clock that starts at a fixed epoch: stepping the fleet by hand (``step_into``) gives the same
numbers and times on every run. Figures are H100 SXM 80 GB ones (see the real captures in
``tests/fixtures/nvidia-smi/``).
"""

from __future__ import annotations

import asyncio
import random
import time

from dltui.core import status as st
from dltui.core.models import (
    BlockDeviceFacts,
    CoreSample,
    CpuSample,
    DiskSample,
    FilesystemSample,
    GpuFacts,
    GpuProcess,
    GpuSample,
    MemorySample,
    NetworkSample,
    NicFacts,
    NodeEvent,
    NodeFacts,
    PressureSample,
    Sample,
    TaskSample,
    UnitSample,
)
from dltui.node.probe.kernel_log import oom_event
from dltui.node.schema import (
    GPU_IDLE,
    HW_SLOWDOWN,
    SW_POWER_CAP,
    SW_THERMAL_SLOWDOWN,
    decode_clock_event_reasons,
)

from . import demo_drives
from .base import Sink
from .command import CommandResult

EPOCH = 1_767_258_000.0  # 2026-01-01 09:00 UTC: a fixed start so stepped runs are repeatable
SUBSAMPLES_PER_S = 6  # NVML utilisation samples every 1/6 s (H100)
CORES = 64
MIB = 1024 * 1024
GIB = 1024 * MIB

TRAINING, HOT_GPU, STARVED, FLAPPING, IDLE, OOM = (
    "training",
    "hot-gpu",
    "starved",
    "flapping",
    "idle",
    "oom",
)
_PATTERN = (
    TRAINING,
    HOT_GPU,
    STARVED,
    FLAPPING,
    TRAINING,
    IDLE,
    OOM,
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
)
HOT_GPU_INDEX = 3
LOADER_PERIOD_S = 4.0  # the starved loader's GPUs idle once every 4 s ...
LOADER_STALL_S = 1.5  # ... for 1.5 s
OUTAGE_START_STEP = 150  # the flapping node drops at this step ...
OUTAGE_STEPS = 40  # ... stays away this long (the last RETRY_STEPS of it reconnecting) ...
RETRY_STEPS = 8
OUTAGE_PERIOD_STEPS = 600  # ... and does it again this many steps later
OOM_KILL_STEP = 100  # the OOM node's kernel kills a DataLoader worker at this step
UNIT = "dl_train.service"
CRASHLOOP_INDEX = 7  # gpu08's training unit crash-loops: systemd restarts it every CRASH_EVERY steps
CRASH_EVERY = 25
# ``dltui demo`` opens on a story already under way: the simulator first runs this many steps
# into the past, so the hot GPU has throttled for a minute, the OOM kill is on the timeline and
# the flapping node is away (back some 20 s after start: the story moves on).
PREFILL_STEPS = 170
PREFILL_NODE_SAMPLES = 20_000  # a large fleet gets fewer steps: start-up stays a few seconds
PREFILL_CHUNK = 16  # node-samples between yields to the event loop: the screen stays live
NODES_PER_SLOT = 8  # live: at most this many nodes' samples at once

UP, DOWN, RETRYING = "up", "down", "retrying"
_BUS_IDS = ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")


_REASONS: dict[int, list[str]] = {}


def _reasons(mask: int) -> list[str]:
    """Decoded clock-event reasons, shared between samples (models are treated as immutable)."""
    names = _REASONS.get(mask)
    if names is None:
        names = _REASONS[mask] = decode_clock_event_reasons(mask)
    return names


def scenario_for(index: int) -> str:
    return _PATTERN[index % len(_PATTERN)]


class _Gpu:
    """What persists between samples for one simulated GPU: offsets, counters, the job on it."""

    def __init__(self, rng: random.Random, index: int, pid: int):
        self.index = index
        self.uuid = (
            f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
            f"a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
        )
        self.slot_heat_c = 2.0 * (index % 4) + rng.uniform(-1.5, 1.5)  # rear slots run warmer
        self.job_mib = rng.choice((68_412.0, 71_204.0, 74_880.0))
        self.pid = pid
        self.power_cap_us = 0
        self.sw_thermal_us = 0
        self.hw_thermal_us = 0
        self.temperature_c = 45.0
        self.ecc_corrected_aggregate = 2 if rng.random() < 0.02 else 0  # a rare old corrected error
        self.serial = f"16523{rng.randrange(10**7, 10**8)}"


class _Node:
    def __init__(self, name: str, index: int, seed: int, gpus: int):
        self.name = name
        self.index = index
        self.scenario = scenario_for(index)
        self.rng = random.Random(f"{seed}:{name}")
        rng = self.rng
        self.outage_offset = rng.randrange(0, 60) if index >= len(_PATTERN) else 0
        job_pid = rng.randrange(20_000, 400_000)
        self.gpus = [_Gpu(rng, i, job_pid + 40 + i) for i in range(gpus)]
        busy = set(rng.sample(range(CORES), 16))  # where the loader workers run
        self._core_is_busy = [i in busy for i in range(CORES)]
        self.link = UP
        self.crashloops = index % len(_PATTERN) == CRASHLOOP_INDEX
        # its own random stream: the samples' numbers stay what they were before units existed
        self.unit = _DemoUnit(random.Random(f"{seed}:{name}:unit"), job_pid, active=self.scenario != IDLE)
        self.boot_time = EPOCH - 19 * 86400

    def facts(self, boot_time: float) -> NodeFacts:
        gpus = [
            GpuFacts(
                index=g.index,
                name="NVIDIA H100 80GB HBM3",
                uuid=g.uuid,
                bus_id=f"00000000:{_BUS_IDS[g.index % len(_BUS_IDS)]}:00.0",
                serial=g.serial,
                vbios_version="96.00.A5.00.01",
                memory_total_mib=81559.0,
                pcie_max_gen=5,
                pcie_max_width=16,
                pcie_gpu_max_gen=5,
                pcie_host_max_gen=5,
                persistence_mode=True,
                ecc_enabled=True,
                mig_enabled=False,
                power_limit_w=700.0,
                power_limit_default_w=700.0,
                power_limit_min_w=200.0,
                power_limit_max_w=700.0,
                temperature_shutdown_c=-8.0,
                temperature_slowdown_c=-2.0,
                temperature_max_operating_c=0.0,
                memory_temperature_max_c=95.0,
                thresholds_are_margin_offsets=True,
                compute_capability="9.0",
            )
            for g in self.gpus
        ]
        return NodeFacts(
            hostname=self.name,
            os="Ubuntu 22.04.4 LTS",
            kernel=demo_drives.kernel(self.index),
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
            driver_version=demo_drives.driver(self.index) if gpus else None,
            cuda_version="12.4" if gpus else None,
            nvml_version=f"12.{demo_drives.driver(self.index)}" if gpus else None,
            gpus=gpus,
            stack=demo_drives.stack(self.index) if gpus else None,
        )

    # -- one sample --------------------------------------------------------------------------

    def sample(self, now: float, interval_s: float) -> Sample:
        starved_util = self._loader_util(now, interval_s) if self.scenario == STARVED else None
        gpus = [self._gpu(g, interval_s, starved_util) for g in self.gpus]
        busy = [g.utilization_percent or 0.0 for g in gpus]
        job_share = sum(busy) / (100.0 * len(busy)) if busy else 0.0
        return Sample(
            time=now,
            cpu=self._cpu(job_share),
            memory=self._memory(job_share),
            pressure=self._pressure(),
            tasks=self._tasks(),
            disks=self._disks(),
            filesystems=self._filesystems(),
            networks=self._networks(job_share),
            gpus=gpus,
            units=[self.unit.sample(self.boot_time)],
            drives=demo_drives.drives(self.name, self.index, now),
        )

    def _loader_util(self, now: float, interval_s: float) -> list[float]:
        """Sub-second utilisation: busy, except a stall of LOADER_STALL_S every LOADER_PERIOD_S."""
        n = max(1, round(interval_s * SUBSAMPLES_PER_S))
        start = now - interval_s
        out = []
        for k in range(n):
            t = (start + (k + 1) / SUBSAMPLES_PER_S - EPOCH) % LOADER_PERIOD_S
            out.append(0.0 if t < LOADER_STALL_S else 100.0)
        return out

    def _gpu(self, g: _Gpu, interval_s: float, starved_util: list[float] | None) -> GpuSample:
        rng = self.rng
        idle = self.scenario == IDLE
        hot = self.scenario == HOT_GPU and g.index == HOT_GPU_INDEX
        n = max(1, round(interval_s * SUBSAMPLES_PER_S))
        if idle:
            samples = [0.0] * n
        elif starved_util is not None:
            samples = starved_util
        else:
            samples = [100.0] * n
            if rng.random() < 0.15:
                samples[rng.randrange(n)] = 94.0
        util = round(sum(samples) / len(samples))
        load = util / 100.0
        power = 69.0 + rng.uniform(0, 6) if idle else 180.0 + 500.0 * load + rng.uniform(-25, 18)
        power = min(power, 700.0)
        target_c = 26.0 + g.slot_heat_c if idle else 52.0 + 16.0 * load + g.slot_heat_c
        if hot:
            target_c = 89.5
        g.temperature_c += (target_c - g.temperature_c) * 0.08 + rng.uniform(-0.6, 0.6)
        temperature = round(g.temperature_c)
        margin = (
            round(max(-1.0, 91.0 - g.temperature_c + rng.uniform(-0.4, 0.4)))
            if hot
            else round(96.0 - g.temperature_c)
        )
        mask = GPU_IDLE if idle else 0
        sm_clock = 1980.0
        if power > 680.0:
            mask |= SW_POWER_CAP
            sm_clock = 1935.0 + 15.0 * rng.randrange(0, 3)
            g.power_cap_us += int(interval_s * 400_000)
        if hot and temperature >= 87:
            mask |= SW_THERMAL_SLOWDOWN
            g.sw_thermal_us += int(interval_s * 1_000_000)
            sm_clock = 1410.0 + 15.0 * rng.randrange(0, 12)
            power = min(power, 560.0 + rng.uniform(-20, 20))
            if margin <= 1:
                mask |= HW_SLOWDOWN
                g.hw_thermal_us += int(interval_s * 1_000_000)
                sm_clock = 990.0
        if idle:
            sm_clock = 345.0
        mem_used = 1.0 if idle else g.job_mib + rng.choice((0.0, 0.0, 128.0, -64.0))
        hbm = round(temperature - 4 + rng.uniform(-1, 1)) if not hot else round(temperature - 1)
        return GpuSample(
            index=g.index,
            uuid=g.uuid,
            name="NVIDIA H100 80GB HBM3",
            utilization_percent=float(util),
            memory_utilization_percent=0.0
            if idle
            else round(8.0 + 28.0 * load + rng.uniform(-3, 3)),
            utilization_samples_percent=samples,
            utilization_sample_period_ms=1000.0 / SUBSAMPLES_PER_S,
            memory_used_mib=mem_used,
            memory_total_mib=81559.0,
            temperature_c=float(temperature),
            memory_temperature_c=float(hbm),
            temperature_margin_c=float(margin),
            power_w=round(power, 2),
            power_limit_w=700.0,
            sm_clock_mhz=sm_clock,
            memory_clock_mhz=2619.0,
            sm_clock_max_mhz=1980.0,
            memory_clock_max_mhz=2619.0,
            pstate=0,
            fan_percent=None,  # SXM boards are cooled by chassis fans the GPU cannot see
            clock_event_reasons_mask=mask,
            clock_event_reasons=_reasons(mask),
            clock_event_sw_power_cap_us=g.power_cap_us,
            clock_event_sync_boost_us=0,
            clock_event_sw_thermal_us=g.sw_thermal_us,
            clock_event_hw_thermal_us=g.hw_thermal_us,
            clock_event_hw_power_brake_us=0,
            pcie_gen=5,
            pcie_width=16,
            pcie_max_gen=5,
            pcie_max_width=16,
            pcie_replay_count=0,
            ecc_corrected_volatile=0,
            ecc_uncorrected_volatile=0,
            ecc_corrected_aggregate=g.ecc_corrected_aggregate,
            ecc_uncorrected_aggregate=0,
            remapped_rows_correctable=0,
            remapped_rows_uncorrectable=0,
            remapped_rows_pending=False,
            remapped_rows_failure=False,
            retired_pages_pending=None,  # Hopper remaps rows instead of retiring pages
            processes=[] if idle else [GpuProcess(g.pid, "python3", mem_used - 512.0, UNIT)],
        )

    def _cpu(self, job_share: float) -> CpuSample:
        rand = self.rng.random
        starved = self.scenario == STARVED
        if self.scenario == IDLE:
            busy_base, quiet_base, spread = 0.2, 0.2, 3.0
        else:
            busy_base, quiet_base, spread = 49.0 + 35.0 * job_share, 3.0, 12.0
        iowait = 18.0 if starved else 0.0
        cores = []
        total = 0.0
        for i, is_busy in enumerate(self._core_is_busy):
            v = (
                busy_base if is_busy else quiet_base
            ) + spread * rand()  # cheap: 64 cores x 512 nodes a second
            total += v
            cores.append(CoreSample(i, v, 0.8 * v, 0.2 * v, iowait if is_busy else 0.0, 0.0))
        total /= CORES
        load = total / 100.0 * CORES + (9.0 if starved else 0.0)
        return CpuSample(
            total_percent=total,
            user_percent=0.8 * total,
            system_percent=0.2 * total,
            iowait_percent=14.0 + 8.0 * rand() if starved else 0.6 * rand(),
            steal_percent=0.0,
            load_1=load + rand() - 0.5,
            load_5=load,
            load_15=load - 1.0,
            cores=cores,
        )

    def _memory(self, job_share: float) -> MemorySample:
        used = (96 + 410 * job_share) * GIB + self.rng.uniform(-1, 1) * GIB
        total = 2048 * GIB
        cached = 1180 * GIB if self.scenario != IDLE else 240 * GIB
        return MemorySample(
            total_bytes=total,
            used_bytes=int(used),
            available_bytes=int(total - used - 20 * GIB),
            cached_bytes=int(cached),
            buffers_bytes=int(3.2 * GIB),
            shmem_bytes=int(48 * GIB * job_share),
            swap_total_bytes=0,
            swap_used_bytes=0,
        )

    def _pressure(self) -> PressureSample:
        rng = self.rng
        if self.scenario == STARVED:
            io_some, io_full = rng.uniform(38, 52), rng.uniform(22, 31)
        else:
            io_some, io_full = rng.uniform(0, 1.2), rng.uniform(0, 0.4)
        cpu_some = rng.uniform(0.5, 3.0)
        return PressureSample(
            cpu_some_avg10_percent=round(cpu_some, 2),
            cpu_some_avg60_percent=round(cpu_some * 0.9, 2),
            cpu_full_avg10_percent=0.0,
            cpu_full_avg60_percent=0.0,
            io_some_avg10_percent=round(io_some, 2),
            io_some_avg60_percent=round(io_some * 0.95, 2),
            io_full_avg10_percent=round(io_full, 2),
            io_full_avg60_percent=round(io_full * 0.95, 2),
            memory_some_avg10_percent=0.0,
            memory_some_avg60_percent=0.0,
            memory_full_avg10_percent=0.0,
            memory_full_avg60_percent=0.0,
        )

    def _tasks(self) -> TaskSample:
        rng = self.rng
        if self.scenario == STARVED:
            blocked = rng.randrange(6, 12)
            return TaskSample(
                running=rng.randrange(10, 18), blocked_io=blocked, d_state_processes=blocked - 1
            )
        return TaskSample(running=rng.randrange(17, 22), blocked_io=0, d_state_processes=0)

    def _disks(self) -> list[DiskSample]:
        rng = self.rng
        os_disk = DiskSample(
            "nvme0n1",
            round(rng.uniform(0, 80_000)),
            round(rng.uniform(200_000, 1_500_000)),
            round(rng.uniform(0, 12)),
            round(rng.uniform(20, 90)),
            round(rng.uniform(0.5, 2.5), 1),
            0.01,
            round(rng.uniform(0.05, 0.2), 2),
        )
        if self.scenario == STARVED:  # the dataset disk saturated
            data = _dataset_disk(
                rng.uniform(3.05e9, 3.25e9), 100.0, rng.uniform(48, 64), rng.uniform(16, 24)
            )
        elif self.scenario == IDLE:
            data = DiskSample("nvme1n1", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None)
        else:
            data = _dataset_disk(
                rng.uniform(3.6e8, 4.8e8),
                rng.uniform(18, 30),
                rng.uniform(1, 3),
                rng.uniform(0.3, 0.6),
            )
        ckpt = DiskSample(
            "nvme2n1",
            0.0,
            round(rng.uniform(0, 4e6)),
            0.0,
            round(rng.uniform(0, 40)),
            round(rng.uniform(0, 3), 1),
            0.02,
            round(rng.uniform(0.02, 0.1), 2),
        )
        return [os_disk, data, ckpt]

    def _filesystems(self) -> list[FilesystemSample]:
        return [
            FilesystemSample(
                "/",
                "/dev/nvme0n1p2",
                "ext4",
                1_888_024_166_400,
                412_316_860_416,
                1_379_722_870_784,
                23.0,
                6.1,
            ),
            FilesystemSample(
                "/data",
                "/dev/nvme1n1",
                "xfs",
                7_680_000_000_000,
                5_452_800_000_000,
                2_227_200_000_000,
                71.0,
                0.4,
            ),
            FilesystemSample(
                "/checkpoints",
                "/dev/nvme2n1",
                "xfs",
                7_680_000_000_000,
                6_873_600_000_000,
                806_400_000_000,
                89.5,
                0.1,
            ),
            FilesystemSample(
                "/dev/shm",
                "tmpfs",
                "tmpfs",
                1_099_511_627_776,
                52_776_558_133,
                1_046_735_069_643,
                4.8,
                0.1,
            ),
        ]

    def _networks(self, job_share: float) -> list[NetworkSample]:
        rng = self.rng
        mgmt_rx, mgmt_tx = rng.uniform(20e3, 90e3), rng.uniform(15e3, 60e3)
        rx = (
            rng.uniform(0.6e9, 1.1e9) * job_share
            if self.scenario != STARVED
            else rng.uniform(0.05e9, 0.2e9)
        )
        tx = rng.uniform(0.05e9, 0.12e9) * job_share
        return [
            NetworkSample(
                "eno1",
                round(mgmt_rx),
                round(mgmt_tx),
                round(mgmt_rx / 800),
                round(mgmt_tx / 700),
                0,
                0,
                0,
                0,
            ),
            NetworkSample(
                "ens2f0np0", round(rx), round(tx), round(rx / 8400), round(tx / 8400), 0, 0, 12, 0
            ),
        ]

    # -- connectivity ------------------------------------------------------------------------

    def link_at(self, step: int) -> str:
        """UP, DOWN (unreachable) or RETRYING (reconnecting) at a step."""
        start = OUTAGE_START_STEP + self.outage_offset
        if self.scenario != FLAPPING or step < start:
            return UP
        phase = (step - start) % OUTAGE_PERIOD_STEPS
        if phase < OUTAGE_STEPS - RETRY_STEPS:
            return DOWN
        return RETRYING if phase < OUTAGE_STEPS else UP


class _DemoUnit:
    """The node's dl_train.service, as systemd would report it."""

    def __init__(self, rng: random.Random, pid: int, active: bool):
        self.rng = rng
        self.main_pid = pid
        self.active = active
        self.restarts = 0
        self.result = "success"
        self.exit_status = 0
        self.invocation = f"{rng.getrandbits(128):032x}"
        self.started_at = EPOCH - 6 * 3600.0  # epoch s; the job has run six hours

    def restart(self, now: float, crashed: bool) -> None:
        if crashed:
            self.restarts += 1
            self.result, self.exit_status = "exit-code", 1
        self.invocation = f"{self.rng.getrandbits(128):032x}"
        self.main_pid += 7
        self.started_at = now
        self.active = True

    def sample(self, boot_time: float) -> UnitSample:
        return UnitSample(
            UNIT, "loaded", "active" if self.active else "inactive", "running" if self.active else "dead",
            self.result, self.restarts, self.main_pid if self.active else 0, self.exit_status,
            self.invocation if self.active else "", max(0, round((self.started_at - boot_time) * 1e6)),
            None, None, None,
        )

    def show(self, boot_time: float) -> str:
        u = self.sample(boot_time)
        return (
            f"LoadState={u.load_state}\nActiveState={u.active_state}\nSubState={u.sub_state}\nResult={u.result}\n"
            f"NRestarts={u.restarts_total}\nMainPID={u.main_pid}\nExecMainStatus={u.exec_main_status}\n"
            f"InvocationID={u.invocation_id}\nExecMainStartTimestampMonotonic={u.started_monotonic_us}\n"
            "MemoryCurrent=[not set]\nCPUUsageNSec=[not set]\n"
        )


class DemoTransport:
    """A simulated fleet of H100 nodes. ``names`` are ``gpu01``, ``gpu02``, … in order."""

    simulated = True  # actions on it are simulated (run_command), and say so

    def __init__(self, nodes: int = 12, gpus: int = 8, seed: int = 7, interval_s: float = 1.0):
        digits = max(2, len(str(nodes)))
        self.names = [f"gpu{i:0{digits}d}" for i in range(1, nodes + 1)]
        self.interval_s = interval_s
        self.now = EPOCH
        self.step_count = 0
        self._nodes = [_Node(name, i, seed, gpus) for i, name in enumerate(self.names)]
        self._started = False
        self._live = False
        self._boot_time = EPOCH

    @property
    def prefill_steps(self) -> int:
        """How many steps of past ``run`` simulates before streaming."""
        return max(1, min(PREFILL_STEPS, PREFILL_NODE_SAMPLES // max(1, len(self._nodes))))

    def clock(self) -> float:
        """The fleet's time: simulated while stepping (by hand, or the prefilled past), the
        wall clock once ``run`` streams. Pass it to ``FleetState(clock=...)``."""
        return time.time() if self._live else self.now

    def step_into(self, sink: Sink, steps: int = 1) -> None:
        """Advance the whole fleet ``steps`` intervals at once, without waiting."""
        self._start(sink)
        for _ in range(steps):
            self.step_count += 1
            self.now += self.interval_s
            for node in self._nodes:
                self._step_node(sink, node, self.now)

    async def run(self, sink: Sink) -> None:
        """Simulate ``prefill_steps`` of the past, then stream until cancelled, nodes spread over
        the interval as real streams would arrive."""
        # Samples carry the wall clock (the past ones the wall clock minus their age), so ages,
        # timeline and rule durations agree with what streams afterwards.
        self.now = time.time() - self.prefill_steps * self.interval_s
        self._start(sink)
        done = 0
        for _ in range(self.prefill_steps):
            self.step_count += 1
            self.now += self.interval_s
            for node in self._nodes:
                self._step_node(sink, node, self.now)
                done += 1
                if done % PREFILL_CHUNK == 0:
                    await asyncio.sleep(0)
        self._live = True
        # Small groups, as independent streams arrive: one big batch would hold the screen's
        # event loop for tens of milliseconds on a large fleet.
        slots = max(min(len(self._nodes), 10), -(-len(self._nodes) // NODES_PER_SLOT))
        next_tick = time.monotonic()
        while True:
            self.step_count += 1
            for k in range(slots):
                self.now = time.time()
                for node in self._nodes[k::slots]:
                    self._step_node(sink, node, self.now)
                next_tick += self.interval_s / slots
                await asyncio.sleep(max(0.0, next_tick - time.monotonic()))

    def _start(self, sink: Sink) -> None:
        if self._started:
            return
        self._started = True
        self._boot_time = self.now - 19 * 86400
        for node in self._nodes:
            node.boot_time = self._boot_time
            node.unit.started_at = self.now - 6 * 3600.0
            sink.on_status(node.name, st.CONNECTING)
            sink.on_hello(node.name, node.facts(self._boot_time), self.interval_s)
            sink.on_status(node.name, st.OK)

    def _step_node(self, sink: Sink, node: _Node, now: float) -> None:
        link = node.link_at(self.step_count)
        if link != node.link:
            if link == DOWN:
                sink.on_status(
                    node.name, st.UNREACHABLE, "connection lost: server not responding to keepalive"
                )
            elif link == RETRYING:
                sink.on_status(node.name, st.RECONNECTING, "no route to host; retrying every 5 s")
            else:
                sink.on_hello(node.name, node.facts(self._boot_time), self.interval_s)
                sink.on_status(node.name, st.OK)
            node.link = link
        if node.crashloops and self.step_count % CRASH_EVERY == 0:
            node.unit.restart(now, crashed=True)  # Restart=always brings it back, NRestarts rises
        if link == UP:
            sink.on_sample(node.name, node.sample(now, self.interval_s))
        if node.scenario == OOM and self.step_count == OOM_KILL_STEP:
            # the kernel's line as the probe reports it (same builder), 31 GiB of a worker
            kill = oom_event(
                now,
                48213,
                "pt_data_worker:3",
                False,
                31 * GIB,
                line_id=f"demo-boot/{self.step_count}",
            )
            sink.on_event(node.name, NodeEvent.from_dict(kill))


    # -- simulated actions (the demo's answer to what a node would run) -----------------------

    async def run_command(self, node: str, argv, timeout_s: float) -> CommandResult:
        """What a node would answer, simulated: identity, systemctl show / restart / stop /
        start of dl_train.service, its journal, a kill. Nothing leaves this process."""
        await asyncio.sleep(0.05)
        argv = list(argv)
        n = next((x for x in self._nodes if x.name == node), None)
        if n is None or n.link != UP:
            return CommandResult(tuple(argv), None, problem="unreachable", reason=f"{node} is not connected (demo)")
        if argv[:1] == ["timeout"]:
            argv = argv[4:]
        if argv[:2] == ["sudo", "-n"]:
            argv = argv[2:]
        out, status = _simulate(n, argv, self.now if not self._live else time.time())
        return CommandResult(tuple(argv), status, out, "" if status == 0 else out)


def _simulate(n: _Node, argv: list[str], now: float) -> tuple[str, int]:
    import json

    from dltui.actions.commands import IDENTITY_ARGV

    unit = n.unit
    if tuple(argv) == IDENTITY_ARGV:
        return "0\nroot\n/usr/bin/systemctl\n/usr/bin/kill\n", 0
    tool = argv[0].rsplit("/", 1)[-1] if argv else ""
    if tool == "systemctl" and argv[1:2] == ["show"]:
        units = [a for a in argv[2:] if a.endswith(".service")]
        return "\n".join(unit.show(n.boot_time) if u == UNIT else "LoadState=not-found\n" for u in units), 0
    if tool == "systemctl" and len(argv) == 3 and argv[2] == UNIT:
        if argv[1] in ("restart", "start"):
            unit.restart(now, crashed=False)
        elif argv[1] == "stop":
            unit.active = False
        return "", 0
    if tool == "journalctl":
        step = int(now) % 100000
        after = -1  # --after-cursor: only what came later (a frozen demo clock adds nothing)
        if "--after-cursor" in argv:
            after = int(argv[argv.index("--after-cursor") + 1].rsplit("=", 1)[-1])
        lines = []
        for k in range(3):
            if step * 3 + k <= after:
                continue
            text = f"step {step * 3 + k}: loss {2.0 + (step % 7) / 10:.3f}, {1180 + k} samples/s"
            if n.crashloops and k == 2:
                text = "RuntimeError: CUDA error: an illegal memory access was encountered"
            lines.append(
                json.dumps(
                    {
                        "__CURSOR": f"s=demo;i={step * 3 + k}",
                        "__REALTIME_TIMESTAMP": str(int(now * 1e6)),
                        "MESSAGE": text,
                    }
                )
            )
        return "\n".join(lines) + "\n", 0
    if tool == "sh" and argv[1:2] == ["-c"] and argv[-1].startswith("/proc/"):
        pid = int(argv[-1].split("/")[2])
        mine = pid == unit.main_pid or any(pid == g.pid for g in n.gpus)
        return "0\n" + ("0::/system.slice/dl_train.service\n" if mine else "0::/user.slice\n"), 0
    if tool == "nvidia-smi":
        return "".join(f"{g.pid}\n" for g in n.gpus), 0
    if tool == "kill":
        return "", 0
    if tool == "test":
        return "", 1  # the signalled process is gone
    return f"demo: {' '.join(argv)}: not simulated", 127


def _dataset_disk(
    read_bytes_per_s: float, busy: float, queue: float, await_ms: float
) -> DiskSample:
    """The dataset NVMe, read in 128 KiB requests."""
    return DiskSample(
        "nvme1n1",
        round(read_bytes_per_s),
        0.0,
        round(read_bytes_per_s / 131072),
        0.0,
        round(busy, 1),
        round(queue, 1),
        round(await_ms, 2 if await_ms < 1 else 1),
    )
