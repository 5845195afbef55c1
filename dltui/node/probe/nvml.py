"""GPU telemetry through NVML (``pynvml`` from nvidia-ml-py, shipped beside the probe).

``nvmlInit`` once, handles kept for the probe's life, and every call made through one wrapper
(``nvml_calls.Nvml``) that turns "not supported here" into None (never 0), "GPU is lost" into
the GPU record's ``error``, and a driver older than the binding (FunctionNotFound) into None or
the older call. Facts are read once (``nvml_facts``). What changes slowly (ECC, row remapping,
PCIe replays, clock-event counters; all cumulative) is read every SLOW_REFRESH_S and repeated
in between; processes every PROCESS_REFRESH_S; the rest every tick.
"""

from __future__ import annotations

import time
from typing import Any

from ..schema import decode_clock_event_reasons
from .gpu_records import error_record, new_gpu_facts, new_gpu_record, nvml_library_loads
from .nvml_calls import GpuGone, Nvml, mib, text, union_value, watts
from .nvml_facts import gpu_facts
from .problems import Problems

SLOW_REFRESH_S = 10.0
PROCESS_REFRESH_S = 5.0


class NvmlUnavailable(Exception):
    """NVML cannot be used on this node. ``no_driver`` when that is because there is no
    NVIDIA driver (or binding) at all, as opposed to a broken one."""

    def __init__(self, reason: str, no_driver: bool) -> None:
        super().__init__(reason)
        self.no_driver = no_driver


class _Gpu:
    """Per-GPU state kept between ticks."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.handle: Any = None
        self.uuid: str | None = None
        self.name: str | None = None
        self.fan_count = 0
        self.static: dict[str, Any] = {}  # max clocks and PCIe maxima: read once
        self.slow: dict[str, Any] = {}  # last slow-set values, repeated between refreshes
        self.slow_at: float | None = None
        self.processes: list[dict[str, Any]] = []
        self.processes_at: float | None = None
        self.last_sample_us = 0  # newest utilisation sample already sent
        self.sample_period_ms: float | None = None
        self.gone: str | None = None  # why the GPU no longer answers


def binding_version() -> str | None:
    """nvidia-ml-py's version (``13.580.65``), or None where it cannot be known.

    Shipped to a node, the binding travels without its package metadata, so ``bundle.py``
    adds a ``binding`` module that carries the version.
    """
    try:
        from .binding import NVML_BINDING_VERSION

        return NVML_BINDING_VERSION
    except ImportError:
        pass
    try:
        from importlib import metadata
    except ImportError:
        return None
    try:
        return metadata.version("nvidia-ml-py")
    except metadata.PackageNotFoundError:
        return None


def same_branch(binding: str | None, driver: str | None) -> bool:
    """nvidia-ml-py ``13.580.65`` was built from driver branch R580: ``580.65.06`` matches."""
    if binding is None or driver is None:
        return False
    try:
        return binding.split(".")[1] == driver.split(".")[0]
    except IndexError:
        return False


def _median(values: list[float]) -> float:
    """``statistics.median``, whose import alone costs a cold probe ~5 ms of CPU."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _process_name(pid: int) -> str | None:
    """The name nvidia-smi prints for the process (its ``process_name``: the command as
    started, argv[0], e.g. ``./gpu_burn`` or ``/usr/bin/python3``), so both GPU sources show
    the same; ``/proc/<pid>/comm`` where the command line is empty (a zombie, a kernel thread).
    NVML reports host PIDs, and the probe runs on the host."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0].decode("utf-8", "replace").strip()
        if argv0:
            return argv0
        with open("/proc/%d/comm" % pid, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


class NvmlCollector:
    """GPU facts and samples from NVML. Never raises after construction."""

    def __init__(self, problems: Problems, interval_s: float) -> None:
        if not nvml_library_loads():
            raise NvmlUnavailable("NVML Shared Library Not Found", no_driver=True)
        try:
            import pynvml
        except ImportError:
            raise NvmlUnavailable("pynvml is not available", no_driver=True) from None
        self.nv = pynvml
        try:
            pynvml.nvmlInit()
        except (pynvml.NVMLError_LibraryNotFound, pynvml.NVMLError_DriverNotLoaded) as exc:
            raise NvmlUnavailable(str(exc), no_driver=True) from None
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(str(exc), no_driver=False) from None
        self.problems = problems
        self.nvml = Nvml(pynvml, problems)
        self._call = self.nvml.call
        self.interval_s = interval_s
        self.driver_version: str | None = text(self._call(pynvml.nvmlSystemGetDriverVersion))
        self.counter_fields = self._counter_fields()
        self.gpus = [_Gpu(i) for i in range(self._call(pynvml.nvmlDeviceGetCount) or 0)]
        for gpu in self.gpus:
            try:
                gpu.handle = self._call(pynvml.nvmlDeviceGetHandleByIndex, gpu.index)
                if gpu.handle is None:
                    gpu.gone = "NVML could not open this GPU"
                else:
                    self._read_static(gpu)
            except GpuGone as gone:
                gpu.gone = str(gone)

    # -- what is read -----------------------------------------------------------------------

    def _counter_fields(self) -> dict[str, int]:
        """Record field -> NVML field id of the clock-event counters.

        The thermal and power-brake ids were renumbered between nvidia-ml-py releases
        (251-253 vs 269-271), so a binding from another driver branch would read some other
        counter without any error: those three are read only when the branches match.
        """
        nv = self.nv
        fields = {
            "clock_event_sw_power_cap_us": nv.NVML_FI_DEV_PERF_POLICY_POWER,
            "clock_event_sync_boost_us": nv.NVML_FI_DEV_PERF_POLICY_SYNC_BOOST,
        }
        if same_branch(binding_version(), self.driver_version):
            fields.update(
                clock_event_sw_thermal_us=nv.NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN,
                clock_event_hw_thermal_us=nv.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN,
                clock_event_hw_power_brake_us=(
                    nv.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN
                ),
            )
        return fields

    # -- facts -------------------------------------------------------------------------------

    def facts(self) -> dict[str, Any]:
        nv = self.nv
        cuda = self._call(nv.nvmlSystemGetCudaDriverVersion_v2)
        gpus = []
        for gpu in self.gpus:
            try:
                if gpu.gone is None:
                    identity = {"name": gpu.name, "uuid": gpu.uuid}
                    gpus.append(gpu_facts(self.nvml, gpu.index, gpu.handle, identity, gpu.static))
                    continue
            except GpuGone as gone:
                gpu.gone = str(gone)
            facts = new_gpu_facts(gpu.index)
            facts.update(uuid=gpu.uuid, name=gpu.name)
            gpus.append(facts)
        return {
            "driver_version": self.driver_version,
            "cuda_version": "%d.%d" % (cuda // 1000, cuda % 1000 // 10) if cuda else None,
            "nvml_version": text(self._call(nv.nvmlSystemGetNVMLVersion)),
            "gpus": gpus,
        }

    # -- samples -----------------------------------------------------------------------------

    def sample(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        records = []
        for gpu in self.gpus:
            if gpu.gone is None:
                try:
                    records.append(self._sample_gpu(gpu, now))
                    continue
                except GpuGone as gone:
                    gpu.gone = str(gone)
            records.append(error_record(gpu.index, gpu.uuid, gpu.name, gpu.gone))
        return records

    def _read_static(self, gpu: _Gpu) -> None:
        nv, h, call = self.nv, gpu.handle, self._call
        gpu.uuid = text(call(nv.nvmlDeviceGetUUID, h))
        gpu.name = text(call(nv.nvmlDeviceGetName, h))
        gpu.fan_count = call(nv.nvmlDeviceGetNumFans, h) or 0
        gpu.static = {
            "sm_clock_max_mhz": call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
            "memory_clock_max_mhz": call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
            "pcie_max_gen": call(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_max_width": call(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
        }

    def _sample_gpu(self, gpu: _Gpu, now: float) -> dict[str, Any]:
        nv, h, call = self.nv, gpu.handle, self._call
        record = new_gpu_record(gpu.index)
        record.update(gpu.static, uuid=gpu.uuid, name=gpu.name)

        utilization = call(nv.nvmlDeviceGetUtilizationRates, h)
        if utilization is not None:
            record["utilization_percent"] = utilization.gpu
            record["memory_utilization_percent"] = utilization.memory
        record["utilization_samples_percent"] = self._utilization_samples(gpu)
        record["utilization_sample_period_ms"] = gpu.sample_period_ms

        memory = self.nvml.memory(h)
        if memory is not None:
            record["memory_used_mib"] = mib(memory.used)
            record["memory_total_mib"] = mib(memory.total)

        record["temperature_c"] = call(
            nv.nvmlDeviceGetTemperatureV,
            h,
            nv.NVML_TEMPERATURE_GPU,
            older=lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
        )
        record["memory_temperature_c"] = self.nvml.field_values(h, [nv.NVML_FI_DEV_MEMORY_TEMP])[
            nv.NVML_FI_DEV_MEMORY_TEMP
        ]
        record["temperature_margin_c"] = call(nv.nvmlDeviceGetMarginTemperature, h)
        record["power_w"] = watts(call(nv.nvmlDeviceGetPowerUsage, h))
        record["power_limit_w"] = watts(call(nv.nvmlDeviceGetEnforcedPowerLimit, h))
        record["sm_clock_mhz"] = call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
        record["memory_clock_mhz"] = call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM)
        pstate = call(nv.nvmlDeviceGetPerformanceState, h)
        record["pstate"] = None if pstate in (None, nv.NVML_PSTATE_UNKNOWN) else pstate
        record["fan_percent"] = self._fan_percent(gpu)
        mask = call(
            nv.nvmlDeviceGetCurrentClocksEventReasons,
            h,
            older=lambda: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h),
        )
        record["clock_event_reasons_mask"] = mask
        record["clock_event_reasons"] = decode_clock_event_reasons(mask)
        record["pcie_gen"] = call(nv.nvmlDeviceGetCurrPcieLinkGeneration, h)
        record["pcie_width"] = call(nv.nvmlDeviceGetCurrPcieLinkWidth, h)

        if gpu.slow_at is None or now - gpu.slow_at >= SLOW_REFRESH_S:
            gpu.slow = self._read_slow(gpu)
            gpu.slow_at = now
        record.update(gpu.slow)
        if gpu.processes_at is None or now - gpu.processes_at >= PROCESS_REFRESH_S:
            gpu.processes = self._processes(h)
            gpu.processes_at = now
        record["processes"] = gpu.processes
        return record

    def _utilization_samples(self, gpu: _Gpu) -> list[float]:
        """Utilisation readings newer than the last tick's, oldest first.

        NVML keeps a buffer of readings taken every 1/6 to 1 s (by product); asking for those
        after the newest timestamp already seen is how a 1 Hz probe still sees sub-second
        drops to 0 %. NotFound means nothing newer (None from the call).
        """
        nv = self.nv
        answer = self._call(
            nv.nvmlDeviceGetSamples, gpu.handle, nv.NVML_GPU_UTILIZATION_SAMPLES, gpu.last_sample_us
        )
        if not answer:
            return []
        value_type, samples = answer
        points = sorted(
            (s.timeStamp, union_value(value_type, s.sampleValue))
            for s in samples
            if s.timeStamp > gpu.last_sample_us
        )
        if not points:
            return []
        if gpu.last_sample_us == 0:  # first tick: the whole buffer, keep one interval of it
            newest = points[-1][0]
            points = [p for p in points if p[0] > newest - self.interval_s * 1e6]
        gpu.last_sample_us = points[-1][0]
        if len(points) >= 2:
            gaps = [b[0] - a[0] for a, b in zip(points, points[1:])]
            gpu.sample_period_ms = round(_median(gaps) / 1000.0, 1)
        return [value for _, value in points]

    def _fan_percent(self, gpu: _Gpu) -> int | None:
        """Highest intended speed over the GPU's fans; None on passive cards."""
        speeds = [
            self._call(self.nv.nvmlDeviceGetFanSpeed_v2, gpu.handle, fan)
            for fan in range(gpu.fan_count)
        ]
        speeds = [s for s in speeds if s is not None]
        return max(speeds) if speeds else None

    def _read_slow(self, gpu: _Gpu) -> dict[str, Any]:
        """ECC, row remapping, retired pages, PCIe replays and clock-event counters."""
        nv, h, call = self.nv, gpu.handle, self._call
        slow: dict[str, Any] = {}
        for kind, counter in (
            ("volatile", nv.NVML_VOLATILE_ECC),
            ("aggregate", nv.NVML_AGGREGATE_ECC),
        ):
            slow["ecc_corrected_" + kind] = call(
                nv.nvmlDeviceGetTotalEccErrors, h, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, counter
            )
            slow["ecc_uncorrected_" + kind] = call(
                nv.nvmlDeviceGetTotalEccErrors, h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counter
            )
        remapped = call(nv.nvmlDeviceGetRemappedRows, h)
        if remapped is not None:
            slow["remapped_rows_correctable"] = remapped[0]
            slow["remapped_rows_uncorrectable"] = remapped[1]
            slow["remapped_rows_pending"] = bool(remapped[2])
            slow["remapped_rows_failure"] = bool(remapped[3])
        pending = call(nv.nvmlDeviceGetRetiredPagesPendingStatus, h)
        slow["retired_pages_pending"] = (
            None if pending is None else pending == nv.NVML_FEATURE_ENABLED
        )
        slow["pcie_replay_count"] = call(nv.nvmlDeviceGetPcieReplayCounter, h)
        counters = self.nvml.field_values(h, list(self.counter_fields.values()))
        for field, field_id in self.counter_fields.items():
            nanoseconds = counters[field_id]
            # NVML documents violation time in ns; nvidia-smi prints these counters in µs.
            slow[field] = None if nanoseconds is None else nanoseconds // 1000
        return slow

    def _processes(self, h: Any) -> list[dict[str, Any]]:
        running = self._call(self.nv.nvmlDeviceGetComputeRunningProcesses, h) or []
        return [
            {"pid": p.pid, "name": _process_name(p.pid), "gpu_memory_mib": mib(p.usedGpuMemory)}
            for p in running
        ]

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass
