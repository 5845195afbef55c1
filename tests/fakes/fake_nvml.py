"""A fake NVML for tests: the real ``pynvml`` with only its functions replaced.

Constants, structures and the ``NVMLError_*`` classes stay the real ones, so the collector's
error handling meets the exceptions a real driver raises. Every value comes from a real
``nvidia-smi --query-gpu`` capture (parsed with the probe's own CSV parser), in NVML's units
(mW, bytes, ns); a field the capture shows as N/A raises ``NVMLError_NotSupported``. The
captured GPU is repeated ``gpu_count`` times with distinct index, UUID and bus id.

Tests change the state between ticks: ``fake.gpus[i].row[field] = "91"``, ``fake.lose(i)``,
``fake.push_utilization(i, [...])``, ``fake.gpus[i].fields[field_id] = value`` for NVML-only
field values the capture cannot hold.

NVLink: a query-gpu capture holds none, so every GPU answers NOT_SUPPORTED (a PCIe card) until
``fake.nvlink_from_smi(status, errors)`` gives each GPU the links of a real ``nvidia-smi nvlink
-s`` / ``-e`` capture (parsed with the probe's own parser); ``gpu.nvlink`` can then be changed.
``fake.nvlink_totals = False`` makes the per-GPU total fields unsupported (older drivers).
"""

import types

import pynvml

from dltui.node.probe import values
from dltui.node.probe.nvlink_smi import parse_status
from dltui.node.probe.smi import parse_compute_apps_csv, parse_query_csv

MIB = 1024 * 1024
SAMPLE_CLOCK_START_US = 1_760_000_000_000_000  # NVML sample timestamps are CPU time in µs


def _not_supported():
    return pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


class FakeGpu:
    """One GPU: its capture row (raw cells, units included) and what NVML alone knows."""

    def __init__(self, index, row):
        self.index = index
        self.row = dict(row)
        self.lost = False
        self.samples = []  # utilisation buffer: [(timestamp µs, percent)], oldest first
        self.fields = {}  # NVML field id -> value, for fields no capture holds
        self.processes = []  # [(pid, used bytes or None)]
        self.nvlink = None  # None: no NVLink; else {"up": [...], "mbps": [...], "errors": {NVML counter: [...]}}

    def value(self, field, parse=values.number):
        """The captured value, or NotSupported where the capture says N/A."""
        parsed = parse(self.row.get(field))
        if parsed is None:
            raise _not_supported()
        return parsed


class FakeNvml:
    """The state behind the patched functions, and the functions themselves."""

    def __init__(self, capture_path, gpu_count, overrides=None, apps_path=None):
        with open(capture_path, encoding="utf-8") as f:
            row = parse_query_csv(f.read()).rows[0]
        self.driver_version = row["driver_version"]
        self.cuda_driver_version = 13010  # the H100 capture's host: R590 with CUDA 13.1
        self.init_calls = 0
        self.shutdown_calls = 0
        self.nvlink_totals = True
        self.gpus = [FakeGpu(i, _distinct(row, i, gpu_count)) for i in range(gpu_count)]
        for index, changes in (overrides or {}).items():
            self.gpus[index].row.update(changes)
        if apps_path:
            with open(apps_path, encoding="utf-8") as f:
                apps = parse_compute_apps_csv(f.read()).rows
            for gpu in self.gpus:
                gpu.processes = [
                    (int(app["pid"]), _bytes(values.number(app["used_gpu_memory"])))
                    for app in apps
                    if app["gpu_uuid"] == gpu.row["uuid"]
                ]

    def lose(self, index):
        self.gpus[index].lost = True

    def nvlink_from_smi(self, status_text, errors_text):
        """Every GPU gets the links of the first GPU in the ``nvidia-smi nvlink -s`` capture,
        all error counters at the capture's 0 (``errors_text`` must show every counter at 0)."""
        assert "Errors: 0" in errors_text and not any(
            line.split(":")[-1].strip() not in ("", "0") for line in errors_text.splitlines() if "Errors:" in line
        )
        links = next(iter(parse_status(status_text).values()))
        for gpu in self.gpus:
            count = len(links["links_up"])
            gpu.nvlink = {
                "up": list(links["links_up"]),
                "mbps": [None if s is None else s * 1000 for s in links["link_speeds_gbytes_per_s"]],
                "errors": {counter: [0] * count for counter in range(4)},  # NVML_NVLINK_ERROR_DL_*
            }

    def push_utilization(self, index, percents, period_ms=1000.0 / 6):
        """Append readings to a GPU's utilisation buffer, ``period_ms`` apart."""
        gpu = self.gpus[index]
        for percent in percents:
            t = SAMPLE_CLOCK_START_US + round((len(gpu.samples) + 1) * period_ms * 1000)
            gpu.samples.append((t, percent))

    def _gpu(self, handle):
        if handle.lost:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        return handle

    def functions(self):
        """pynvml function name -> replacement."""
        nv = pynvml
        g = self._gpu

        def utilization(h):
            gpu = g(h)
            return nv.c_nvmlUtilization_t(
                gpu=gpu.value("utilization.gpu"), memory=gpu.value("utilization.memory")
            )

        def samples(h, sampling_type, last_seen_us):
            gpu = g(h)
            if sampling_type != nv.NVML_GPU_UTILIZATION_SAMPLES:
                raise _not_supported()
            newer = [s for s in gpu.samples if s[0] > last_seen_us]
            if not newer:
                raise pynvml.NVMLError(nv.NVML_ERROR_NOT_FOUND)
            out = []
            for t, percent in newer:
                sample = nv.c_nvmlSample_t()
                sample.timeStamp = t
                sample.sampleValue.uiVal = percent
                out.append(sample)
            return nv.NVML_VALUE_TYPE_UNSIGNED_INT, out

        def memory(h, version=None):
            gpu = g(h)
            total, used = gpu.value("memory.total"), gpu.value("memory.used")
            free, reserved = gpu.value("memory.free"), gpu.value("memory.reserved")
            if version is None:
                return nv.c_nvmlMemory_t(total=total * MIB, free=free * MIB, used=used * MIB)
            return nv.c_nvmlMemory_v2_t(
                version=version,
                total=total * MIB,
                reserved=reserved * MIB,
                free=free * MIB,
                used=used * MIB,
            )

        nvlink_state, nvlink_error_counter, nvlink_field = _nvlink_calls(self, g)

        def field_values(h, field_ids):
            gpu = g(h)
            captured = {
                nv.NVML_FI_DEV_MEMORY_TEMP: (
                    "temperature.memory",
                    nv.NVML_VALUE_TYPE_UNSIGNED_INT,
                    1,
                ),
                nv.NVML_FI_DEV_PERF_POLICY_POWER: (
                    "clocks_event_reasons_counters.sw_power_cap",
                    nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                    1000,
                ),
                nv.NVML_FI_DEV_PERF_POLICY_SYNC_BOOST: (
                    "clocks_event_reasons_counters.sync_boost",
                    nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                    1000,
                ),
                nv.NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN: (
                    "clocks_event_reasons_counters.sw_thermal_slowdown",
                    nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                    1000,
                ),
                nv.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN: (
                    "clocks_event_reasons_counters.hw_thermal_slowdown",
                    nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                    1000,
                ),
                nv.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN: (
                    "clocks_event_reasons_counters.hw_power_brake_slowdown",
                    nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                    1000,
                ),
            }
            answers = (nv.c_nvmlFieldValue_t * len(field_ids))()
            for answer, asked in zip(answers, field_ids):
                field_id, scope = asked if isinstance(asked, tuple) else (asked, 0)
                answer.fieldId, answer.scopeId = field_id, scope
                value, value_type = None, nv.NVML_VALUE_TYPE_SIGNED_INT
                if field_id in gpu.fields:
                    value = gpu.fields[field_id]
                elif nvlink_field(gpu, field_id, scope) is not None:
                    value, value_type = nvlink_field(gpu, field_id, scope), nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                elif field_id in captured:
                    name, value_type, scale = captured[field_id]
                    number = values.number(gpu.row.get(name))
                    value = None if number is None else number * scale  # µs -> ns
                if value is None:
                    answer.nvmlReturn = nv.NVML_ERROR_NOT_SUPPORTED
                    continue
                answer.nvmlReturn = nv.NVML_SUCCESS
                answer.valueType = value_type
                member = {
                    nv.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
                    nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
                    nv.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
                }[value_type]
                setattr(answer.value, member, int(value))
            return answers

        def clock(name_sm, name_mem):
            def get(h, clock_type):
                gpu = g(h)
                if clock_type == nv.NVML_CLOCK_SM:
                    return gpu.value(name_sm)
                if clock_type == nv.NVML_CLOCK_MEM:
                    return gpu.value(name_mem)
                raise _not_supported()

            return get

        def milliwatts(field):
            return lambda h: int(round(g(h).value(field) * 1000))

        def captured(field, parse=values.number):
            return lambda h: g(h).value(field, parse)

        def enable_state(field):
            return lambda h: int(g(h).value(field, values.flag))

        def ecc_total(h, error_type, counter_type):
            kind = (
                "corrected" if error_type == nv.NVML_MEMORY_ERROR_TYPE_CORRECTED else "uncorrected"
            )
            counter = "volatile" if counter_type == nv.NVML_VOLATILE_ECC else "aggregate"
            return g(h).value("ecc.errors.%s.%s.total" % (kind, counter))

        def remapped_rows(h):
            gpu = g(h)
            return (
                gpu.value("remapped_rows.correctable"),
                gpu.value("remapped_rows.uncorrectable"),
                int(gpu.value("remapped_rows.pending", values.flag)),
                int(gpu.value("remapped_rows.failure", values.flag)),
            )

        def pci_info(h):
            info = nv.nvmlPciInfo_t()
            info.busId = g(h).value("pci.bus_id", values.text).encode()
            return info

        def fan_count(h):
            return 0 if values.number(g(h).row.get("fan.speed")) is None else 1

        def fan_speed(h, fan):
            gpu = g(h)
            if fan >= fan_count(gpu):
                raise pynvml.NVMLError(nv.NVML_ERROR_INVALID_ARGUMENT)
            return gpu.value("fan.speed")

        def mig_mode(h):
            gpu = g(h)
            return [
                int(gpu.value("mig.mode.current", values.flag)),
                int(gpu.value("mig.mode.pending", values.flag)),
            ]

        def compute_capability(h):
            major, minor = g(h).value("compute_cap", values.text).split(".")
            return int(major), int(minor)

        def power_constraints(h):
            gpu = g(h)
            return [milliwatts("power.min_limit")(gpu), milliwatts("power.max_limit")(gpu)]

        def processes(h):
            return [
                types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in g(h).processes
            ]

        def not_captured(h, *args):
            """NVML-only values (thresholds, PCIe replays): no query-gpu capture holds them."""
            g(h)
            raise _not_supported()

        def handle(index):
            return self.gpus[index]

        def pcie_gen(h):
            gpu = g(h)
            if "pcie.link.gen.gpucurrent" in gpu.row:
                return gpu.value("pcie.link.gen.gpucurrent")
            return gpu.value("pcie.link.gen.current")

        def init():
            self.init_calls += 1

        def shutdown():
            self.shutdown_calls += 1

        return {
            "nvmlInit": init,
            "nvmlShutdown": shutdown,
            "nvmlSystemGetDriverVersion": lambda: self.driver_version,
            "nvmlSystemGetCudaDriverVersion_v2": lambda: self.cuda_driver_version,
            "nvmlSystemGetNVMLVersion": lambda: "%d.%s"
            % (self.cuda_driver_version // 1000, self.driver_version),
            "nvmlDeviceGetCount": lambda: len(self.gpus),
            "nvmlDeviceGetHandleByIndex": handle,
            "nvmlDeviceGetUUID": captured("uuid", values.text),
            "nvmlDeviceGetName": captured("name", values.text),
            "nvmlDeviceGetSerial": captured("serial", values.text),
            "nvmlDeviceGetVbiosVersion": captured("vbios_version", values.text),
            "nvmlDeviceGetPciInfo": pci_info,
            "nvmlDeviceGetUtilizationRates": utilization,
            "nvmlDeviceGetSamples": samples,
            "nvmlDeviceGetMemoryInfo": memory,
            "nvmlDeviceGetTemperatureV": lambda h, sensor: g(h).value("temperature.gpu"),
            "nvmlDeviceGetTemperatureThreshold": not_captured,
            "nvmlDeviceGetMarginTemperature": captured("temperature.gpu.tlimit"),
            "nvmlDeviceGetFieldValues": field_values,
            "nvmlDeviceGetPowerUsage": milliwatts("power.draw"),
            "nvmlDeviceGetEnforcedPowerLimit": milliwatts("enforced.power.limit"),
            "nvmlDeviceGetPowerManagementDefaultLimit": milliwatts("power.default_limit"),
            "nvmlDeviceGetPowerManagementLimitConstraints": power_constraints,
            "nvmlDeviceGetClockInfo": clock("clocks.current.sm", "clocks.current.memory"),
            "nvmlDeviceGetMaxClockInfo": clock("clocks.max.sm", "clocks.max.memory"),
            "nvmlDeviceGetPerformanceState": captured("pstate", values.pstate),
            "nvmlDeviceGetNumFans": fan_count,
            "nvmlDeviceGetFanSpeed_v2": fan_speed,
            "nvmlDeviceGetCurrentClocksEventReasons": captured(
                "clocks_event_reasons.active", values.hex_mask
            ),
            "nvmlDeviceGetCurrPcieLinkGeneration": pcie_gen,
            "nvmlDeviceGetCurrPcieLinkWidth": captured("pcie.link.width.current"),
            "nvmlDeviceGetMaxPcieLinkGeneration": captured("pcie.link.gen.max"),
            "nvmlDeviceGetMaxPcieLinkWidth": captured("pcie.link.width.max"),
            "nvmlDeviceGetGpuMaxPcieLinkGeneration": captured("pcie.link.gen.gpumax"),
            "nvmlDeviceGetPcieReplayCounter": not_captured,
            "nvmlDeviceGetTotalEccErrors": ecc_total,
            "nvmlDeviceGetRemappedRows": remapped_rows,
            "nvmlDeviceGetRetiredPagesPendingStatus": enable_state("retired_pages.pending"),
            "nvmlDeviceGetComputeRunningProcesses": processes,
            "nvmlDeviceGetPersistenceMode": enable_state("persistence_mode"),
            "nvmlDeviceGetCurrentEccMode": enable_state("ecc.mode.current"),
            "nvmlDeviceGetMigMode": mig_mode,
            "nvmlDeviceGetCudaComputeCapability": compute_capability,
            "nvmlDeviceGetNvLinkState": nvlink_state,
            "nvmlDeviceGetNvLinkErrorCounter": nvlink_error_counter,
        }


def _nvlink_calls(fake, g):
    """The NVLink functions of ``fake``'s GPUs: per-link state and error counters, field values."""
    nv = pynvml

    def nvlink(h, link):
        gpu = g(h)
        if gpu.nvlink is None:
            raise _not_supported()
        if link >= len(gpu.nvlink["up"]):
            raise pynvml.NVMLError(nv.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.nvlink

    def nvlink_state(h, link):
        return nv.NVML_FEATURE_ENABLED if nvlink(h, link)["up"][link] else nv.NVML_FEATURE_DISABLED

    def nvlink_error_counter(h, link, counter):
        return nvlink(h, link)["errors"][counter][link]

    def nvlink_field(gpu, field_id, scope):
        """NVLink field values: per-link speed (scoped), per-GPU error totals."""
        links = gpu.nvlink
        if links is None:
            return None
        if field_id == nv.NVML_FI_DEV_NVLINK_GET_SPEED and scope < len(links["up"]):
            return links["mbps"][scope] if links["up"][scope] else 0
        totals = {
            nv.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: nv.NVML_NVLINK_ERROR_DL_REPLAY,
            nv.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: nv.NVML_NVLINK_ERROR_DL_RECOVERY,
            nv.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: nv.NVML_NVLINK_ERROR_DL_CRC_FLIT,
            nv.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: nv.NVML_NVLINK_ERROR_DL_CRC_DATA,
        }
        if field_id in totals and fake.nvlink_totals:
            return sum(links["errors"][totals[field_id]])
        return None

    return nvlink_state, nvlink_error_counter, nvlink_field


def _bytes(mib):
    return None if mib is None else mib * MIB


def _distinct(row, index, count):
    """The captured row as GPU ``index`` of ``count``: own index, UUID and bus id."""
    row = dict(row)
    row["index"] = str(index)
    if count > 1:
        uuid = row["uuid"]
        row["uuid"] = "%s%012x" % (uuid[:-12], int(uuid[-12:], 16) + index)
        domain, bus, devfn = row["pci.bus_id"].split(":")
        row["pci.bus_id"] = "%s:%02X:%s" % (domain, int(bus, 16) + index, devfn)
    return row


def install_fake_nvml(
    monkeypatch_or_module, capture_path, gpu_count=8, overrides=None, apps_path=None
):
    """Replace pynvml's functions with a FakeNvml's; returns the FakeNvml to steer.

    ``monkeypatch_or_module``: pytest's ``monkeypatch`` (undone after the test), or the
    ``pynvml`` module itself to patch it for the life of the process (benchmarks).
    ``overrides``: {gpu index: {query-gpu field: raw cell}} applied to the capture.
    """
    fake = FakeNvml(capture_path, gpu_count, overrides, apps_path)
    for name, fn in fake.functions().items():
        if isinstance(monkeypatch_or_module, types.ModuleType):
            assert hasattr(monkeypatch_or_module, name), name
            setattr(monkeypatch_or_module, name, fn)
        else:
            monkeypatch_or_module.setattr(pynvml, name, fn)
    return fake
