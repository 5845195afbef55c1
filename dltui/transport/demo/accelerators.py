"""The demo's other vendors: an AMD Instinct MI300X node and an Intel Gaudi 3 node, each with
a trouble of its own. A simulated GPU's second (``SimGpu.step``, an H100's numbers) is re-read
as that vendor's card reports it: what the card has is filled in at its own scale, what it does
not report is None, as the probe's AMD and Gaudi sources leave it (no clock-event mask, no
T.Limit margin, no sub-second utilisation; MI300X has no edge sensor).

Their fixed properties follow the real captures where there are some: Gaudi's from the 2x
HL-325L ``hl-smi`` capture (tests/fixtures/gaudi/), the AMD limits from the MI210
``amd-smi static`` capture's limit section (tests/fixtures/amd/); the MI300X's size, cap and
clocks are AMD's published figures.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dltui.core.models import GpuFacts, GpuSample, StackFacts

from .scenarios import GAUDI_HOT, MI300X_XGMI

MI300X = "AMD Instinct MI300X"
MI300X_MIB = 196592.0
MI300X_CAP_W = 750.0
MI300X_SCLK_MHZ = 2100.0
MI300X_MCLK_MHZ = 1300.0
XGMI_GPU = 5  # its XGMI link errors rise ...
XGMI_FROM_STEP = 60  # ... from this step on ...
XGMI_EVERY = 20  # ... by 2 every this many steps
AMDGPU = "6.8.5"
ROCM = "6.2.4"

GAUDI = "HL-325L"
GAUDI_MIB = 131072.0
GAUDI_CAP_W = 850.0
GAUDI_DRIVER = "1.22.1-97ec1a4"
LOST_AIP = 6  # this AIP stops answering (hl-smi: every reading N/A) ...
LOST_FROM_STEP = 90  # ... from this step on
# the probe's words for it (probe/gaudi.py NO_READINGS; the demo may not import the probe)
NO_READINGS = "hl-smi reports no readings for this AIP (in reset, or fallen off the bus?)"

_H100_CAP_W = 700.0
_H100_JOB_MIB = 81559.0


def vendor_of(scenario: str) -> str:
    return {MI300X_XGMI: "amd", GAUDI_HOT: "intel"}.get(scenario, "nvidia")


def facts(scenario: str, index: int, uuid: str | None, serial: str | None, bus_id: str) -> GpuFacts:
    if scenario == MI300X_XGMI:
        return GpuFacts(
            index=index, name=MI300X, uuid=uuid, bus_id=bus_id, serial=serial, vbios_version="113-M3000100-102",
            memory_total_mib=MI300X_MIB, pcie_max_gen=5, pcie_max_width=16, ecc_enabled=True,
            power_limit_w=MI300X_CAP_W, power_limit_max_w=MI300X_CAP_W, power_limit_min_w=0.0,
            temperature_slowdown_c=None, temperature_shutdown_c=None,  # no edge sensor
            hotspot_temperature_slowdown_c=100.0, hotspot_temperature_shutdown_c=105.0,
            memory_temperature_max_c=94.0, memory_temperature_shutdown_c=99.0,
            thresholds_are_margin_offsets=False, compute_capability="gfx942",
            vendor="amd", driver_version=AMDGPU, firmware_version="SMC 85.101.0",
        )
    return GpuFacts(
        index=index, name=GAUDI, uuid=_gaudi_uuid(index), bus_id=bus_id,
        serial=serial, memory_total_mib=GAUDI_MIB, power_limit_w=GAUDI_CAP_W,
        vendor="intel", driver_version=GAUDI_DRIVER,
    )


def sample(scenario: str, s: GpuSample, step: int, xgmi_errors: int | None) -> GpuSample:
    """The H100 second ``s`` as this vendor's card reports it."""
    load = (s.power_w or 0.0) / _H100_CAP_W
    used = None if s.memory_used_mib is None else round(s.memory_used_mib / _H100_JOB_MIB * 0.9, 3)
    common: dict[str, Any] = dict(
        utilization_samples_percent=[], utilization_sample_period_ms=None, temperature_margin_c=None,
        pstate=None, fan_percent=None, clock_event_reasons_mask=None, clock_event_reasons=None,
        clock_event_sw_power_cap_us=None, clock_event_sync_boost_us=None, clock_event_sw_thermal_us=None,
        clock_event_hw_thermal_us=None, clock_event_hw_power_brake_us=None, ecc_corrected_aggregate=None,
        ecc_uncorrected_aggregate=None, remapped_rows_correctable=None, remapped_rows_uncorrectable=None,
        remapped_rows_pending=None, remapped_rows_failure=None, retired_pages_pending=None,
    )
    if scenario == MI300X_XGMI:
        return dataclasses.replace(
            s, **common, vendor="amd", name=MI300X, memory_total_mib=MI300X_MIB,
            memory_used_mib=None if used is None else round(used * MI300X_MIB),
            temperature_c=None, hotspot_temperature_c=(s.temperature_c or 0.0) + 12.0,
            power_w=round(min(MI300X_CAP_W, 0.9 * load * MI300X_CAP_W), 1), power_limit_w=MI300X_CAP_W,
            sm_clock_mhz=MI300X_SCLK_MHZ if (s.utilization_percent or 0) > 0 else 141.0,
            sm_clock_max_mhz=MI300X_SCLK_MHZ, memory_clock_mhz=MI300X_MCLK_MHZ,
            memory_clock_max_mhz=MI300X_MCLK_MHZ, throttled=False, xgmi_errors_total=xgmi_errors,
        )
    if s.index == LOST_AIP and step >= LOST_FROM_STEP:  # as the probe reports it (probe/gaudi.py)
        return GpuSample(index=s.index, vendor="intel", name=GAUDI, uuid=_gaudi_uuid(s.index), error=NO_READINGS)
    aip = (s.temperature_c or 40.0) - 8.0
    return dataclasses.replace(
        s, **common, vendor="intel", name=GAUDI, uuid=_gaudi_uuid(s.index),
        memory_total_mib=GAUDI_MIB, memory_used_mib=None if used is None else round(used * GAUDI_MIB),
        temperature_c=aip, memory_temperature_c=None, power_w=round(min(GAUDI_CAP_W, 0.88 * load * GAUDI_CAP_W), 1),
        power_limit_w=GAUDI_CAP_W, sm_clock_mhz=None, sm_clock_max_mhz=None, memory_clock_mhz=None,
        memory_clock_max_mhz=None, pcie_gen=None, pcie_width=None, pcie_max_gen=None, pcie_max_width=None,
        pcie_replay_count=None, ecc_corrected_volatile=None, ecc_uncorrected_volatile=None,
        memory_utilization_percent=None,
    )


def _gaudi_uuid(index: int) -> str:
    """The HL-325L capture's serial layout, one per AIP."""
    return f"01P4-HL3090A0-18-U4V{193 + index:03d}-22-07-00"


def xgmi_errors(scenario: str, gpu: int, step: int) -> int | None:
    """The XGMI error count of an MI300X at ``step``: 0, except GPU XGMI_GPU's rising link."""
    if scenario != MI300X_XGMI:
        return None
    if gpu != XGMI_GPU or step < XGMI_FROM_STEP:
        return 0
    return 2 * (1 + (step - XGMI_FROM_STEP) // XGMI_EVERY)


def stack(scenario: str, kernel: str) -> StackFacts:
    if scenario == MI300X_XGMI:
        packages = ["amdgpu-dkms", "amdgpu-dkms-firmware"]
        return StackFacts(
            package_manager="dpkg", driver_packages=packages, driver_packages_unheld=[],
            driver_package_version=None, driver_held=True, driver_module_version=AMDGPU, rocm_version=ROCM,
            auto_upgrades=True, auto_upgrades_skip_driver=False,
            auto_upgrades_source="APT::Periodic::Unattended-Upgrade 1", kernel_newest_installed=kernel,
        )
    packages = ["habanalabs-dkms", "habanalabs-firmware", "habanalabs-thunk"]
    return StackFacts(
        package_manager="dpkg", driver_packages=packages, driver_packages_unheld=["habanalabs-firmware"],
        driver_package_version=None, driver_held=False, driver_module_version=GAUDI_DRIVER,
        auto_upgrades=True, auto_upgrades_skip_driver=False,
        auto_upgrades_source="APT::Periodic::Unattended-Upgrade 1", kernel_newest_installed=kernel,
    )
