"""The three answers mapped into nodes: facts, a ``Sample`` and target health for each, joined
on the host name; ``None`` wherever Prometheus holds no series (or DCGM says "blank")."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from dltui.core import status as st
from dltui.core.models import (
    CpuSample,
    DiskSample,
    DriveSample,
    FilesystemSample,
    GpuFacts,
    GpuSample,
    MemorySample,
    NetworkSample,
    NodeFacts,
    PressureSample,
    Sample,
    TaskSample,
)
from dltui.node.schema import decode_clock_event_reasons

from . import fabric
from .queries import (
    AMD_FIELDS,
    AMD_PREFIX,
    DCGM_FIELDS,
    GAUDI_FIELDS,
    GAUDI_PREFIX,
    GPU_FACTS_QUERY,
    HOST_GAUGES,
    PSEUDO_FS,
    REASON_FIELDS,
)

# Counters and flags become ints and bools, as the probe's records have them.
_INT_FIELDS = {f.name for f in fields(GpuSample) if f.type == "int | None"}
_BOOL_FIELDS = {f.name for f in fields(GpuSample) if f.type == "bool | None"}
_SAMPLE_KEYS = (
    frozenset(DCGM_FIELDS.values())
    | frozenset(AMD_FIELDS.values())
    | frozenset(f for f, _ in GAUDI_FIELDS.values())
) - {"FB_TOTAL"}
_REASONS: Any = object()
# DCGM field (after DCGM_FI_DEV_) -> (GpuSample field, conversion): looked up once a reading.
_GPU_FIELD: dict[str, tuple[str, Any]] = {
    **{
        dcgm: (name, bool if name in _BOOL_FIELDS else int if name in _INT_FIELDS else None)
        for dcgm, name in DCGM_FIELDS.items()
    },
    **{dcgm: ("reasons", _REASONS) for dcgm in REASON_FIELDS},
}


def host_of(instance: str) -> str:
    """``gpu01:9100`` -> ``gpu01``; ``[fe80::1]:9100`` -> ``fe80::1``."""
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def node_of(
    hostname: str | None,
    instance: str,
    inst_node: Mapping[str, str],
    host_nodes: Mapping[str, str] | None = None,
) -> str:
    """The node a series is of, by the source's one rule: dcgm-exporter's ``Hostname`` (or
    ``hostname``), else node_exporter's ``nodename`` for the instance (``inst_node``), else that
    of another exporter on the same host (``host_nodes``: host part -> node), else the host
    part of ``instance``. The history fetch (dltui.history) finds a node's series by it too."""
    if hostname:
        return hostname
    named = inst_node.get(instance)
    if named:
        return named
    host = host_of(instance or "unknown")
    return (host_nodes.get(host) if host_nodes else None) or host


# What build does with each host gauge (any other: a plain gauge by its name).
_HOST_KIND = {
    "up": "up",
    "node_uname_info": "uname",
    "node_os_info": "os",
    **{m: "fs" for m in HOST_GAUGES if m.startswith("node_filesystem_")},
    **{m: "nic" for m in HOST_GAUGES if m.startswith("node_network_")},
    **{m: "ib" for m in fabric.IB_GAUGES},
}


# DCGM's "blank" values (no data, not found, not supported, no permission) as dcgm-exporter
# prints them: the int64 ones from 0x7ffffffffffffff0 up, the float64 ones from 2**47 up
# (checked inline in build: a function call per reading is a tenth of its cost).
_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
_FP64_BLANK = float(2**47)


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
    ib_ports: fabric.Ports = field(default_factory=dict)
    hca_types: dict[str, str] = field(default_factory=dict)  # HCA device -> node_infiniband_info's hca_type


@dataclass
class Targets:
    """What earlier refreshes showed of the scrape targets, kept by the transport: the jobs
    that serve nodes (node_exporter, dcgm-exporter) and each of their targets' node. A node
    is a host with node_exporter or DCGM series; Prometheus itself, an exporter of other
    things (``dltui export``, a blackbox prober, Grafana) is not. With this, a node's target
    that went down (its series gone, its ``up`` 0) marks that node unreachable, instead of
    the node vanishing or its address becoming a node of its own; a target of a node job
    down from the start is a node too."""

    jobs: set[str] = field(default_factory=set)
    nodes: dict[str, str] = field(default_factory=dict)  # instance -> node name


# A GPU as the answers name it: (Hostname or hostname, instance, gpu label).
GpuKey = tuple[str | None, str, str | None]
# What the facts query tells of a GPU: uuid, model, bus_id, driver (those it has).
GpuFactLabels = dict[str, str]
_FACT_LABELS = (
    ("UUID", "uuid"),
    ("modelName", "model"),
    ("pci_bus_id", "bus_id"),
    ("DCGM_FI_DRIVER_VERSION", "driver"),
    # AMD's device-metrics-exporter (card_series names the model; card_model may be an id)
    ("gpu_uuid", "uuid"),
    ("card_model", "model"),
    ("card_series", "model"),
    ("driver_version", "driver"),
    ("driver", "driver"),  # Intel Gaudi's metric exporter (UUID as DCGM's)
)


def gpu_facts(answer: dict[str, Any]) -> dict[GpuKey, GpuFactLabels]:
    """The facts query's answer (one series per GPU) by GPU."""
    out: dict[GpuKey, GpuFactLabels] = {}
    for s in answer["result"]:
        m = s["metric"]
        if "GPU_I_ID" in m:
            continue
        key = (m.get("Hostname") or m.get("hostname"), m.get("instance", ""), m.get("gpu"))
        out[key] = {k: m[label] for label, k in _FACT_LABELS if m.get(label)}
    return out


@dataclass
class Fleet:
    """One refresh's answers, mapped: per node its facts, sample and target health."""

    time: float
    nodes: dict[str, _Node]
    # Each GPU's readings by its key in the answers (the same dicts as in ``nodes``).
    gpu_keys: dict[GpuKey, dict[str, Any]] = field(default_factory=dict)
    host_nodes: dict[str, str] = field(default_factory=dict)  # host part of an instance -> node
    drives: dict[str, list[DriveSample]] = field(default_factory=dict)  # by node
    _prepared: dict[str, tuple[NodeFacts, Sample]] = field(default_factory=dict)

    def set_drives(self, by_host: dict[str, list[DriveSample]]) -> None:
        """smartctl_exporter's drives (``smartctl.drives_by_host``) onto the nodes they are on."""
        self.drives = {self.host_nodes.get(host, host): d for host, d in by_host.items()}

    def unknown_gpus(self, known: dict[GpuKey, GpuFactLabels]) -> list[GpuKey]:
        """GPUs of this refresh that the facts in ``known`` do not cover (new ones)."""
        return [k for k in self.gpu_keys if k not in known]

    def apply_facts(self, known: dict[GpuKey, GpuFactLabels]) -> None:
        for key, g in self.gpu_keys.items():
            g.update(known.get(key, ()))

    def prepare(self) -> None:
        """Build every node's facts and sample now (in the mapping's worker thread), so that
        delivering them on the event loop is only handing them over."""
        for name in self.nodes:
            self._prepared[name] = (self._facts(name), self._sample(name))

    def facts(self, name: str) -> NodeFacts:
        ready = self._prepared.get(name)
        return ready[0] if ready is not None else self._facts(name)

    def sample(self, name: str) -> Sample:
        ready = self._prepared.get(name)
        return ready[1] if ready is not None else self._sample(name)

    def _facts(self, name: str) -> NodeFacts:
        n = self.nodes[name]
        gpus = [
            GpuFacts(
                index=i,
                vendor=g.get("vendor", "nvidia"),
                name=g.get("model"),
                uuid=g.get("uuid"),
                bus_id=g.get("bus_id"),
                memory_total_mib=g.get("memory_total_mib"),
                # amdgpu / habanalabs are told per GPU (vendors.driver_words), NVIDIA's per node
                driver_version=g.get("driver") if g.get("vendor", "nvidia") != "nvidia" else None,
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
            gpu_source=_exporters(n.gpus) if gpus else None,
            gpu_note=None if gpus else _NO_GPU_SERIES,
            driver_version=driver,
            gpus=gpus,
        )

    def _sample(self, name: str) -> Sample:
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
            ib_ports=fabric.ib_ports(n.ib_ports, n.hca_types),
            gpus=[_gpu(i, g) for i, g in sorted(n.gpus.items())],
            nvlinks=[x for i, g in sorted(n.gpus.items()) if (x := fabric.nvlink(i, g)) is not None],
            drives=self.drives.get(name, []),
        )

    def status(self, name: str) -> tuple[st.Status, str | None]:
        ups = self.nodes[name].targets_up
        down = sorted(inst for inst, up in ups.items() if not up)
        if ups and len(down) == len(ups):
            return st.UNREACHABLE, f"Prometheus cannot scrape {', '.join(down)} (up == 0)"
        return st.OK, None

    def down_targets(self, name: str) -> list[str]:
        return sorted(inst for inst, up in self.nodes[name].targets_up.items() if not up)


_NO_GPU_SERIES = (
    "no dcgm-exporter, device-metrics-exporter or Gaudi metric exporter series in Prometheus for this node"
)


def _exporters(gpus: dict[int, dict[str, Any]]) -> str:
    """"dcgm-exporter", "device-metrics-exporter" (AMD's), "gaudi-metric-exporter" (Intel
    Gaudi's), or those there joined by "+"."""
    vendors = {g.get("vendor", "nvidia") for g in gpus.values()}
    exporters = (("nvidia", "dcgm-exporter"), ("amd", "device-metrics-exporter"), ("intel", "gaudi-metric-exporter"))
    names = [name for key, name in exporters if key in vendors]
    return "+".join(names)


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
    # g holds the readings already under GpuSample's names, converted (see build)
    values = {k: g[k] for k in _SAMPLE_KEYS.intersection(g)}
    mask = g.get("reasons")
    mask = int(mask) if mask is not None else None
    return GpuSample(
        index=index,
        vendor=g.get("vendor", "nvidia"),
        uuid=g.get("uuid"),
        name=g.get("model"),
        memory_total_mib=g.get("memory_total_mib"),
        clock_event_reasons_mask=mask,
        clock_event_reasons=decode_clock_event_reasons(mask),
        **values,
    )


def build(
    answers: dict[str, dict[str, Any]],
    now: float | None = None,
    facts: dict[GpuKey, GpuFactLabels] | None = None,
    targets: Targets | None = None,
) -> Fleet:
    """Map the answers (``Client.query`` results by query name) into nodes. The GPUs' facts
    come from the facts query's answer when it is among them, else from ``facts`` (an earlier
    one's, see ``gpu_facts``). ``targets`` (updated here) is what earlier refreshes showed of
    the scrape targets (see ``Targets``)."""
    nodes: dict[str, _Node] = defaultdict(_Node)
    # node_exporter's own name for the host first (the join key), else the one it had: a dead
    # target's rates linger a scrape or two after its other series
    inst_node: dict[str, str] = dict(targets.nodes) if targets is not None else {}
    host = answers["host"]["result"]
    for s in host:
        m = s["metric"]
        if m.get("__name__") == "node_uname_info" and m.get("nodename"):
            inst_node[m.get("instance", "")] = m["nodename"]
    # An exporter beside node_exporter on its host (smartctl_exporter on :9633) joins its node.
    host_nodes = {host_of(inst): name for inst, name in inst_node.items()}
    stamp = now
    by_key: dict[GpuKey, dict[str, Any] | None] = {}  # None: not a GPU (no index)
    known = gpu_facts(answers[GPU_FACTS_QUERY]) if GPU_FACTS_QUERY in answers else facts or {}
    for s in answers["gpu"]["result"]:
        m = s["metric"]
        if "GPU_I_ID" in m:  # a MIG instance: the whole GPU's series carry the GPU's values
            continue
        inst = m.get("instance", "")
        key = (m.get("Hostname") or m.get("hostname"), inst, m.get("gpu"))
        g = by_key.get(key, _NEW)
        if g is _NEW:  # the first series of this GPU: find its node once
            g = by_key[key] = _new_gpu(key, nodes, inst_node, known, host_nodes)
        if g is None:
            continue
        value = s["value"]
        stamp = stamp or float(value[0])
        x = float(value[1])
        # NaN or DCGM's "blank": n/a
        v = None if x != x or x >= _INT64_BLANK or _FP64_BLANK <= x <= _FP64_BLANK + 3 else x
        metric_name = m["__name__"]
        amd_field = AMD_FIELDS.get(metric_name.removeprefix(AMD_PREFIX))
        if amd_field is not None:  # AMD's device-metrics-exporter
            _amd_reading(g, amd_field, v)
            continue
        if metric_name.startswith(GAUDI_PREFIX):  # Intel Gaudi's metric exporter
            _gaudi_reading(g, GAUDI_FIELDS.get(metric_name[len(GAUDI_PREFIX):]), v)
            continue
        field_name = metric_name[12:]  # after "DCGM_FI_DEV_"
        kind = _GPU_FIELD.get(field_name)
        if kind is None:
            g[field_name] = v  # FB_FREE, XID_ERRORS...: read by build and the transport
        elif kind[1] is _REASONS:
            if v is not None and (field_name == "CLOCKS_EVENT_REASONS" or "reasons" not in g):
                g["reasons"] = v
        else:
            g[kind[0]] = v if v is None or kind[1] is None else kind[1](v)
    by_inst: dict[str, _Node] = {}  # each instance's node, found once

    def node_of(inst: str) -> _Node:
        name = inst_node.get(inst) or host_nodes.get(host_of(inst)) or host_of(inst)
        inst_node.setdefault(inst, name)
        n = by_inst[inst] = nodes[name]
        return n

    ups: list[tuple[str, str, bool]] = []  # (instance, job, up): judged once the nodes are known
    for s in host:
        m = s["metric"]
        metric, inst = m.get("__name__", ""), m.get("instance", "")
        if metric == "up":  # every target has one: not, by itself, a node
            ups.append((inst, m.get("job", ""), float(s["value"][1]) == 1))
            stamp = stamp or float(s["value"][0])
            continue
        n = by_inst.get(inst) or node_of(inst)
        value = s["value"]
        stamp = stamp or float(value[0])
        x = float(value[1])
        v = None if x != x else x  # NaN: Prometheus's "no value"
        what = _HOST_KIND.get(metric)
        if what is None:
            if v is not None:
                n.gauges[metric] = v
        elif what == "fs":
            if m.get("fstype") in PSEUDO_FS or "mountpoint" not in m:
                continue
            f = n.filesystems.get(m["mountpoint"])
            if f is None:
                f = n.filesystems[m["mountpoint"]] = {
                    "device": m.get("device"),
                    "fstype": m.get("fstype"),
                }
            f[metric[16:-6]] = v  # node_filesystem_(size)_bytes
        elif what == "nic":
            if "device" in m and v is not None:
                n.nics[m["device"]][metric] = v
        elif what == "ib":
            fabric.add_gauge(n.ib_ports, n.hca_types, metric, m, v)
        elif what == "uname":
            n.uname = {k: m[k] for k in ("nodename", "release") if k in m}
        else:  # os
            n.os = m.get("pretty_name") or m.get("name")
    for s in answers["rates"]["result"]:
        m = s["metric"]
        x = float(s["value"][1])
        if x != x:
            continue
        inst = m.get("instance", "")
        n = by_inst.get(inst) or node_of(inst)
        tag = m.get("dltui") or ""
        group = tag[:4]
        if tag == "cpu":
            n.cpu_modes[m.get("mode", "?")] = x
        elif tag == "cpus":
            n.cpus = int(x)
        elif group == "disk" and "device" in m:
            n.disks[m["device"]][tag] = x
        elif group == "net_" and "device" in m:
            n.nics[m["device"]][tag] = x
        elif group == "psi_":
            n.psi[tag] = x
        elif group == "ib_r" or group == "ib_t":
            fabric.add_rate(n.ib_ports, tag, m, x)
    _node_targets(nodes, ups, inst_node, targets)
    gpus = {}
    for key, g in by_key.items():
        if g is None:
            continue
        gpus[key] = g
        used, free = g.get("memory_used_mib"), g.get("FB_FREE")
        total = g.get("FB_TOTAL")
        if total is None and used is not None and free is not None:
            total = used + free + (g.get("FB_RESERVED") or 0.0)
        g["memory_total_mib"] = total
    return Fleet(stamp or time.time(), dict(nodes), gpus, host_nodes)


def _amd_reading(g: dict[str, Any], field: str, v: float | None) -> None:
    """One device-metrics-exporter series into its GPU, under the name AMD_FIELDS gives it:
    the two XGMI RAS counts summed, the GPU marked as AMD's."""
    g["vendor"] = "amd"
    if field == "xgmi_errors_total":
        if v is not None:
            g[field] = int(v) + (g.get(field) or 0)
        return
    g[field] = int(v) if v is not None and field in _INT_FIELDS else v


def _gaudi_reading(g: dict[str, Any], what: tuple[str, float] | None, v: float | None) -> None:
    """One Gaudi metric exporter series into its AIP, scaled to dltui's unit (GAUDI_FIELDS),
    the AIP marked as Intel's."""
    g["vendor"] = "intel"
    if what is None:
        return
    field, scale = what
    x = None if v is None else v * scale
    g[field] = int(x) if x is not None and field in _INT_FIELDS else x


def _node_targets(
    nodes: dict[str, _Node],
    ups: list[tuple[str, str, bool]],
    served: dict[str, str],
    targets: Targets | None,
) -> None:
    """Each node's targets and whether Prometheus scrapes them (``up``): those whose instance
    served node series now (``served``: instance -> node), or did in an earlier refresh, or
    belong to a job that serves nodes. Any other target is not a node's (see ``Targets``)."""
    seen = targets if targets is not None else Targets()
    for inst, job, _ in ups:
        if inst in served:
            seen.jobs.add(job)
            seen.nodes[inst] = served[inst]
    for inst, job, up in ups:
        name = seen.nodes.get(inst) or (host_of(inst) if job in seen.jobs else None)
        if name is not None:
            nodes[name].targets_up[inst] = up


_NEW: Any = object()


def _new_gpu(
    key: GpuKey,
    nodes: dict[str, _Node],
    inst_node: dict[str, str],
    known: dict[GpuKey, GpuFactLabels],
    host_nodes: Mapping[str, str],
) -> dict[str, Any] | None:
    host, inst, label = key
    try:
        index = int(label or "")
    except ValueError:
        return None
    # An exporter without a hostname label (Gaudi's) joins node_exporter's node on its host.
    name = node_of(host, inst, inst_node, host_nodes)
    inst_node.setdefault(inst, name)
    g = nodes[name].gpus.setdefault(index, {})
    g.update(known.get(key, ()))
    return g
