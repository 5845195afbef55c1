"""The one synthetic GPU: an H100 SXM 80 GB as NVML reports it (its fixed properties from the
real captures in tests/fixtures/nvidia-smi/), given what a scenario measured. The demo fleet
and the burn-in demo both build their GPUs here."""

from __future__ import annotations

from dltui.core.models import GpuFacts, GpuProcess, GpuSample
from dltui.node.schema import decode_clock_event_reasons

NAME = "NVIDIA H100 80GB HBM3"
MEMORY_TOTAL_MIB = 81559.0
POWER_LIMIT_W = 700.0
SM_CLOCK_MAX_MHZ = 1980.0
MEMORY_CLOCK_MHZ = 2619.0
PCIE_GEN, PCIE_WIDTH = 5, 16
SUBSAMPLE_PERIOD_MS = 1000.0 / 6  # NVML's utilisation samples, every 1/6 s

_REASONS: dict[int, list[str]] = {}


def reasons(mask: int) -> list[str]:
    """Decoded clock-event reasons, shared between samples (models are treated as immutable)."""
    names = _REASONS.get(mask)
    if names is None:
        names = _REASONS[mask] = decode_clock_event_reasons(mask) or []
    return names


def facts(index: int, uuid: str | None = None, serial: str | None = None,
          bus_id: str | None = None) -> GpuFacts:
    return GpuFacts(
        index=index,
        vendor="nvidia",
        name=NAME,
        uuid=uuid,
        bus_id=bus_id,
        serial=serial,
        vbios_version="96.00.A5.00.01",
        memory_total_mib=MEMORY_TOTAL_MIB,
        pcie_max_gen=PCIE_GEN,
        pcie_max_width=PCIE_WIDTH,
        pcie_gpu_max_gen=PCIE_GEN,
        pcie_host_max_gen=PCIE_GEN,
        persistence_mode=True,
        ecc_enabled=True,
        mig_enabled=False,
        power_limit_w=POWER_LIMIT_W,
        power_limit_default_w=POWER_LIMIT_W,
        power_limit_min_w=200.0,
        power_limit_max_w=POWER_LIMIT_W,
        temperature_shutdown_c=-8.0,
        temperature_slowdown_c=-2.0,
        temperature_max_operating_c=0.0,
        memory_temperature_max_c=95.0,
        thresholds_are_margin_offsets=True,
        compute_capability="9.0",
    )


def sample(
    index: int,
    *,
    utilization_percent: float,
    temperature_c: float,
    memory_temperature_c: float,
    temperature_margin_c: float,
    power_w: float,
    sm_clock_mhz: float,
    uuid: str | None = None,
    utilization_samples_percent: list[float] | None = None,
    memory_utilization_percent: float | None = None,
    memory_used_mib: float | None = None,
    clock_event_reasons_mask: int = 0,
    clock_event_sw_power_cap_us: int | None = None,
    clock_event_sw_thermal_us: int = 0,
    clock_event_hw_thermal_us: int = 0,
    ecc_corrected_aggregate: int | None = None,
    processes: list[GpuProcess] | None = None,
) -> GpuSample:
    """One sample of a healthy board (PCIe at full link, no ECC trouble) with what was
    measured; a counter a scenario does not follow stays None (not reported)."""
    return GpuSample(
        index=index,
        vendor="nvidia",
        uuid=uuid,
        name=NAME,
        utilization_percent=utilization_percent,
        memory_utilization_percent=memory_utilization_percent,
        utilization_samples_percent=utilization_samples_percent or [],
        utilization_sample_period_ms=SUBSAMPLE_PERIOD_MS if utilization_samples_percent else None,
        memory_used_mib=memory_used_mib,
        memory_total_mib=MEMORY_TOTAL_MIB,
        temperature_c=temperature_c,
        memory_temperature_c=memory_temperature_c,
        temperature_margin_c=temperature_margin_c,
        power_w=power_w,
        power_limit_w=POWER_LIMIT_W,
        sm_clock_mhz=sm_clock_mhz,
        memory_clock_mhz=MEMORY_CLOCK_MHZ,
        sm_clock_max_mhz=SM_CLOCK_MAX_MHZ,
        memory_clock_max_mhz=MEMORY_CLOCK_MHZ,
        pstate=0,
        fan_percent=None,  # SXM boards are cooled by chassis fans the GPU cannot see
        clock_event_reasons_mask=clock_event_reasons_mask,
        clock_event_reasons=reasons(clock_event_reasons_mask),
        clock_event_sw_power_cap_us=clock_event_sw_power_cap_us,
        clock_event_sync_boost_us=0,
        clock_event_sw_thermal_us=clock_event_sw_thermal_us,
        clock_event_hw_thermal_us=clock_event_hw_thermal_us,
        clock_event_hw_power_brake_us=0,
        pcie_gen=PCIE_GEN,
        pcie_width=PCIE_WIDTH,
        pcie_max_gen=PCIE_GEN,
        pcie_max_width=PCIE_WIDTH,
        pcie_replay_count=0,
        ecc_corrected_volatile=0,
        ecc_uncorrected_volatile=0,
        ecc_corrected_aggregate=ecc_corrected_aggregate,
        ecc_uncorrected_aggregate=0 if ecc_corrected_aggregate is not None else None,
        remapped_rows_correctable=0,
        remapped_rows_uncorrectable=0,
        remapped_rows_pending=False,
        remapped_rows_failure=False,
        retired_pages_pending=None,  # Hopper remaps rows instead of retiring pages
        processes=processes if processes is not None else [],
    )
