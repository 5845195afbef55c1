"""NVLink per GPU: links active out of the GPU's links, each link's speed, and the CRC, replay and
recovery error counters summed over the links. From NVML where the GPU source is NVML, else
from ``nvidia-smi nvlink`` (``nvlink_smi.py``).

NVML: a GPU's links are found once (``nvmlDeviceGetNvLinkState`` for link 0, 1, … until NVML
says there is no such link); NOT_SUPPORTED on link 0 means the GPU has no NVLink (PCIe cards),
not an error. Cadence: link states every ``STATE_REFRESH_S`` (speeds only when a state changed,
or every ``SPEED_REFRESH_S``), error counters every ``ERROR_REFRESH_S``, the last record
repeated in between. A state is one NVML call per link (18 per GPU on Hopper, 144 a second on
an 8-GPU node were it read every tick); a link that fails also logs XID 74, which the probe's
kernel-log reader reports as it happens, so polling the state faster buys nothing. The
counters are cumulative and judged over minutes, like ECC (read every 10 s). Counters come
from the per-GPU totals (field values, one call per GPU), else per link
(``nvmlDeviceGetNvLinkErrorCounter``).
"""

from __future__ import annotations

import time
from typing import Any

STATE_REFRESH_S = 10.0
ERROR_REFRESH_S = 10.0
SPEED_REFRESH_S = 60.0  # and whenever a link's state changed: a link retrains to a new speed


def open_nvlink(gpu: Any, source: str | None, problems: Any) -> Any:
    """The NVLink reader for the node's GPU source, or None (no GPU source)."""
    if gpu is None:
        return None
    if source == "nvml":
        handles = [(g.index, g.handle) for g in gpu.gpus if g.handle is not None and g.gone is None]
        return NvmlNvlink(gpu.nv, handles, problems)
    if source == "nvidia-smi":
        from .nvlink_smi import SmiNvlink

        return SmiNvlink(gpu.binary, problems)
    return None


class _Links:
    """One GPU's links and its last readings."""

    __slots__ = ("index", "handle", "count", "up", "speeds", "speeds_at", "errors")

    def __init__(self, index: int, handle: Any, count: int) -> None:
        self.index = index
        self.handle = handle
        self.count = count
        self.up: list[bool | None] = []
        self.speeds: list[float | None] = []
        self.speeds_at: float | None = None
        self.errors: dict[str, int | None] = {}


class NvmlNvlink:
    """NVLink of the GPUs NVML opened; ``sample`` never raises."""

    def __init__(self, nv: Any, handles: list[tuple[int, Any]], problems: Any) -> None:
        self.nv = nv
        self.problems = problems
        self.states_at: float | None = None
        self.errors_at: float | None = None
        self.latest: list[dict[str, Any]] = []  # repeated between refreshes, never changed
        self.gpus: list[_Links] = []
        for index, handle in handles:
            count = self._link_count(handle)
            if count:
                self.gpus.append(_Links(index, handle, count))

    def _call(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)``; None where the GPU or link does not report it. Other NVML failures
        are reported once (a GPU lost is the GPU record's to say)."""
        nv = self.nv
        try:
            return fn(*args)
        except (nv.NVMLError_NotSupported, nv.NVMLError_InvalidArgument, nv.NVMLError_NotFound):
            return None
        except (nv.NVMLError_GpuIsLost, nv.NVMLError_ResetRequired):
            raise
        except nv.NVMLError as exc:
            self.problems.report("nvml " + getattr(fn, "__name__", "nvlink"), str(exc))
            return None

    def _link_count(self, handle: Any) -> int:
        """Links answered, from link 0 on; 0 when the GPU has no NVLink."""
        count = 0
        try:
            while count < self.nv.NVML_NVLINK_MAX_LINKS:
                if self._call(self.nv.nvmlDeviceGetNvLinkState, handle, count) is None:
                    break
                count += 1
        except self.nv.NVMLError:
            return 0
        return count

    def sample(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        states = self.states_at is None or now - self.states_at >= STATE_REFRESH_S
        errors = self.errors_at is None or now - self.errors_at >= ERROR_REFRESH_S
        if not states and not errors:
            return self.latest
        if states:
            self.states_at = now
        if errors:
            self.errors_at = now
        out = []
        for g in self.gpus:
            try:
                if states:
                    self._read_states(g, now)
                if errors:
                    g.errors = self._read_errors(g)
            except self.nv.NVMLError:  # lost or waiting for a reset: the GPU record says so
                continue
            active = sum(1 for up in g.up if up)
            out.append(
                {
                    "gpu": g.index,
                    "links_active": active,
                    "links_total": g.count,
                    "links_up": list(g.up),
                    "link_speeds_gbytes_per_s": list(g.speeds),
                    "crc_errors_total": g.errors.get("crc_errors_total"),
                    "replay_errors_total": g.errors.get("replay_errors_total"),
                    "recovery_errors_total": g.errors.get("recovery_errors_total"),
                    "error": None,
                }
            )
        self.latest = out
        return out

    def _read_states(self, g: _Links, now: float) -> None:
        nv = self.nv
        get, enabled, handle = nv.nvmlDeviceGetNvLinkState, nv.NVML_FEATURE_ENABLED, g.handle
        try:  # every link answers, the common case: one loop without a handler per call
            up: list[bool | None] = [get(handle, link) == enabled for link in range(g.count)]
        except nv.NVMLError:  # a link that does not say, or worse: each asked again on its own
            up = []
            for link in range(g.count):
                state = self._call(get, handle, link)
                up.append(None if state is None else state == enabled)
        if up != g.up or g.speeds_at is None or now - g.speeds_at >= SPEED_REFRESH_S:
            speeds = self._speeds(g)
            g.speeds = [speed if is_up else None for speed, is_up in zip(speeds, up)]
            g.speeds_at = now
        g.up = up

    def _speeds(self, g: _Links) -> list[float | None]:
        """Per-link speed in GB/s: the per-link field (newer drivers), else the speed common to
        every link; None where neither is reported."""
        nv = self.nv
        per_link = getattr(nv, "NVML_FI_DEV_NVLINK_GET_SPEED", None)
        values: list[float | None] = [None] * g.count
        if per_link is not None:
            values = self._fields(g.handle, [(per_link, link) for link in range(g.count)])
        if all(v is None for v in values):
            common = self._fields(g.handle, [nv.NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON])[0]
            values = [common] * g.count
        return [None if v is None else round(v / 1000.0, 3) for v in values]  # MB/s -> GB/s

    def _read_errors(self, g: _Links) -> dict[str, int | None]:
        nv = self.nv
        flit, data, replay, recovery = self._fields(
            g.handle,
            [
                nv.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
                nv.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
                nv.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
                nv.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
            ],
        )
        if flit is None and data is None and replay is None and recovery is None:
            return self._per_link_errors(g)
        return {
            "crc_errors_total": _sum(flit, data),
            "replay_errors_total": _int(replay),
            "recovery_errors_total": _int(recovery),
        }

    def _per_link_errors(self, g: _Links) -> dict[str, int | None]:
        nv = self.nv
        kinds = (
            ("crc_errors_total", nv.NVML_NVLINK_ERROR_DL_CRC_FLIT),
            ("crc_errors_total", nv.NVML_NVLINK_ERROR_DL_CRC_DATA),
            ("replay_errors_total", nv.NVML_NVLINK_ERROR_DL_REPLAY),
            ("recovery_errors_total", nv.NVML_NVLINK_ERROR_DL_RECOVERY),
        )
        totals: dict[str, int | None] = {}
        for field, counter in kinds:
            for link in range(g.count):
                value = self._call(nv.nvmlDeviceGetNvLinkErrorCounter, g.handle, link, counter)
                if value is not None:
                    totals[field] = (totals.get(field) or 0) + int(value)
        return totals

    def _fields(self, handle: Any, ids: list[Any]) -> list[float | None]:
        """Field values in the order asked; None for each one not answered."""
        from .nvml_calls import union_value  # loaded already: this reader runs on NVML's handles

        nv = self.nv
        try:
            answers = self._call(nv.nvmlDeviceGetFieldValues, handle, ids)
        except TypeError:  # a binding that predates scoped (field, link) ids
            return [None] * len(ids)
        out: list[float | None] = []
        for answer in answers or [None] * len(ids):
            if answer is None or answer.nvmlReturn != nv.NVML_SUCCESS:
                out.append(None)
                continue
            out.append(union_value(answer.valueType, answer.value))
        return out

    def close(self) -> None:
        """NVML itself is shut down by the GPU collector."""


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _sum(*values: float | None) -> int | None:
    known = [int(v) for v in values if v is not None]
    return sum(known) if known else None
