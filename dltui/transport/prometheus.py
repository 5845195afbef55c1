"""The fleet from an existing Prometheus (node_exporter + dcgm-exporter) instead of SSH.

Every refresh runs the same three instant queries, whatever the fleet's size:

1. ``DCGM_FI_DEV_*`` gauges (one selector, a ``__name__`` regex): the GPUs;
2. node_exporter gauges and ``up``: memory, load, file systems, facts, target health;
3. node_exporter counters as rates (``irate``), each tagged with a ``dltui`` label and joined
   with ``or``: CPU by mode (summed per instance), disks, NICs, pressure.

Nodes are joined on the host name: dcgm-exporter's ``Hostname`` (``hostname`` since 2026),
node_exporter's ``nodename`` from ``node_uname_info``, else the host part of ``instance``.
Series are mapped into the same ``Sample`` model as the probe's; what Prometheus does not hold
is ``None`` (n/a), never 0. There is no sub-second GPU utilisation here: the starvation rule
works on one reading per refresh, and its alerts say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field, fields
from typing import Any

from dltui.core import status as st
from dltui.core.models import (
    CpuSample,
    DiskSample,
    FilesystemSample,
    GpuFacts,
    GpuSample,
    MemorySample,
    NetworkSample,
    NodeEvent,
    NodeFacts,
    PressureSample,
    Sample,
    TaskSample,
)
from dltui.probe.schema import decode_clock_event_reasons

from .base import Sink

QUERY_TIMEOUT_S = 10.0
RATE_WINDOW = "2m"  # irate takes the newest two points in it: covers scrape intervals up to 1 min
# File systems an operator does not fill with data sets or checkpoints.
_PSEUDO_FS = {"tmpfs", "devtmpfs", "squashfs", "nsfs", "ramfs", "autofs", "fuse.lxcfs"}

_DCGM_FIELDS = {
    "GPU_TEMP": "temperature_c",
    "MEMORY_TEMP": "memory_temperature_c",
    "POWER_USAGE": "power_w",
    "POWER_MGMT_LIMIT": "power_limit_w",
    "GPU_UTIL": "utilization_percent",
    "MEM_COPY_UTIL": "memory_utilization_percent",
    "SM_CLOCK": "sm_clock_mhz",
    "MEM_CLOCK": "memory_clock_mhz",
    "FB_USED": "memory_used_mib",
    "PCIE_REPLAY_COUNTER": "pcie_replay_count",
    "PCIE_LINK_GEN": "pcie_gen",
    "PCIE_LINK_WIDTH": "pcie_width",
    "FAN_SPEED": "fan_percent",
    "PSTATE": "pstate",
    "ECC_SBE_VOL_TOTAL": "ecc_corrected_volatile",
    "ECC_DBE_VOL_TOTAL": "ecc_uncorrected_volatile",
    "ECC_SBE_AGG_TOTAL": "ecc_corrected_aggregate",
    "ECC_DBE_AGG_TOTAL": "ecc_uncorrected_aggregate",
    "CORRECTABLE_REMAPPED_ROWS": "remapped_rows_correctable",
    "UNCORRECTABLE_REMAPPED_ROWS": "remapped_rows_uncorrectable",
    "ROW_REMAP_FAILURE": "remapped_rows_failure",
    "ROW_REMAP_PENDING": "remapped_rows_pending",
}
# Counters and flags become ints and bools, as the probe's records have them.
_INT_FIELDS = {f.name for f in fields(GpuSample) if f.type == "int | None"}
_BOOL_FIELDS = {f.name for f in fields(GpuSample) if f.type == "bool | None"}
# The clock-event mask under its current name and its deprecated one (same NVML bits).
_REASON_FIELDS = ("CLOCKS_EVENT_REASONS", "CLOCK_THROTTLE_REASONS")
_OTHER_DCGM = ("FB_FREE", "FB_RESERVED", "FB_TOTAL", "XID_ERRORS")

_GPU_LABELS = (
    "__name__, instance, Hostname, hostname, gpu, UUID, modelName, pci_bus_id, "
    "DCGM_FI_DRIVER_VERSION, GPU_I_ID"
)
_HOST_LABELS = (
    "__name__, instance, nodename, release, pretty_name, name, mountpoint, fstype, device"
)
_HOST_GAUGES = (
    "up",
    "node_uname_info",
    "node_os_info",
    "node_boot_time_seconds",
    "node_memory_MemTotal_bytes",
    "node_memory_MemAvailable_bytes",
    "node_memory_Cached_bytes",
    "node_memory_Buffers_bytes",
    "node_memory_Shmem_bytes",
    "node_memory_SwapTotal_bytes",
    "node_memory_SwapFree_bytes",
    "node_load1",
    "node_load5",
    "node_load15",
    "node_procs_running",
    "node_procs_blocked",
    "node_filesystem_size_bytes",
    "node_filesystem_free_bytes",
    "node_filesystem_avail_bytes",
    "node_network_receive_errs_total",
    "node_network_transmit_errs_total",
    "node_network_receive_drop_total",
    "node_network_transmit_drop_total",
)
_RATES = (  # (dltui tag, counter)
    ("disk_read", "node_disk_read_bytes_total"),
    ("disk_written", "node_disk_written_bytes_total"),
    ("disk_busy", "node_disk_io_time_seconds_total"),
    ("net_rx", "node_network_receive_bytes_total"),
    ("net_tx", "node_network_transmit_bytes_total"),
    ("psi_cpu_some", "node_pressure_cpu_waiting_seconds_total"),
    ("psi_io_some", "node_pressure_io_waiting_seconds_total"),
    ("psi_io_full", "node_pressure_io_stalled_seconds_total"),
    ("psi_memory_some", "node_pressure_memory_waiting_seconds_total"),
    ("psi_memory_full", "node_pressure_memory_stalled_seconds_total"),
)


_gc_lock = threading.Lock()
_gc_pausers = [0, False]  # how many hold the pause; whether the collector was on before it


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a large answer is decoded and delivered.

    A 2,000-node answer decodes into millions of acyclic containers; the collector's passes
    over them (each one scanning the whole young heap again) took 60 % of the decode time and
    half of the first delivery. Nested and thread-safe: the last holder restores it."""
    with _gc_lock:
        if _gc_pausers[0] == 0:
            _gc_pausers[1] = gc.isenabled()
            gc.disable()
        _gc_pausers[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers[0] -= 1
            if _gc_pausers[0] == 0 and _gc_pausers[1]:
                gc.enable()


class PrometheusError(Exception):
    """Prometheus could not answer: said in plain words."""


class SelectorError(ValueError):
    pass


def matchers(selector: str | None) -> str:
    """``--match`` as the label matchers to add inside every selector's braces:
    ``{job="gpu"}`` and ``job="gpu"`` both give ``job="gpu"``."""
    if not selector:
        return ""
    inner = selector.strip()
    if inner.startswith("{"):
        if not inner.endswith("}"):
            raise SelectorError(f"--match {selector!r}: unbalanced braces")
        inner = inner[1:-1].strip()
    if not re.fullmatch(r'(\s*[A-Za-z_]\w*\s*(=~|!=|!~|=)\s*"(\\.|[^"\\])*"\s*,?)*', inner):
        raise SelectorError(f'--match {selector!r}: expected label matchers such as job="gpu"')
    return inner.rstrip(", ")


def queries(selector: str | None = None) -> dict[str, str]:
    """The three PromQL queries of one refresh (see the module docstring)."""
    m = matchers(selector)
    extra = f",{m}" if m else ""
    fields = sorted({*_DCGM_FIELDS, *_REASON_FIELDS, *_OTHER_DCGM})
    # "max by (the labels read here)": Prometheus drops the rest (job, device, a site's own
    # relabels), a quarter or more of the answer's bytes, before they cross the network.
    gpu = f'max by ({_GPU_LABELS}) ({{__name__=~"DCGM_FI_DEV_({"|".join(fields)})"{extra}}})'
    # Pseudo file systems are dropped by Prometheus itself: a series without fstype matches
    # fstype!~"..." (its value is ""), so the other gauges are kept.
    pseudo = "|".join(sorted(_PSEUDO_FS))  # "." in fuse.lxcfs matches itself too
    host = (
        f"max by ({_HOST_LABELS}) "
        f'({{__name__=~"{"|".join(_HOST_GAUGES)}",fstype!~"{pseudo}"{extra}}})'
    )
    parts = [
        "label_replace(sum by (instance, mode) "
        f"(irate(node_cpu_seconds_total{{{m}}}[{RATE_WINDOW}])),"
        ' "dltui", "cpu", "", "")',
        f'label_replace(count by (instance) (node_cpu_seconds_total{{mode="idle"{extra}}}),'
        ' "dltui", "cpus", "", "")',
    ]
    for tag, counter in _RATES:
        parts.append(
            f"label_replace(max by (instance, device) (irate({counter}{{{m}}}[{RATE_WINDOW}])),"
            f' "dltui", "{tag}", "", "")'
        )
    return {"gpu": gpu, "host": host, "rates": " or ".join(parts)}


class Client:
    """Instant queries over HTTP (stdlib urllib in a worker thread: the loop never waits)."""

    def __init__(self, url: str, timeout_s: float = QUERY_TIMEOUT_S):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.queries = 0

    async def query(self, promql: str) -> dict[str, Any]:
        self.queries += 1
        return await asyncio.to_thread(self._query, promql)

    def _query(self, promql: str) -> dict[str, Any]:
        data = urllib.parse.urlencode({"query": promql}).encode()
        # gzip: a 2,000-node answer is tens of MB of JSON, a few MB compressed
        request = urllib.request.Request(
            f"{self.url}/api/v1/query",
            data=data,
            method="POST",
            headers={"Accept-Encoding": "gzip"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                body = _decode(r.read(), r.headers.get("Content-Encoding"))
        except urllib.error.HTTPError as exc:  # a refused query: Prometheus says why in JSON
            try:
                body = _decode(exc.read(), exc.headers.get("Content-Encoding"))
            except (OSError, ValueError):
                raise PrometheusError(
                    f"Prometheus at {self.url} answered HTTP {exc.code}"
                ) from None
        except urllib.error.URLError as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise PrometheusError(f"Prometheus at {self.url}: {exc}") from None
        if body.get("status") != "success":
            raise PrometheusError(
                f"Prometheus at {self.url} refused a query: {body.get('error', body)}"
            )
        return body["data"]


def _decode(raw: bytes, encoding: str | None) -> dict[str, Any]:
    if encoding == "gzip":
        raw = gzip.decompress(raw)
    with gc_paused():
        body = json.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("not a Prometheus API answer")
    return body


def _host_of(instance: str) -> str:
    """``gpu01:9100`` -> ``gpu01``; ``[fe80::1]:9100`` -> ``fe80::1``."""
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def _num(value: str) -> float | None:
    v = float(value)
    return None if v != v else v  # NaN: Prometheus's "no value"


# DCGM's "blank" values (no data, not found, not supported, no permission) as dcgm-exporter
# prints them: the int64 ones from 0x7ffffffffffffff0 up, the float64 ones from 2**47 up.
_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
_FP64_BLANK = float(2**47)


def _dcgm(value: str) -> float | None:
    v = _num(value)
    if v is None or v >= _INT64_BLANK or _FP64_BLANK <= v <= _FP64_BLANK + 3:
        return None
    return v


@dataclass
class _Node:
    gauges: dict[str, float] = field(default_factory=dict)
    cpu_modes: dict[str, float] = field(default_factory=dict)
    cpus: int | None = None
    uname: dict[str, str] = field(default_factory=dict)
    os: str | None = None
    filesystems: dict[str, dict[str, Any]] = field(default_factory=dict)
    disks: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    nics: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    psi: dict[str, float] = field(default_factory=dict)
    gpus: dict[int, dict[str, Any]] = field(default_factory=dict)
    targets_up: dict[str, bool] = field(default_factory=dict)  # instance -> up


@dataclass
class Fleet:
    """One refresh's answers, mapped: per node its facts, sample and target health."""

    time: float
    nodes: dict[str, _Node]

    def facts(self, name: str) -> NodeFacts:
        n = self.nodes[name]
        gpus = [
            GpuFacts(
                index=i,
                name=g.get("model"),
                uuid=g.get("uuid"),
                bus_id=g.get("bus_id"),
                memory_total_mib=g.get("memory_total_mib"),
            )
            for i, g in sorted(n.gpus.items())
        ]
        driver = next((g["driver"] for g in n.gpus.values() if g.get("driver")), None)
        mem = n.gauges.get("node_memory_MemTotal_bytes")
        return NodeFacts(
            hostname=n.uname.get("nodename") or name,
            os=n.os,
            kernel=n.uname.get("release"),
            cpu_count=n.cpus,
            memory_total_bytes=int(mem) if mem is not None else None,
            boot_time=n.gauges.get("node_boot_time_seconds"),
            gpu_source="dcgm-exporter" if gpus else None,
            gpu_note=None if gpus else "no dcgm-exporter series in Prometheus for this node",
            driver_version=driver,
            gpus=gpus,
        )

    def sample(self, name: str) -> Sample:
        n = self.nodes[name]
        return Sample(
            time=self.time,
            cpu=_cpu(n),
            memory=_memory(n),
            pressure=_pressure(n),
            tasks=_tasks(n),
            disks=[
                DiskSample(
                    d,
                    read_bytes_per_s=v.get("disk_read"),
                    write_bytes_per_s=v.get("disk_written"),
                    busy_percent=_pct(v.get("disk_busy")),
                )
                for d, v in sorted(n.disks.items())
            ],
            filesystems=[_filesystem(mp, f) for mp, f in sorted(n.filesystems.items())],
            networks=[_network(nic, v) for nic, v in sorted(n.nics.items())],
            gpus=[_gpu(i, g) for i, g in sorted(n.gpus.items())],
        )

    def status(self, name: str) -> tuple[str, str | None]:
        ups = self.nodes[name].targets_up
        down = sorted(inst for inst, up in ups.items() if not up)
        if ups and len(down) == len(ups):
            return st.UNREACHABLE, f"Prometheus cannot scrape {', '.join(down)} (up == 0)"
        return st.OK, None

    def down_targets(self, name: str) -> list[str]:
        return sorted(inst for inst, up in self.nodes[name].targets_up.items() if not up)


def _pct(ratio: float | None) -> float | None:
    return None if ratio is None else 100.0 * ratio


def _cpu(n: _Node) -> CpuSample | None:
    modes = n.cpu_modes
    total = sum(modes.values())
    if not modes or total <= 0:
        load_only = [n.gauges.get(k) for k in ("node_load1", "node_load5", "node_load15")]
        return (
            CpuSample(load_1=load_only[0], load_5=load_only[1], load_15=load_only[2])
            if any(v is not None for v in load_only)
            else None
        )

    def share(*names: str) -> float:
        return 100.0 * sum(modes.get(x, 0.0) for x in names) / total

    return CpuSample(
        total_percent=100.0 - share("idle", "iowait"),
        user_percent=share("user", "nice"),
        system_percent=share("system", "irq", "softirq"),
        iowait_percent=share("iowait") if "iowait" in modes else None,
        steal_percent=share("steal") if "steal" in modes else None,
        load_1=n.gauges.get("node_load1"),
        load_5=n.gauges.get("node_load5"),
        load_15=n.gauges.get("node_load15"),
    )


def _int(v: float | None) -> int | None:
    return None if v is None else int(v)


def _memory(n: _Node) -> MemorySample | None:
    g = n.gauges
    total, avail = g.get("node_memory_MemTotal_bytes"), g.get("node_memory_MemAvailable_bytes")
    if total is None:
        return None
    swap_total, swap_free = (
        g.get("node_memory_SwapTotal_bytes"),
        g.get("node_memory_SwapFree_bytes"),
    )
    return MemorySample(
        total_bytes=_int(total),
        used_bytes=_int(total - avail) if avail is not None else None,
        available_bytes=_int(avail),
        cached_bytes=_int(g.get("node_memory_Cached_bytes")),
        buffers_bytes=_int(g.get("node_memory_Buffers_bytes")),
        shmem_bytes=_int(g.get("node_memory_Shmem_bytes")),
        swap_total_bytes=_int(swap_total),
        swap_used_bytes=_int(swap_total - swap_free)
        if swap_total is not None and swap_free is not None
        else None,
    )


def _pressure(n: _Node) -> PressureSample | None:
    if not n.psi:
        return None
    # Stall counters as a rate over the newest two scrapes: the closest node_exporter gives to
    # the kernel's avg10 (it exports no averages).
    p = {k: _pct(v) for k, v in n.psi.items()}
    return PressureSample(
        cpu_some_avg10_percent=p.get("psi_cpu_some"),
        io_some_avg10_percent=p.get("psi_io_some"),
        io_full_avg10_percent=p.get("psi_io_full"),
        memory_some_avg10_percent=p.get("psi_memory_some"),
        memory_full_avg10_percent=p.get("psi_memory_full"),
    )


def _tasks(n: _Node) -> TaskSample | None:
    running, blocked = n.gauges.get("node_procs_running"), n.gauges.get("node_procs_blocked")
    if running is None and blocked is None:
        return None
    return TaskSample(running=_int(running), blocked_io=_int(blocked))


def _filesystem(mountpoint: str, f: dict[str, Any]) -> FilesystemSample:
    size, free, avail = f.get("size"), f.get("free"), f.get("avail")
    used = size - free if size is not None and free is not None else None
    used_pct = (
        100.0 * used / (used + avail)
        if used is not None and avail is not None and used + avail > 0
        else None
    )
    return FilesystemSample(
        mountpoint,
        device=f.get("device"),
        fstype=f.get("fstype"),
        total_bytes=_int(size),
        used_bytes=_int(used),
        available_bytes=_int(avail),
        used_percent=used_pct,
    )


def _network(nic: str, v: dict[str, float]) -> NetworkSample:
    return NetworkSample(
        nic,
        rx_bytes_per_s=v.get("net_rx"),
        tx_bytes_per_s=v.get("net_tx"),
        rx_errors_total=_int(v.get("node_network_receive_errs_total")),
        tx_errors_total=_int(v.get("node_network_transmit_errs_total")),
        rx_drops_total=_int(v.get("node_network_receive_drop_total")),
        tx_drops_total=_int(v.get("node_network_transmit_drop_total")),
    )


def _gpu(index: int, g: dict[str, Any]) -> GpuSample:
    values: dict[str, Any] = {}
    for name in _DCGM_FIELDS.values():
        v = g.get(name)
        if v is not None:
            values[name] = bool(v) if name in _BOOL_FIELDS else int(v) if name in _INT_FIELDS else v
    mask = g.get("reasons")
    mask = int(mask) if mask is not None else None
    return GpuSample(
        index=index,
        uuid=g.get("uuid"),
        name=g.get("model"),
        memory_total_mib=g.get("memory_total_mib"),
        clock_event_reasons_mask=mask,
        clock_event_reasons=decode_clock_event_reasons(mask),
        **values,
    )


def build(answers: dict[str, dict[str, Any]], now: float | None = None) -> Fleet:
    """Map the three answers (``Client.query`` results by query name) into nodes."""
    nodes: dict[str, _Node] = defaultdict(_Node)
    inst_node: dict[str, str] = {}
    host = answers["host"]["result"]
    for s in host:  # node_exporter's own name for the host first: the join key
        m = s["metric"]
        if m.get("__name__") == "node_uname_info" and m.get("nodename"):
            inst_node[m.get("instance", "")] = m["nodename"]
    stamp = now
    for s in answers["gpu"]["result"]:
        m = s["metric"]
        if "GPU_I_ID" in m:  # a MIG instance: the whole GPU's series carry the GPU's values
            continue
        try:
            index = int(m.get("gpu", ""))
        except ValueError:
            continue
        name = m.get("Hostname") or m.get("hostname") or inst_node.get(m.get("instance", ""))
        name = name or _host_of(m.get("instance", "unknown"))
        inst_node.setdefault(m.get("instance", ""), name)
        g = nodes[name].gpus.setdefault(index, {})
        for label, key in (
            ("UUID", "uuid"),
            ("modelName", "model"),
            ("pci_bus_id", "bus_id"),
            ("DCGM_FI_DRIVER_VERSION", "driver"),
        ):
            if m.get(label):
                g[key] = m[label]
        field_name = m["__name__"][len("DCGM_FI_DEV_") :]
        stamp = stamp or float(s["value"][0])
        v = _dcgm(s["value"][1])
        if field_name in _REASON_FIELDS:
            if v is not None and (field_name == "CLOCKS_EVENT_REASONS" or "reasons" not in g):
                g["reasons"] = v
        elif field_name in _DCGM_FIELDS:
            g[_DCGM_FIELDS[field_name]] = v
        else:
            g[field_name] = v
    for s in host:
        m, metric = s["metric"], s["metric"].get("__name__", "")
        inst = m.get("instance", "")
        name = inst_node.get(inst) or _host_of(inst)
        stamp = stamp or float(s["value"][0])
        v = _num(s["value"][1])
        n = nodes[name]
        if metric == "up":
            n.targets_up[inst] = v == 1
        elif metric == "node_uname_info":
            n.uname = {k: m[k] for k in ("nodename", "release") if k in m}
        elif metric == "node_os_info":
            n.os = m.get("pretty_name") or m.get("name")
        elif metric.startswith("node_filesystem_"):
            if m.get("fstype") in _PSEUDO_FS or "mountpoint" not in m:
                continue
            f = n.filesystems.setdefault(
                m["mountpoint"], {"device": m.get("device"), "fstype": m.get("fstype")}
            )
            f[metric[len("node_filesystem_") : -len("_bytes")]] = v
        elif metric.startswith("node_network_") and "device" in m and v is not None:
            n.nics[m["device"]][metric] = v
        elif v is not None:
            n.gauges[metric] = v
    for s in answers["rates"]["result"]:
        m = s["metric"]
        inst = m.get("instance", "")
        n = nodes[inst_node.get(inst) or _host_of(inst)]
        tag, v = m.get("dltui"), _num(s["value"][1])
        if v is None:
            continue
        if tag == "cpu":
            n.cpu_modes[m.get("mode", "?")] = v
        elif tag == "cpus":
            n.cpus = int(v)
        elif tag and tag.startswith("disk_") and "device" in m:
            n.disks[m["device"]][tag] = v
        elif tag and tag.startswith("net_") and "device" in m:
            n.nics[m["device"]][tag] = v
        elif tag and tag.startswith("psi_"):
            n.psi[tag] = v
    for n in nodes.values():
        for g in n.gpus.values():
            used, free = g.get("memory_used_mib"), g.get("FB_FREE")
            total = g.get("FB_TOTAL")
            if total is None and used is not None and free is not None:
                total = used + free + (g.get("FB_RESERVED") or 0.0)
            g["memory_total_mib"] = total
    return Fleet(stamp or time.time(), dict(nodes))


def _build_paused(answers: dict[str, dict[str, Any]]) -> Fleet:
    with gc_paused():
        return build(answers)


DELIVER_BATCH = 100  # nodes delivered between two turns of the event loop


def natural_key(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


SOURCE_NOTE = (
    "Prometheus source: GPU utilisation arrives once per refresh ({every}), not sub-second: "
    "loader_starvation judges that coarser signal, and dips shorter than it can alias away"
)


class PrometheusTransport:
    """Reads the fleet from Prometheus every ``interval_s``; nodes appear as their series do."""

    def __init__(
        self,
        url: str,
        selector: str | None = None,
        interval_s: float = 5.0,
        client: Client | None = None,
    ):
        self.client = client or Client(url)
        self.queries = queries(selector)  # a bad --match fails here, before anything starts
        self.selector = selector
        self.interval_s = interval_s
        self.names: list[str] = []
        self._known: set[str] = set()
        self._facts: dict[str, NodeFacts] = {}
        self._down: dict[str, list[str]] = {}
        self._xid: dict[tuple[str, int], float | None] = {}
        self.refreshes = 0

    async def refresh(self) -> Fleet:
        """The three queries at once, mapped in a worker thread (0.5 s at 2,000 nodes)."""
        keys = list(self.queries)
        answers = await asyncio.gather(*(self.client.query(self.queries[k]) for k in keys))
        self.refreshes += 1
        return await asyncio.to_thread(_build_paused, dict(zip(keys, answers, strict=True)))

    async def run(self, sink: Sink) -> None:
        while True:
            started = time.monotonic()
            try:
                fleet = await self.refresh()
            except PrometheusError as exc:
                self._unreachable(sink, str(exc))
            else:
                await self.deliver_in_batches(fleet, sink)
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))

    async def deliver_in_batches(self, fleet: Fleet, sink: Sink) -> None:
        """Into the sink on the loop (the state is not thread-safe), a batch of nodes at a
        time so the screen keeps drawing while thousands of nodes arrive."""
        names = sorted(fleet.nodes, key=natural_key)
        if not names:
            self.deliver(fleet, sink)
        for i in range(0, len(names), DELIVER_BATCH):
            with gc_paused():
                self.deliver(fleet, sink, names[i : i + DELIVER_BATCH])
            await asyncio.sleep(0)

    def deliver(self, fleet: Fleet, sink: Sink, names: list[str] | None = None) -> None:
        if not fleet.nodes:
            self._unreachable(
                sink, f"no node_exporter or dcgm-exporter series match {self.selector or 'any job'}"
            )
            return
        for name in sorted(fleet.nodes, key=natural_key) if names is None else names:
            if name not in self._known:
                self._known.add(name)
                self.names.append(name)
            status, reason = fleet.status(name)
            sink.on_status(name, status, reason)
            if status != st.OK:
                continue
            facts = fleet.facts(name)
            if self._facts.get(name) != facts:
                first = name not in self._facts
                self._facts[name] = facts
                sink.on_hello(name, facts, self.interval_s)
                if first and facts.gpus:
                    every = f"one reading every {self.interval_s:g} s"
                    sink.on_event(
                        name, NodeEvent(fleet.time, "source-note", SOURCE_NOTE.format(every=every))
                    )
            self._targets(sink, name, fleet)
            sink.on_sample(name, fleet.sample(name))
            self._xids(sink, name, fleet)

    def _targets(self, sink: Sink, name: str, fleet: Fleet) -> None:
        down = fleet.down_targets(name)
        for inst in down:
            if inst not in self._down.get(name, ()):
                sink.on_event(
                    name,
                    NodeEvent(
                        fleet.time,
                        "target-down",
                        f"Prometheus cannot scrape {inst} (up == 0)",
                        severity="warning",
                    ),
                )
        self._down[name] = down

    def _xids(self, sink: Sink, name: str, fleet: Fleet) -> None:
        """dcgm-exporter's XID gauge holds the last XID a GPU raised: a new value is an XID."""
        for index, g in fleet.nodes[name].gpus.items():
            code = g.get("XID_ERRORS")
            key = (name, index)
            if code and code != self._xid.get(key):
                sink.on_event(
                    name,
                    NodeEvent(
                        fleet.time,
                        "xid",
                        f"XID {int(code)} (dcgm-exporter)",
                        gpu=index,
                        severity="warning",
                        data={"xid": int(code)},
                    ),
                )
            self._xid[key] = code

    def _unreachable(self, sink: Sink, reason: str) -> None:
        targets = self.names or [urllib.parse.urlsplit(self.client.url).netloc or self.client.url]
        for name in targets:
            sink.on_status(name, st.UNREACHABLE, reason)


def add_arguments(parser: Any) -> None:
    """``--prometheus URL`` and ``--match SELECTOR`` on a subcommand's parser."""
    group = parser.add_argument_group("reading nodes from Prometheus instead of SSH")
    group.add_argument(
        "--prometheus",
        metavar="URL",
        help="build the fleet from this Prometheus (node_exporter + dcgm-exporter series)",
    )
    group.add_argument(
        "--match",
        metavar="SELECTOR",
        help="only series matching these label matchers, e.g. '{job=~\"gpu.*\"}'",
    )


DEFAULT_REFRESH_S = 5.0  # without --interval: Prometheus scrapes every 15-60 s at most sites


def from_args(
    hosts: list[str], url: str | None, selector: str | None, interval_s: float | None
) -> list[PrometheusTransport]:
    """The transports for ``--prometheus`` (``interval_s`` None: the default refresh);
    ``SelectorError`` for a usage mistake."""
    if url is None:
        raise SelectorError("--match needs --prometheus URL")
    if hosts:
        raise SelectorError(
            "give nodes as HOST or --prometheus URL, not both (--match selects nodes there)"
        )
    if not urllib.parse.urlsplit(url).scheme:
        url = "http://" + url
    return [PrometheusTransport(url, selector, interval_s or DEFAULT_REFRESH_S)]
