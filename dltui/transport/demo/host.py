"""A simulated node's host: CPU, memory, PSI, tasks, disks, file systems and NICs under its
scenario (a loader starving on a saturated dataset disk shows in iowait, PSI io and D-state)."""

from __future__ import annotations

import random

from dltui.core.models import (
    CoreSample,
    CpuSample,
    DiskSample,
    FilesystemSample,
    MemorySample,
    NetworkSample,
    PressureSample,
    TaskSample,
)

from .scenarios import CORES, GIB, IDLE, STARVED


def cpu(rng: random.Random, scenario: str, core_is_busy: list[bool], job_share: float) -> CpuSample:
    rand = rng.random
    starved = scenario == STARVED
    if scenario == IDLE:
        busy_base, quiet_base, spread = 0.2, 0.2, 3.0
    else:
        busy_base, quiet_base, spread = 49.0 + 35.0 * job_share, 3.0, 12.0
    iowait = 18.0 if starved else 0.0
    cores = []
    total = 0.0
    for i, is_busy in enumerate(core_is_busy):
        v = (busy_base if is_busy else quiet_base) + spread * rand()  # 64 cores x 512 nodes a second
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


def memory(rng: random.Random, scenario: str, job_share: float) -> MemorySample:
    used = (96 + 410 * job_share) * GIB + rng.uniform(-1, 1) * GIB
    total = 2048 * GIB
    cached = 1180 * GIB if scenario != IDLE else 240 * GIB
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


def pressure(rng: random.Random, scenario: str) -> PressureSample:
    if scenario == STARVED:
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


def tasks(rng: random.Random, scenario: str) -> TaskSample:
    if scenario == STARVED:
        blocked = rng.randrange(6, 12)
        return TaskSample(
            running=rng.randrange(10, 18), blocked_io=blocked, d_state_processes=blocked - 1
        )
    return TaskSample(running=rng.randrange(17, 22), blocked_io=0, d_state_processes=0)


def disks(rng: random.Random, scenario: str) -> list[DiskSample]:
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
    if scenario == STARVED:  # the dataset disk saturated
        data = _dataset_disk(
            rng.uniform(3.05e9, 3.25e9), 100.0, rng.uniform(48, 64), rng.uniform(16, 24)
        )
    elif scenario == IDLE:
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


def filesystems() -> list[FilesystemSample]:
    """New objects every sample, as a probe's decoder makes them."""
    return [
        FilesystemSample(
            "/", "/dev/nvme0n1p2", "ext4", 1_888_024_166_400, 412_316_860_416,
            1_379_722_870_784, 23.0, 6.1,
        ),
        FilesystemSample(
            "/data", "/dev/nvme1n1", "xfs", 7_680_000_000_000, 5_452_800_000_000,
            2_227_200_000_000, 71.0, 0.4,
        ),
        FilesystemSample(
            "/checkpoints", "/dev/nvme2n1", "xfs", 7_680_000_000_000, 6_873_600_000_000,
            806_400_000_000, 89.5, 0.1,
        ),
        FilesystemSample(
            "/dev/shm", "tmpfs", "tmpfs", 1_099_511_627_776, 52_776_558_133,
            1_046_735_069_643, 4.8, 0.1,
        ),
    ]


def networks(rng: random.Random, scenario: str, job_share: float) -> list[NetworkSample]:
    mgmt_rx, mgmt_tx = rng.uniform(20e3, 90e3), rng.uniform(15e3, 60e3)
    rx = rng.uniform(0.6e9, 1.1e9) * job_share if scenario != STARVED else rng.uniform(0.05e9, 0.2e9)
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
