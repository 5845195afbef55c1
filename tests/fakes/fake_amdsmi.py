"""A fake ``libamd_smi.so`` for tests: the real ``amdsmi`` binding over a fake C library.

The binding loads the library with ``ctypes.CDLL`` and binds every C function at import;
``install`` makes that load hand back a ``FakeLibAmdSmi`` instead, so the binding's own
Python (its structures, its enums, its status checks and exceptions) runs unchanged and
only what the C library would write into its structures is ours. Status codes are the
C library's: a reading the capture does not hold answers ``AMDSMI_STATUS_NOT_SUPPORTED``.

Every value comes from a real ``rocm-smi -a --json`` capture of an MI250 (parsed with the
probe's own parser), in the library's units (°C, W, MHz, MB); its first GPU is repeated
``gpu_count`` times with distinct bus id and unique id. What the capture cannot hold (VRAM
bytes, temperature limits, PCIe link, ECC counts) is NOT_SUPPORTED until a test sets it:
``fake.gpus[i].values["temp.HOTSPOT.CRITICAL"] = 100``; ``fake.lose(i)`` makes a GPU answer
every call with ``AMDSMI_STATUS_DRM_ERROR``.
"""

import ctypes
import json
import sys
from pathlib import Path

from dltui.node.probe import amd_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "amd"
CAPTURE = FIXTURES / "rocm-smi-showallinfo-mi250.json"
SUCCESS, NOT_SUPPORTED, DRM_ERROR = 0, 2, 6  # amdsmi_status_t
HANDLE_BASE = 0x1000  # handles are opaque pointers: any distinct non-null address
TEMP_SENSORS = {0: "EDGE", 1: "HOTSPOT", 2: "VRAM"}  # AMDSMI_TEMPERATURE_TYPE_*
TEMP_METRICS = {0: "CURRENT", 5: "CRITICAL", 7: "EMERGENCY"}  # AMDSMI_TEMP_*
CLOCKS = {0: "gfx", 4: "mem"}  # AMDSMI_CLK_TYPE_GFX, _MEM


def _target(arg):
    """The structure behind ``ctypes.byref(x)`` (or the array/buffer passed as is)."""
    return getattr(arg, "_obj", arg)


class FakeGpu:
    def __init__(self, index, facts, record):
        bus = facts["bus_id"]
        domain, rest = bus.split(":", 1)
        bus_number, device_function = rest.split(":")
        device, function = device_function.split(".")
        self.bdf = (int(domain, 16), int(bus_number, 16) + index, int(device, 16), int(function))
        self.lost = False
        self.values = {
            "name": facts["name"],
            "uuid": "%s-%02d" % (facts["uuid"], index),
            "driver_version": facts["driver_version"],
            "temp.EDGE.CURRENT": record["temperature_c"],
            "temp.HOTSPOT.CURRENT": record["hotspot_temperature_c"],
            "temp.VRAM.CURRENT": record["memory_temperature_c"],
            "gfx_activity": record["utilization_percent"],
            "umc_activity": record["memory_utilization_percent"],
            "socket_power": record["power_w"],
            "power_limit": record["power_limit_w"],
            "clock.gfx": record["sm_clock_mhz"],
            "clock.gfx.max": record["sm_clock_max_mhz"],
            "clock.mem": record["memory_clock_mhz"],
            "clock.mem.max": record["memory_clock_max_mhz"],
            "pcie_replay_count": record["pcie_replay_count"],
        }

    def get(self, *keys):
        """The values, or None where any is unknown (the call then answers NOT_SUPPORTED)."""
        found = [self.values.get(key) for key in keys]
        return None if any(v is None for v in found) else found


class FakeFunction:
    """A C function as ctypes shows it: argtypes/restype settable, called with ctypes args."""

    def __init__(self, name, body):
        self.__name__ = name
        self.body = body
        self.argtypes = None
        self.restype = None

    def __call__(self, *args):
        return self.body(*args)


class FakeLibAmdSmi:
    """The C library's state and functions. Unknown functions exist and answer NOT_SUPPORTED."""

    def __init__(self, gpu_count=2, capture=CAPTURE):
        doc = json.loads(Path(capture).read_text(encoding="utf-8"))
        _, facts = amd_json.rocm_smi_facts(doc)
        records = amd_json.rocm_smi_records(doc)
        self.gpus = [FakeGpu(i, facts[0], records[0]) for i in range(gpu_count)]
        self.calls = {}  # function name -> times called
        self.initialised = False
        self._functions = {}

    def lose(self, index):
        self.gpus[index].lost = True

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._functions:
            method = getattr(type(self), "c_" + name, None)
            if method is None:
                def body(*args):
                    return NOT_SUPPORTED
            else:
                body = method.__get__(self)
            self._functions[name] = FakeFunction(name, self._counted(name, body))
        return self._functions[name]

    def _counted(self, name, body):
        def call(*args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return body(*args)

        return call

    def _gpu(self, handle):
        address = handle.value if hasattr(handle, "value") else handle
        return self.gpus[address - HANDLE_BASE]

    # -- the C functions the binding calls for what the probe reads
    def c_amdsmi_init(self, flags):
        self.initialised = True
        return SUCCESS

    def c_amdsmi_shut_down(self):
        self.initialised = False
        return SUCCESS

    def c_amdsmi_get_socket_handles(self, count, handles):
        _target(count).value = 1
        if handles:
            handles[0] = 0x10
        return SUCCESS

    def c_amdsmi_get_processor_handles(self, socket, count, handles):
        _target(count).value = len(self.gpus)
        if handles:
            for i in range(len(self.gpus)):
                handles[i] = HANDLE_BASE + i
        return SUCCESS

    def _answer(self, handle, keys, write):
        gpu = self._gpu(handle)
        if gpu.lost:
            return DRM_ERROR
        found = gpu.get(*keys)
        if found is None:
            return NOT_SUPPORTED
        write(*found)
        return SUCCESS

    def c_amdsmi_get_gpu_device_bdf(self, handle, out):
        gpu = self._gpu(handle)
        bdf = _target(out).struct_amdsmi_bdf_t
        bdf.domain_number, bdf.bus_number, bdf.device_number, bdf.function_number = gpu.bdf
        return SUCCESS

    def c_amdsmi_get_gpu_device_uuid(self, handle, length, buffer):
        def write(uuid):
            buffer.value = uuid.encode()

        return self._answer(handle, ["uuid"], write)

    def c_amdsmi_get_gpu_asic_info(self, handle, out):
        def write(name):
            _target(out).market_name = name.encode()

        return self._answer(handle, ["name"], write)

    def c_amdsmi_get_gpu_driver_info(self, handle, out):
        def write(version):
            info = _target(out)
            info.driver_name, info.driver_version = b"amdgpu", version.encode()

        return self._answer(handle, ["driver_version"], write)

    def c_amdsmi_get_temp_metric(self, handle, sensor, metric, out):
        key = "temp.%s.%s" % (TEMP_SENSORS.get(int(sensor)), TEMP_METRICS.get(int(metric)))

        def write(value):
            _target(out).value = int(value)

        return self._answer(handle, [key], write)

    def c_amdsmi_get_gpu_activity(self, handle, out):
        def write(gfx, umc):
            usage = _target(out)
            usage.gfx_activity, usage.umc_activity, usage.mm_activity = int(gfx), int(umc), 0xFFFF

        return self._answer(handle, ["gfx_activity", "umc_activity"], write)

    def c_amdsmi_get_power_info(self, handle, out):
        def write(power, limit):
            info = _target(out)
            info.socket_power, info.power_limit = int(power), int(limit)
            info.current_socket_power = info.average_socket_power = 0xFFFF  # N/A on MI200

        return self._answer(handle, ["socket_power", "power_limit"], write)

    def c_amdsmi_get_gpu_vram_usage(self, handle, out):
        def write(total, used):
            usage = _target(out)
            usage.vram_total, usage.vram_used = int(total), int(used)

        return self._answer(handle, ["vram_total", "vram_used"], write)

    def c_amdsmi_get_clock_info(self, handle, clock, out):
        name = "clock.%s" % CLOCKS.get(int(clock))

        def write(current, top):
            info = _target(out)
            info.clk, info.max_clk, info.min_clk = int(current), int(top), 0xFFFFFFFF
            info.clk_locked = info.clk_deep_sleep = 0xFF

        return self._answer(handle, [name, name + ".max"], write)

    def c_amdsmi_get_pcie_info(self, handle, out):
        gpu = self._gpu(handle)
        if gpu.lost:
            return DRM_ERROR
        info = _target(out)
        unknown = {"pcie_speed": 0xFFFFFFFF, "pcie_width": 0xFFFF, "max_pcie_speed": 0xFFFFFFFF,
                   "max_pcie_width": 0xFFFF, "pcie_replay_count": 0xFFFFFFFFFFFFFFFF}
        for field, none in unknown.items():
            value = gpu.values.get(field)
            part = info.pcie_static if field.startswith("max_") else info.pcie_metric
            setattr(part, field, none if value is None else int(value))
        return SUCCESS

    def c_amdsmi_get_gpu_total_ecc_count(self, handle, out):
        def write(corrected, uncorrected):
            counts = _target(out)
            counts.correctable_count, counts.uncorrectable_count = int(corrected), int(uncorrected)

        return self._answer(handle, ["ecc_corrected", "ecc_uncorrected"], write)


def install(monkeypatch, fake, rocm_root, rocm_version="7.0.2"):
    """Make ``rocm_root`` a ROCm install whose ``lib/libamd_smi.so`` loads as ``fake``.

    The binding binds the C functions when first imported, so any earlier import is dropped
    (the test's ``forget`` at teardown drops this one)."""
    (rocm_root / "lib").mkdir(parents=True, exist_ok=True)
    (rocm_root / "lib" / "libamd_smi.so").write_bytes(b"")  # stands there; the fake is what loads
    (rocm_root / ".info").mkdir(exist_ok=True)
    (rocm_root / ".info" / "version").write_text(rocm_version + "-40\n", encoding="utf-8")
    forget()
    real = ctypes.CDLL

    def cdll(name, *args, **kwargs):
        if str(name).endswith("libamd_smi.so"):
            return fake
        return real(name, *args, **kwargs)

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setenv("ROCM_PATH", str(rocm_root))
    monkeypatch.delenv("ROCM_HOME", raising=False)


def forget():
    """Drop the imported binding (bound to whichever library it loaded)."""
    for name in [m for m in sys.modules if m == "amdsmi" or m.startswith("amdsmi.")]:
        del sys.modules[name]
