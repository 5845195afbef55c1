"""A GPU's facts from NVML, read once per connection: identity, PCIe and power limits, modes,
and its temperature thresholds (as offsets from the T.Limit margin where it has one)."""

from __future__ import annotations

from typing import Any

from .gpu_records import new_gpu_facts
from .nvml_calls import Nvml, mib, text, watts


def gpu_facts(nvml: Nvml, index: int, handle: Any, identity: dict[str, Any],
              static: dict[str, Any]) -> dict[str, Any]:
    """``identity``: its name and uuid (read at start); ``static``: its PCIe maxima."""
    nv, h, call = nvml.nv, handle, nvml.call
    facts = new_gpu_facts(index)
    pci = call(nv.nvmlDeviceGetPciInfo, h)
    memory = nvml.memory(h)
    constraints = call(nv.nvmlDeviceGetPowerManagementLimitConstraints, h) or (None, None)
    persistence = call(nv.nvmlDeviceGetPersistenceMode, h)
    ecc = call(nv.nvmlDeviceGetCurrentEccMode, h)
    mig = call(nv.nvmlDeviceGetMigMode, h)
    capability = call(nv.nvmlDeviceGetCudaComputeCapability, h)
    facts.update(
        name=identity["name"],
        uuid=identity["uuid"],
        bus_id=text(pci.busId) if pci is not None else None,
        serial=text(call(nv.nvmlDeviceGetSerial, h)),
        vbios_version=text(call(nv.nvmlDeviceGetVbiosVersion, h)),
        memory_total_mib=mib(memory.total) if memory is not None else None,
        pcie_max_gen=static["pcie_max_gen"],
        pcie_max_width=static["pcie_max_width"],
        pcie_gpu_max_gen=call(nv.nvmlDeviceGetGpuMaxPcieLinkGeneration, h),
        persistence_mode=(
            None if persistence is None else persistence == nv.NVML_FEATURE_ENABLED
        ),
        ecc_enabled=None if ecc is None else ecc == nv.NVML_FEATURE_ENABLED,
        mig_enabled=None if mig is None else mig[0] == nv.NVML_DEVICE_MIG_ENABLE,
        power_limit_w=watts(call(nv.nvmlDeviceGetEnforcedPowerLimit, h)),
        power_limit_default_w=watts(call(nv.nvmlDeviceGetPowerManagementDefaultLimit, h)),
        power_limit_min_w=watts(constraints[0]),
        power_limit_max_w=watts(constraints[1]),
        compute_capability="%d.%d" % tuple(capability) if capability else None,
    )
    facts.update(thresholds(nvml, h))
    return facts


def thresholds(nvml: Nvml, h: Any) -> dict[str, Any]:
    """Offsets from the T.Limit margin where the GPU has one (Ada, Hopper and later),
    else the absolute thresholds older GPUs report."""
    nv = nvml.nv
    offset_ids = (
        ("temperature_shutdown_c", nv.NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT),
        ("temperature_slowdown_c", nv.NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT),
        ("temperature_max_operating_c", nv.NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT),
        ("memory_temperature_max_c", nv.NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT),
    )
    read = nvml.field_values(h, [fid for _, fid in offset_ids])
    offsets: dict[str, Any] = {key: read[fid] for key, fid in offset_ids}
    if any(value is not None for value in offsets.values()):
        offsets["thresholds_are_margin_offsets"] = True
        return offsets
    absolute: dict[str, Any] = {
        key: nvml.call(nv.nvmlDeviceGetTemperatureThreshold, h, kind)
        for key, kind in (
            ("temperature_shutdown_c", nv.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
            ("temperature_slowdown_c", nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
            ("temperature_max_operating_c", nv.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
            ("memory_temperature_max_c", nv.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
        )
    }
    if any(value is not None for value in absolute.values()):
        absolute["thresholds_are_margin_offsets"] = False
    return absolute
