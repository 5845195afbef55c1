"""GPU telemetry through NVML (``pynvml`` from nvidia-ml-py, shipped beside the probe).

``nvmlInit`` once, handles kept for the probe's life, and every call made through one wrapper
(``_call``) that turns "not supported here" into None (never 0), "GPU is lost" into the GPU
record's ``error``, and a driver older than the binding (FunctionNotFound) into None or the
older call. What changes slowly (ECC, row remapping, PCIe replays, clock-event counters; all
cumulative) is read every SLOW_REFRESH_S and repeated in between; processes every
PROCESS_REFRESH_S; the rest every tick.
"""

import time

from ..schema import decode_clock_event_reasons
from .gpu_records import (
    GPU_LOST,
    GPU_NEEDS_RESET,
    error_record,
    new_gpu_facts,
    new_gpu_record,
    nvml_library_loads,
)

SLOW_REFRESH_S = 10.0
PROCESS_REFRESH_S = 5.0
MIB = 1024 * 1024


class NvmlUnavailable(Exception):
    """NVML cannot be used on this node. ``no_driver`` when that is because there is no
    NVIDIA driver (or binding) at all, as opposed to a broken one."""

    def __init__(self, reason, no_driver):
        super().__init__(reason)
        self.no_driver = no_driver


class _GpuGone(Exception):
    """This GPU cannot answer any more (lost, or waiting for a reset)."""


class _Gpu:
    """Per-GPU state kept between ticks."""

    def __init__(self, index):
        self.index = index
        self.handle = None
        self.uuid = None
        self.name = None
        self.fan_count = 0
        self.static = {}  # max clocks and PCIe maxima: read once
        self.slow = {}  # last slow-set values, repeated between refreshes
        self.slow_at = None
        self.processes = []
        self.processes_at = None
        self.last_sample_us = 0  # newest utilisation sample already sent
        self.sample_period_ms = None
        self.gone = None  # why the GPU no longer answers


def binding_version():
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


def same_branch(binding, driver):
    """nvidia-ml-py ``13.580.65`` was built from driver branch R580: ``580.65.06`` matches."""
    try:
        return binding.split(".")[1] == driver.split(".")[0]
    except (AttributeError, IndexError):
        return False


def _union_value(value_type, value):
    """Read an ``nvmlValue_t`` union by the member its ``valueType`` names (the
    ``nvmlValueType_t`` C enum, the same in every NVML release)."""
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    name = member.get(value_type)
    return getattr(value, name) if name else None


def _median(values):
    """``statistics.median``, whose import alone costs a cold probe ~5 ms of CPU."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _str(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _process_name(pid):
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


def _watts(milliwatts):
    return None if milliwatts is None else round(milliwatts / 1000.0, 1)


def _mib(nbytes):
    return None if nbytes is None else int(round(nbytes / MIB))


class NvmlCollector:
    """GPU facts and samples from NVML. Never raises after construction."""

    def __init__(self, problems, interval_s):
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
        self.interval_s = interval_s
        self.driver_version = _str(self._call(pynvml.nvmlSystemGetDriverVersion))
        self.counter_fields = self._counter_fields()
        self.gpus = [_Gpu(i) for i in range(self._call(pynvml.nvmlDeviceGetCount) or 0)]
        for gpu in self.gpus:
            try:
                gpu.handle = self._call(pynvml.nvmlDeviceGetHandleByIndex, gpu.index)
                if gpu.handle is None:
                    gpu.gone = "NVML could not open this GPU"
                else:
                    self._read_static(gpu)
            except _GpuGone as gone:
                gpu.gone = str(gone)

    # -- the one place NVML is called --------------------------------------------------------

    def _call(self, fn, *args, older=None):
        """``fn(*args)``; None where the device or driver does not report it. ``older`` (no
        arguments) is used instead when the driver predates ``fn``."""
        nv = self.nv
        source = "nvml " + fn.__name__  # one source per call: two failing calls are two reports, once each
        try:
            value = fn(*args)
        except nv.NVMLError_GpuIsLost:
            raise _GpuGone(GPU_LOST) from None
        except nv.NVMLError_ResetRequired:
            raise _GpuGone(GPU_NEEDS_RESET) from None
        except nv.NVMLError_FunctionNotFound:
            return self._call(older) if older is not None else None
        except (nv.NVMLError_NotSupported, nv.NVMLError_NotFound, nv.NVMLError_NoPermission):
            return None
        except nv.NVMLError as exc:
            self.problems.report(source, str(exc))
            return None
        if source in self.problems.active:
            self.problems.clear(source)
        return value

    def _field_values(self, handle, ids):
        """{field id: value or None}. Each entry carries its own return code."""
        result = dict.fromkeys(ids)
        if not ids:
            return result
        answers = self._call(self.nv.nvmlDeviceGetFieldValues, handle, list(ids))
        for answer in answers or ():
            if answer.nvmlReturn == self.nv.NVML_SUCCESS and answer.fieldId in result:
                result[answer.fieldId] = _union_value(answer.valueType, answer.value)
        return result

    def _counter_fields(self):
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

    def facts(self):
        nv = self.nv
        cuda = self._call(nv.nvmlSystemGetCudaDriverVersion_v2)
        gpus = []
        for gpu in self.gpus:
            try:
                if gpu.gone is None:
                    gpus.append(self._gpu_facts(gpu))
                    continue
            except _GpuGone as gone:
                gpu.gone = str(gone)
            facts = new_gpu_facts(gpu.index)
            facts.update(uuid=gpu.uuid, name=gpu.name)
            gpus.append(facts)
        return {
            "driver_version": self.driver_version,
            "cuda_version": "%d.%d" % (cuda // 1000, cuda % 1000 // 10) if cuda else None,
            "nvml_version": _str(self._call(nv.nvmlSystemGetNVMLVersion)),
            "gpus": gpus,
        }

    def _gpu_facts(self, gpu):
        nv, h, call = self.nv, gpu.handle, self._call
        facts = new_gpu_facts(gpu.index)
        pci = call(nv.nvmlDeviceGetPciInfo, h)
        memory = self._memory(h)
        constraints = call(nv.nvmlDeviceGetPowerManagementLimitConstraints, h) or (None, None)
        persistence = call(nv.nvmlDeviceGetPersistenceMode, h)
        ecc = call(nv.nvmlDeviceGetCurrentEccMode, h)
        mig = call(nv.nvmlDeviceGetMigMode, h)
        capability = call(nv.nvmlDeviceGetCudaComputeCapability, h)
        facts.update(
            name=gpu.name,
            uuid=gpu.uuid,
            bus_id=_str(pci.busId) if pci is not None else None,
            serial=_str(call(nv.nvmlDeviceGetSerial, h)),
            vbios_version=_str(call(nv.nvmlDeviceGetVbiosVersion, h)),
            memory_total_mib=_mib(memory.total) if memory is not None else None,
            pcie_max_gen=gpu.static["pcie_max_gen"],
            pcie_max_width=gpu.static["pcie_max_width"],
            pcie_gpu_max_gen=call(nv.nvmlDeviceGetGpuMaxPcieLinkGeneration, h),
            persistence_mode=(
                None if persistence is None else persistence == nv.NVML_FEATURE_ENABLED
            ),
            ecc_enabled=None if ecc is None else ecc == nv.NVML_FEATURE_ENABLED,
            mig_enabled=None if mig is None else mig[0] == nv.NVML_DEVICE_MIG_ENABLE,
            power_limit_w=_watts(call(nv.nvmlDeviceGetEnforcedPowerLimit, h)),
            power_limit_default_w=_watts(call(nv.nvmlDeviceGetPowerManagementDefaultLimit, h)),
            power_limit_min_w=_watts(constraints[0]),
            power_limit_max_w=_watts(constraints[1]),
            compute_capability="%d.%d" % tuple(capability) if capability else None,
        )
        facts.update(self._thresholds(h))
        return facts

    def _thresholds(self, h):
        """Offsets from the T.Limit margin where the GPU has one (Ada, Hopper and later),
        else the absolute thresholds older GPUs report."""
        nv = self.nv
        offset_ids = (
            ("temperature_shutdown_c", nv.NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT),
            ("temperature_slowdown_c", nv.NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT),
            ("temperature_max_operating_c", nv.NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT),
            ("memory_temperature_max_c", nv.NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT),
        )
        read = self._field_values(h, [fid for _, fid in offset_ids])
        offsets = {key: read[fid] for key, fid in offset_ids}
        if any(value is not None for value in offsets.values()):
            offsets["thresholds_are_margin_offsets"] = True
            return offsets
        absolute = {
            key: self._call(nv.nvmlDeviceGetTemperatureThreshold, h, kind)
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

    # -- samples -----------------------------------------------------------------------------

    def sample(self):
        now = time.monotonic()
        records = []
        for gpu in self.gpus:
            if gpu.gone is None:
                try:
                    records.append(self._sample_gpu(gpu, now))
                    continue
                except _GpuGone as gone:
                    gpu.gone = str(gone)
            records.append(error_record(gpu.index, gpu.uuid, gpu.name, gpu.gone))
        return records

    def _read_static(self, gpu):
        nv, h, call = self.nv, gpu.handle, self._call
        gpu.uuid = _str(call(nv.nvmlDeviceGetUUID, h))
        gpu.name = _str(call(nv.nvmlDeviceGetName, h))
        gpu.fan_count = call(nv.nvmlDeviceGetNumFans, h) or 0
        gpu.static = {
            "sm_clock_max_mhz": call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
            "memory_clock_max_mhz": call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
            "pcie_max_gen": call(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_max_width": call(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
        }

    def _memory(self, h):
        nv = self.nv
        return self._call(
            nv.nvmlDeviceGetMemoryInfo,
            h,
            nv.nvmlMemory_v2,
            older=lambda: nv.nvmlDeviceGetMemoryInfo(h),
        )

    def _sample_gpu(self, gpu, now):
        nv, h, call = self.nv, gpu.handle, self._call
        record = new_gpu_record(gpu.index)
        record.update(gpu.static, uuid=gpu.uuid, name=gpu.name)

        utilization = call(nv.nvmlDeviceGetUtilizationRates, h)
        if utilization is not None:
            record["utilization_percent"] = utilization.gpu
            record["memory_utilization_percent"] = utilization.memory
        record["utilization_samples_percent"] = self._utilization_samples(gpu)
        record["utilization_sample_period_ms"] = gpu.sample_period_ms

        memory = self._memory(h)
        if memory is not None:
            record["memory_used_mib"] = _mib(memory.used)
            record["memory_total_mib"] = _mib(memory.total)

        record["temperature_c"] = call(
            nv.nvmlDeviceGetTemperatureV,
            h,
            nv.NVML_TEMPERATURE_GPU,
            older=lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
        )
        record["memory_temperature_c"] = self._field_values(h, [nv.NVML_FI_DEV_MEMORY_TEMP])[
            nv.NVML_FI_DEV_MEMORY_TEMP
        ]
        record["temperature_margin_c"] = call(nv.nvmlDeviceGetMarginTemperature, h)
        record["power_w"] = _watts(call(nv.nvmlDeviceGetPowerUsage, h))
        record["power_limit_w"] = _watts(call(nv.nvmlDeviceGetEnforcedPowerLimit, h))
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

    def _utilization_samples(self, gpu):
        """Utilisation readings newer than the last tick's, oldest first.

        NVML keeps a buffer of readings taken every 1/6 to 1 s (by product); asking for those
        after the newest timestamp already seen is how a 1 Hz probe still sees sub-second
        drops to 0 %. NotFound means nothing newer (None from ``_call``).
        """
        nv = self.nv
        answer = self._call(
            nv.nvmlDeviceGetSamples, gpu.handle, nv.NVML_GPU_UTILIZATION_SAMPLES, gpu.last_sample_us
        )
        if not answer:
            return []
        value_type, samples = answer
        points = sorted(
            (s.timeStamp, _union_value(value_type, s.sampleValue))
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

    def _fan_percent(self, gpu):
        """Highest intended speed over the GPU's fans; None on passive cards."""
        speeds = [
            self._call(self.nv.nvmlDeviceGetFanSpeed_v2, gpu.handle, fan)
            for fan in range(gpu.fan_count)
        ]
        speeds = [s for s in speeds if s is not None]
        return max(speeds) if speeds else None

    def _read_slow(self, gpu):
        """ECC, row remapping, retired pages, PCIe replays and clock-event counters."""
        nv, h, call = self.nv, gpu.handle, self._call
        slow = {}
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
        counters = self._field_values(h, list(self.counter_fields.values()))
        for field, field_id in self.counter_fields.items():
            nanoseconds = counters[field_id]
            # NVML documents violation time in ns; nvidia-smi prints these counters in µs.
            slow[field] = None if nanoseconds is None else nanoseconds // 1000
        return slow

    def _processes(self, h):
        running = self._call(self.nv.nvmlDeviceGetComputeRunningProcesses, h) or []
        return [
            {"pid": p.pid, "name": _process_name(p.pid), "gpu_memory_mib": _mib(p.usedGpuMemory)}
            for p in running
        ]

    def close(self):
        try:
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass
