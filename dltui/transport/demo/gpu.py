"""A simulated GPU under its node's scenario: what persists between samples (offsets,
counters, the job on it) and one second of it, as an H100 (``h100``) would report it."""

from __future__ import annotations

import random

from dltui.core.models import GpuProcess, GpuSample
from dltui.node.schema import GPU_IDLE, HW_SLOWDOWN, SW_POWER_CAP, SW_THERMAL_SLOWDOWN

from . import h100
from .scenarios import EPOCH, LOADER_PERIOD_S, LOADER_STALL_S, SUBSAMPLES_PER_S, UNIT


class SimGpu:
    """What persists between samples for one simulated GPU: offsets, counters, the job on it."""

    def __init__(self, rng: random.Random, index: int, pid: int, holder: dict | None = None):
        self.index = index
        self.holder = holder or {}  # the job's owner, Slurm job or container (demo/jobs.py)
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

    def step(
        self,
        rng: random.Random,
        interval_s: float,
        idle: bool,
        hot: bool,
        starved_util: list[float] | None,
    ) -> GpuSample:
        """One sample: busy (or idle, or stalled by a starving loader), warming towards its
        load's temperature; a hot GPU throttles (software, then hardware slowdown)."""
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
        power = min(power, h100.POWER_LIMIT_W)
        target_c = 26.0 + self.slot_heat_c if idle else 52.0 + 16.0 * load + self.slot_heat_c
        if hot:
            target_c = 89.5
        self.temperature_c += (target_c - self.temperature_c) * 0.08 + rng.uniform(-0.6, 0.6)
        temperature = round(self.temperature_c)
        margin = (
            round(max(-1.0, 91.0 - self.temperature_c + rng.uniform(-0.4, 0.4)))
            if hot
            else round(96.0 - self.temperature_c)
        )
        mask = GPU_IDLE if idle else 0
        sm_clock = h100.SM_CLOCK_MAX_MHZ
        if power > 680.0:
            mask |= SW_POWER_CAP
            sm_clock = 1935.0 + 15.0 * rng.randrange(0, 3)
            self.power_cap_us += int(interval_s * 400_000)
        if hot and temperature >= 87:
            mask |= SW_THERMAL_SLOWDOWN
            self.sw_thermal_us += int(interval_s * 1_000_000)
            sm_clock = 1410.0 + 15.0 * rng.randrange(0, 12)
            power = min(power, 560.0 + rng.uniform(-20, 20))
            if margin <= 1:
                mask |= HW_SLOWDOWN
                self.hw_thermal_us += int(interval_s * 1_000_000)
                sm_clock = 990.0
        if idle:
            sm_clock = 345.0
        mem_used = 1.0 if idle else self.job_mib + rng.choice((0.0, 0.0, 128.0, -64.0))
        hbm = round(temperature - 4 + rng.uniform(-1, 1)) if not hot else round(temperature - 1)
        return h100.sample(
            self.index,
            uuid=self.uuid,
            utilization_percent=float(util),
            memory_utilization_percent=0.0
            if idle
            else round(8.0 + 28.0 * load + rng.uniform(-3, 3)),
            utilization_samples_percent=samples,
            memory_used_mib=mem_used,
            temperature_c=float(temperature),
            memory_temperature_c=float(hbm),
            temperature_margin_c=float(margin),
            power_w=round(power, 2),
            sm_clock_mhz=sm_clock,
            clock_event_reasons_mask=mask,
            clock_event_sw_power_cap_us=self.power_cap_us,
            clock_event_sw_thermal_us=self.sw_thermal_us,
            clock_event_hw_thermal_us=self.hw_thermal_us,
            ecc_corrected_aggregate=self.ecc_corrected_aggregate,
            processes=[] if idle else [GpuProcess(self.pid, "python3", mem_used - 512.0, UNIT, **self.holder)],
        )


def loader_util(now: float, interval_s: float) -> list[float]:
    """Sub-second utilisation: busy, except a stall of LOADER_STALL_S every LOADER_PERIOD_S."""
    n = max(1, round(interval_s * SUBSAMPLES_PER_S))
    start = now - interval_s
    out = []
    for k in range(n):
        t = (start + (k + 1) / SUBSAMPLES_PER_S - EPOCH) % LOADER_PERIOD_S
        out.append(0.0 if t < LOADER_STALL_S else 100.0)
    return out
