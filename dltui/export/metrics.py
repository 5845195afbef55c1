"""Fleet state as Prometheus text exposition (format 0.0.4).

Names follow Prometheus conventions: a ``dltui_`` prefix, base units in the name (``_bytes``,
``_celsius``, ``_watts``, ``_hertz``, ``_ratio`` for 0–1), ``_total`` on counters, facts as
``_info`` gauges of value 1. GPU series carry ``node``, ``gpu``, ``uuid`` and ``model``; no
label ever holds a PID (each value is a new series that lingers after the process exits).
A value the node does not report (``None``) is an absent series, never a 0.

Pure Python, no Textual, no I/O: ``render(fleet)`` returns the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from dltui.core import gpu_fields
from dltui.core import status as st
from dltui.core.attribution import gpu_holders
from dltui.core.models import GpuSample, NodeFacts, Sample
from dltui.core.scheduler import view_states
from dltui.core.state import FleetState, NodeState
from dltui.core.vendors import vendor

from .drive_metrics import drive_families, stack_families
from .fabric import render as fabric
from .page import MHZ, MIB, PERCENT, US, Labels, Page, labels

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# (name, type, help, getter, scale): one GPU series per exported row of the field table, in
# its order; the value scaled from the field's unit to the name's base unit.
GpuGetter = Callable[[GpuSample], Any]
_SCALE = {"%": PERCENT, "MiB": MIB, "MHz": MHZ}
_GPU: tuple[tuple[str, str, str, GpuGetter, float], ...] = tuple(
    (f.export.name, f.export.type, f.export.help, attrgetter(f.attr), _SCALE.get(f.unit, 1.0))
    for f in gpu_fields.EXPORTED
    if f.export is not None
)

_ECC = (
    ("corrected", "volatile", lambda g: g.ecc_corrected_volatile),
    ("uncorrected", "volatile", lambda g: g.ecc_uncorrected_volatile),
    ("corrected", "aggregate", lambda g: g.ecc_corrected_aggregate),
    ("uncorrected", "aggregate", lambda g: g.ecc_uncorrected_aggregate),
)
_CLOCK_EVENT_TIME = (
    ("sw_power_cap", lambda g: g.clock_event_sw_power_cap_us),
    ("sync_boost", lambda g: g.clock_event_sync_boost_us),
    ("sw_thermal_slowdown", lambda g: g.clock_event_sw_thermal_us),
    ("hw_thermal_slowdown", lambda g: g.clock_event_hw_thermal_us),
    ("hw_power_brake_slowdown", lambda g: g.clock_event_hw_power_brake_us),
)


def render(fleet: FleetState) -> str:
    page = Page()
    for node in fleet:
        _node(page, node)
    return page.text()


def _node(page: Page, node: NodeState) -> None:
    n = labels(("node", node.name))
    up = page.family("dltui_node_up", "gauge", "1 when dltui has live data from the node.")
    up.add(n, node.status == st.OK and node.sample is not None)
    page.family("dltui_node_status", "gauge", "The node's connection status word (value 1).").add(
        n + (("status", node.status),), 1
    )
    if node.facts is not None:
        _facts(page, n, node.facts)
        if node.facts.stack is not None:
            stack_families(page, n, node.facts.stack)
    if node.sample is not None:
        page.family(
            "dltui_node_last_sample_timestamp_seconds",
            "gauge",
            "When the newest sample was taken (node clock, seconds since the epoch).",
        ).add(n, node.sample.time)
        _host(page, n, node.sample)
        _gpus(page, node, node.sample)
        _units(page, n, node.sample)
        _gpu_jobs(page, node, node.sample)
        fabric(page, n, node.sample, {g.index: _gpu_labels(node, g) for g in node.sample.gpus})
        drive_families(page, n, node.sample.drives)
    _scheduler(page, n, node)
    _alerts(page, node)


def _scheduler(page: Page, n: Labels, node: NodeState) -> None:
    """``dltui_node_scheduler_info``: the node's state as Slurm / Kubernetes has it, one series
    per scheduler. Its labels take a bounded set of words; the reason (free text, each new one
    a new series) is never a label: it is in the snapshot and the dashboard."""
    family = page.family(
        "dltui_node_scheduler_info",
        "gauge",
        "The node's state in its scheduler (value 1): slurm idle/alloc/mix/drain/draining/down/…, "
        "kubernetes ready/notready/unknown/cordoned.",
    )
    for scheduler, state in view_states(node.scheduler):
        family.add(n + (("scheduler", scheduler), ("state", state)), 1)


def _facts(page: Page, n: Labels, f: NodeFacts) -> None:
    info = page.family("dltui_node_info", "gauge", "Facts about the node (value 1).")
    info.add(
        n
        + labels(
            ("hostname", f.hostname),
            ("os", f.os),
            ("kernel", f.kernel),
            ("cpu_model", f.cpu_model),
            ("driver_version", f.driver_version),
            ("cuda_version", f.cuda_version),
            ("gpu_source", f.gpu_source),
            ("probe_version", f.probe_version),
        ),
        1,
    )
    page.family("dltui_node_cpus", "gauge", "Logical CPUs.").add(n, f.cpu_count)
    page.family(
        "dltui_node_boot_time_seconds", "gauge", "When the node booted (seconds since the epoch)."
    ).add(n, f.boot_time)
    gpu_info = page.family(
        "dltui_gpu_info", "gauge", "Facts about a GPU (value 1); vendor: nvidia, amd or intel (Gaudi)."
    )
    for g in f.gpus:
        gpu_info.add(
            n
            + (("gpu", str(g.index)),)
            + labels(
                ("uuid", g.uuid),
                ("model", g.name),
                ("vendor", vendor(g.vendor).key),  # join on node and gpu, as for the jobs
                ("bus_id", g.bus_id),
                ("vbios_version", g.vbios_version),
                ("serial", g.serial),
                ("driver_version", g.driver_version),  # per GPU: amdgpu, habanalabs
                ("firmware_version", g.firmware_version),
            ),
            1,
        )


def _host(page: Page, n: Labels, s: Sample) -> None:
    if s.cpu is not None:
        c = s.cpu
        cpu = page.family(
            "dltui_cpu_utilization_ratio", "gauge", "CPU time share by mode over the last period."
        )
        for mode, value in (
            ("total", c.total_percent),
            ("user", c.user_percent),
            ("system", c.system_percent),
            ("iowait", c.iowait_percent),
            ("steal", c.steal_percent),
        ):
            cpu.add(n + (("mode", mode),), value, PERCENT)
        load = page.family("dltui_load_average", "gauge", "Run-queue load average.")
        for period, value in (("1m", c.load_1), ("5m", c.load_5), ("15m", c.load_15)):
            load.add(n + (("period", period),), value)
    if s.memory is not None:
        m = s.memory
        for name, value in (
            ("total", m.total_bytes),
            ("used", m.used_bytes),
            ("available", m.available_bytes),
            ("cached", m.cached_bytes),
            ("swap_total", m.swap_total_bytes),
            ("swap_used", m.swap_used_bytes),
        ):
            page.family(f"dltui_memory_{name}_bytes", "gauge", f"Host memory: {name}.").add(
                n, value
            )
    if s.pressure is not None:
        p = s.pressure
        psi = page.family(
            "dltui_pressure_avg10_ratio",
            "gauge",
            "Pressure stall information: share of the last 10 s with tasks stalled (0-1).",
        )
        for res, kind, value in (
            ("cpu", "some", p.cpu_some_avg10_percent),
            ("io", "some", p.io_some_avg10_percent),
            ("io", "full", p.io_full_avg10_percent),
            ("memory", "some", p.memory_some_avg10_percent),
            ("memory", "full", p.memory_full_avg10_percent),
        ):
            psi.add(n + (("resource", res), ("kind", kind)), value, PERCENT)
    if s.tasks is not None:
        page.family(
            "dltui_tasks_uninterruptible", "gauge", "Processes in uninterruptible sleep (D state)."
        ).add(n, s.tasks.d_state_processes)
    _devices(
        page,
        n,
        s.disks,
        (
            (
                "dltui_disk_read_bytes_per_second",
                "Disk read rate.",
                lambda d: d.read_bytes_per_s,
                1.0,
            ),
            (
                "dltui_disk_written_bytes_per_second",
                "Disk write rate.",
                lambda d: d.write_bytes_per_s,
                1.0,
            ),
            (
                "dltui_disk_busy_ratio",
                "Share of time the disk had I/O in flight (0-1).",
                lambda d: d.busy_percent,
                PERCENT,
            ),
        ),
    )
    for name, help_, get in (
        ("dltui_filesystem_size_bytes", "File system size.", lambda f: f.total_bytes),
        (
            "dltui_filesystem_avail_bytes",
            "File system space available to users.",
            lambda f: f.available_bytes,
        ),
    ):
        fam = page.family(name, "gauge", help_)
        for f in s.filesystems:
            fam.add(n + (("mountpoint", f.mountpoint),) + labels(("fstype", f.fstype)), get(f))
    _devices(
        page,
        n,
        s.networks,
        (
            (
                "dltui_network_receive_bytes_per_second",
                "Network receive rate.",
                lambda x: x.rx_bytes_per_s,
                1.0,
            ),
            (
                "dltui_network_transmit_bytes_per_second",
                "Network transmit rate.",
                lambda x: x.tx_bytes_per_s,
                1.0,
            ),
        ),
    )
    for name, help_, get in (
        (
            "dltui_network_receive_errors_total",
            "Network receive errors.",
            lambda x: x.rx_errors_total,
        ),
        (
            "dltui_network_transmit_errors_total",
            "Network transmit errors.",
            lambda x: x.tx_errors_total,
        ),
        ("dltui_network_receive_drops_total", "Network receive drops.", lambda x: x.rx_drops_total),
        (
            "dltui_network_transmit_drops_total",
            "Network transmit drops.",
            lambda x: x.tx_drops_total,
        ),
    ):
        fam = page.family(name, "counter", help_)
        for x in s.networks:
            fam.add(n + (("device", x.name),), get(x))


def _devices(
    page: Page,
    n: Labels,
    rows: Sequence[Any],
    table: tuple[tuple[str, str, Callable[[Any], Any], float], ...],
) -> None:
    """Per-device gauges (disks, NICs), labelled ``device``."""
    for name, help_, get, scale in table:
        fam = page.family(name, "gauge", help_)
        for row in rows:
            fam.add(n + (("device", row.name),), get(row), scale)


def _gpu_jobs(page: Page, node: NodeState, s: Sample) -> None:
    """``dltui_gpu_job_info``: who holds each GPU, one series per (GPU, holder), at most
    ``MAX_HOLDERS_PER_GPU`` per GPU; never a PID label. The job's identity lives here, not on
    every metric (dcgm-exporter's ``hpc_job`` label multiplied series): join on node and gpu."""
    family = page.family(
        "dltui_gpu_job_info",
        "gauge",
        "Who holds the GPU: its processes' Slurm job, user, container and pod (value 1).",
    )
    for g in s.gpus:
        gpu_labels = _gpu_labels(node, g)
        for holder in gpu_holders(g, node.jobs, node.containers):
            family.add(gpu_labels + labels(*holder), 1)


def _gpu_labels(node: NodeState, g: GpuSample) -> Labels:
    uuid, model = g.uuid, g.name
    if (uuid is None or model is None) and node.facts is not None:
        for f in node.facts.gpus:  # the sample may leave out what the facts already said
            if f.index == g.index:
                uuid, model = uuid or f.uuid, model or f.name
    return labels(("node", node.name), ("gpu", str(g.index)), ("uuid", uuid), ("model", model))


def _gpus(page: Page, node: NodeState, s: Sample) -> None:
    if not s.gpus:
        return
    gpu_labels = [_gpu_labels(node, g) for g in s.gpus]
    for name, type_, help_, get, scale in _GPU:
        fam = page.family(name, type_, help_)
        for lab, g in zip(gpu_labels, s.gpus, strict=True):
            fam.add(lab, get(g), scale)
    ecc = page.family(
        "dltui_gpu_ecc_errors_total",
        "counter",
        "ECC errors: volatile since the driver loaded, aggregate over the GPU's life.",
    )
    for lab, g in zip(gpu_labels, s.gpus, strict=True):
        for kind, scope, get in _ECC:
            ecc.add(lab + (("type", kind), ("scope", scope)), get(g))
    thr = page.family(
        "dltui_gpu_clock_event_seconds_total",
        "counter",
        "Time the GPU's clocks were held down, by reason.",
    )
    for lab, g in zip(gpu_labels, s.gpus, strict=True):
        for reason, get in _CLOCK_EVENT_TIME:
            thr.add(lab + (("reason", reason),), get(g), US)
    procs = page.family("dltui_gpu_processes", "gauge", "Processes using the GPU.")
    err = page.family("dltui_gpu_readable", "gauge", "0 when the GPU could not be read.")
    for lab, g in zip(gpu_labels, s.gpus, strict=True):
        procs.add(lab, len(g.processes) if g.error is None else None)
        err.add(lab, g.error is None)


# systemd's ActiveState words: one series each, 1 for the unit's state (node_exporter's way),
# so a state change is a value change, not a series appearing and another going stale.
UNIT_STATES = ("active", "reloading", "inactive", "failed", "activating", "deactivating")


def _units(page: Page, n: Labels, s: Sample) -> None:
    """The training unit(s) the node's group names, and its newest checkpoint."""
    active = page.family("dltui_unit_active", "gauge", "1 when the systemd unit is active.")
    state = page.family(
        "dltui_unit_state", "gauge", "The unit's ActiveState: 1 on the series of its state, 0 on the others."
    )
    info = page.family(
        "dltui_unit_info", "gauge", "The unit's load state, sub-state and last result (value 1)."
    )
    restarts = page.family(
        "dltui_unit_restarts_total", "counter", "Automatic restarts of the unit (systemd's NRestarts)."
    )
    memory = page.family("dltui_unit_memory_bytes", "gauge", "Memory of the unit's cgroup.")
    cpu = page.family("dltui_unit_cpu_seconds_total", "counter", "CPU time of the unit's cgroup.")
    for unit in s.units:
        u = n + (("unit", unit.name),)
        if unit.active_state is not None:
            active.add(u, unit.active_state == "active")
            states = UNIT_STATES if unit.active_state in UNIT_STATES else (*UNIT_STATES, unit.active_state)
            for word in states:
                state.add(u + (("state", word),), word == unit.active_state)
        info.add(
            u + labels(("load_state", unit.load_state), ("sub_state", unit.sub_state), ("result", unit.result)),
            1,
        )
        restarts.add(u, unit.restarts_total)
        memory.add(u, unit.memory_current_bytes)
        cpu.add(u, unit.cpu_usage_us, US)
    c = s.checkpoint
    if c is not None and c.newest_mtime is not None:
        g = n + labels(("glob", c.glob))
        page.family(
            "dltui_checkpoint_last_write_timestamp_seconds",
            "gauge",
            "When the newest file matching the group's checkpoint glob was written (node clock).",
        ).add(g, c.newest_mtime)
        page.family(
            "dltui_checkpoint_age_seconds",
            "gauge",
            "Age of the newest checkpoint file when the node was last sampled (node clock).",
        ).add(g, max(0.0, s.time - c.newest_mtime))
        page.family(
            "dltui_checkpoint_files", "gauge", "Files matching the checkpoint glob (at most 2000 looked at)."
        ).add(g, c.matched_files)


def _alerts(page: Page, node: NodeState) -> None:
    fam = page.family(
        "dltui_alert",
        "gauge",
        "An open dltui alert (value 1): node, GPU (absent for the node), rule, severity.",
    )
    since = page.family(
        "dltui_alert_since_timestamp_seconds",
        "gauge",
        "When the condition behind an open alert started (seconds since the epoch).",
    )
    for alert in sorted(
        node.alerts.values(), key=lambda a: (a.rule, a.gpu if a.gpu is not None else -1)
    ):
        lab = labels(("node", node.name))
        if alert.gpu is not None:
            lab += (("gpu", str(alert.gpu)),)
        lab += (("rule", alert.rule), ("severity", alert.severity))
        fam.add(lab, 1)
        since.add(lab, alert.since)


class CachedPage:
    """One render per change of the fleet: many scrapers between two samples cost one render.

    The key is every node's ``version`` (bumped on each sample, status change and alert)."""

    def __init__(self, fleet: FleetState):
        self.fleet = fleet
        self._key: tuple[int, ...] | None = None
        self._body = b""
        self.renders = 0

    def body(self) -> bytes:
        key = tuple(node.version for node in self.fleet)
        if key != self._key:
            self._body = render(self.fleet).encode()
            self._key = key
            self.renders += 1
        return self._body
