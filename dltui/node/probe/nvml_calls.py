"""The one place NVML is called: "not supported here" becomes None (never 0), "GPU is lost"
(or needs a reset) becomes ``GpuGone`` for the GPU record's ``error``, a driver older than the
binding (FunctionNotFound) None or the older call, anything else one report to ``Problems``."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .gpu_records import GPU_LOST, GPU_NEEDS_RESET
from .problems import Problems

MIB = 1024 * 1024


class GpuGone(Exception):
    """This GPU cannot answer any more (lost, or waiting for a reset)."""


class Nvml:
    def __init__(self, nv: Any, problems: Problems) -> None:
        self.nv = nv  # the pynvml module
        self.problems = problems

    def call(self, fn: Callable[..., Any], *args: Any,
             older: Callable[[], Any] | None = None) -> Any:
        """``fn(*args)``; None where the device or driver does not report it. ``older`` (no
        arguments) is used instead when the driver predates ``fn``."""
        nv = self.nv
        source = "nvml " + fn.__name__  # one source per call: two failing calls are two reports, once each
        try:
            value = fn(*args)
        except nv.NVMLError_GpuIsLost:
            raise GpuGone(GPU_LOST) from None
        except nv.NVMLError_ResetRequired:
            raise GpuGone(GPU_NEEDS_RESET) from None
        except nv.NVMLError_FunctionNotFound:
            return self.call(older) if older is not None else None
        except (nv.NVMLError_NotSupported, nv.NVMLError_NotFound, nv.NVMLError_NoPermission):
            return None
        except nv.NVMLError as exc:
            self.problems.report(source, str(exc))
            return None
        if source in self.problems.active:
            self.problems.clear(source)
        return value

    def field_values(self, handle: Any, ids: Iterable[int]) -> dict[int, Any]:
        """{field id: value or None}. Each entry carries its own return code."""
        result: dict[int, Any] = dict.fromkeys(ids)
        if not result:
            return result
        answers = self.call(self.nv.nvmlDeviceGetFieldValues, handle, list(result))
        for answer in answers or ():
            if answer.nvmlReturn == self.nv.NVML_SUCCESS and answer.fieldId in result:
                result[answer.fieldId] = union_value(answer.valueType, answer.value)
        return result

    def memory(self, handle: Any) -> Any:
        """The GPU's memory info (v2 where the driver has it)."""
        nv = self.nv
        return self.call(
            nv.nvmlDeviceGetMemoryInfo,
            handle,
            nv.nvmlMemory_v2,
            older=lambda: nv.nvmlDeviceGetMemoryInfo(handle),
        )


def union_value(value_type: int, value: Any) -> Any:
    """Read an ``nvmlValue_t`` union by the member its ``valueType`` names (the
    ``nvmlValueType_t`` C enum, the same in every NVML release)."""
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    name = member.get(value_type)
    return getattr(value, name) if name else None


def text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def watts(milliwatts: float | None) -> float | None:
    return None if milliwatts is None else round(milliwatts / 1000.0, 1)


def mib(nbytes: float | None) -> int | None:
    return None if nbytes is None else int(round(nbytes / MIB))
