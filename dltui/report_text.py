"""The plain-text form of ``dltui snapshot``: one block per node, alerts first."""

from __future__ import annotations

from dltui.core import format as fmt
from dltui.core import gpu_fields, vendors
from dltui.core import status as st
from dltui.core.attribution import gpu_holder
from dltui.core.models import DriveSample, GpuSample, StackFacts
from dltui.core.scheduler import view_lines
from dltui.core.state import FleetState, NodeState
from dltui.core.timeline import alert_order


def node_status(node: NodeState) -> tuple[st.Status, str | None]:
    """The status a snapshot reports, in this text and in its JSON alike: a node that never
    sent a sample is not ``ok``; a down node's reason without the transport's retry plan (the
    snapshot stops trying when it ends)."""
    if node.status == st.OK and node.sample is None:
        return st.TIMEOUT, "connected, but no sample arrived in the snapshot window"
    return node.status, st.without_retry(node.reason)


def render(fleet: FleetState) -> str:
    out: list[str] = []
    for node in fleet:
        status, reason = node_status(node)
        head = f"{node.name}: {status}"
        if status != st.OK:  # not judged: the Nagios UNKNOWN, with why and what to do
            head = f"{node.name}: UNKNOWN — {status}" + (f": {reason}" if reason else "")
            advice = st.ADVICE.get(status)
            head += f" — {advice}" if advice else ""
        out.append(head)
        for alert in sorted(node.alerts.values(), key=alert_order):
            where = f" GPU{alert.gpu}" if alert.gpu is not None else ""
            out.append(f"  [{alert.severity.upper()}]{where} {alert.message}")
        f, s = node.facts, node.sample
        if f is not None:
            gpu = (
                ", ".join(f"{what} {version or 'n/a'}" for what, version in vendors.driver_words(f))  # each vendor's
                if f.gpu_source
                else (f.gpu_note or "no GPUs")
            )
            out.append(
                f"  {f.hostname} · {f.os or fmt.NA} · kernel {f.kernel or fmt.NA} · {f.cpu_count} CPUs · {gpu}"
            )
            if f.stack is not None:
                out.append(f"  stack: {stack_words(f.stack)}")
        out.extend(f"  {line}" for line in view_lines(node.scheduler))  # Slurm's / Kubernetes' view
        if s is None:
            out.append("")
            continue
        if s.cpu is not None:
            c = s.cpu
            out.append(
                f"  cpu {fmt.pct(c.total_percent)} (iowait "
                f"{fmt.pct(c.iowait_percent)}, steal {fmt.pct(c.steal_percent)})"
                f"  load {fmt.num(c.load_1, 2)} {fmt.num(c.load_5, 2)} {fmt.num(c.load_15, 2)}"
            )
        if s.memory is not None:
            m = s.memory
            out.append(
                f"  mem {fmt.size(m.used_bytes)} used / {fmt.size(m.total_bytes)}, "
                f"{fmt.size(m.available_bytes)} available,"
                f" swap {fmt.size(m.swap_used_bytes)} / {fmt.size(m.swap_total_bytes)}"
            )
        if s.pressure is not None:
            p = s.pressure
            out.append(
                f"  pressure (some avg10) cpu {fmt.num(p.cpu_some_avg10_percent, 1)}%"
                f" io {fmt.num(p.io_some_avg10_percent, 1)}% memory {fmt.num(p.memory_some_avg10_percent, 1)}%"
            )
        else:
            out.append("  pressure n/a (kernel without PSI)")
        for d in s.disks:
            out.append(
                f"  disk {d.name}: read {fmt.rate(d.read_bytes_per_s)} write {fmt.rate(d.write_bytes_per_s)}"
                f" busy {fmt.pct(d.busy_percent)} await {fmt.num(d.await_ms, 1, 'ms')}"
            )
        for fs in s.filesystems:
            out.append(
                f"  fs {fs.mountpoint} ({fs.fstype}): {fmt.pct(fs.used_percent)} of {fmt.size(fs.total_bytes)}"
            )
        for drive in s.drives:
            out.append(f"  drive {drive.device}: {drive_words(drive)}")
        for n in s.networks:
            out.append(
                f"  net {n.name}: rx {fmt.rate(n.rx_bytes_per_s)} tx {fmt.rate(n.tx_bytes_per_s)}"
            )
        for g in s.gpus:
            if g.error:
                out.append(f"  GPU{g.index} {g.name or ''}: {g.error}")
                continue
            reasons = ",".join(r for r in g.clock_event_reasons or () if r != "gpu_idle") or "-"
            clocks = f"clocks-event {reasons}"
            if vendors.vendor(g.vendor) is not vendors.NVIDIA:  # no clock-event reasons: its throttle status
                clocks = "throttled " + {True: "yes", False: "no", None: "n/a"}[g.throttled]
            out.append(
                f"  GPU{g.index} {_model(g)}: util "
                f"{fmt.pct(g.utilization_percent)} mem {fmt.mib(g.memory_used_mib)}/"
                f"{fmt.mib(g.memory_total_mib)} temp {fmt.num(g.temperature_c, 0, '°C')}"
                f" power {fmt.num(g.power_w, 0, 'W')}/{fmt.num(g.power_limit_w, 0, 'W')} {clocks}"
                + "".join(f" {tag} {value}" for tag, value in gpu_fields.details(g))  # the field table's
            )
            holder = gpu_holder(g, node.jobs, node.containers)
            if holder:
                out.append(f"    held by {holder}")
        if not s.gpus:
            out.append("  gpus: none")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _model(g: GpuSample) -> str:
    """NVIDIA's name as it reports it; another vendor's with its maker ("AMD Instinct MI300X")."""
    return (g.name or "") if vendors.vendor(g.vendor) is vendors.NVIDIA else vendors.label(g.vendor, g.name)


def drive_words(d: DriveSample) -> str:
    """``SAMSUNG … S/N …: SMART FAILED (volatile_memory_backup_failed), spare 100/10 %, …``."""
    health = {True: "PASSED", False: "FAILED", None: "n/a"}[d.smart_passed]
    if d.critical_warnings:
        health += f" ({', '.join(d.critical_warnings)})"
    parts = [f"SMART {health}"]
    for label, value in (
        (
            "spare",
            None
            if d.available_spare_percent is None
            else f"{d.available_spare_percent}/{fmt.num(d.available_spare_threshold_percent)} %",
        ),
        ("used", None if d.endurance_used_percent is None else f"{d.endurance_used_percent} %"),
        ("media errors", d.media_errors_total),
        ("reallocated", d.reallocated_sectors_total),
        ("pending", d.pending_sectors),
        ("uncorrectable", d.offline_uncorrectable_sectors),
        ("temp", None if d.temperature_c is None else f"{d.temperature_c}°C"),
    ):
        if value is not None:
            parts.append(f"{label} {value}")
    who = " ".join(x for x in (d.model, f"S/N {d.serial}" if d.serial else None) if x)
    text = f"{who}: " if who else ""
    return text + ", ".join(parts) + (f" (not read now: {d.error})" if d.error else "")


def stack_words(st: StackFacts) -> str:
    """``driver packages held, automatic upgrades on; reboot pending: …``."""
    held = {
        True: "driver packages held",
        False: "driver packages NOT held",
        None: "no driver packages",
    }
    upgrades = {
        True: "automatic upgrades on",
        False: "automatic upgrades off",
        None: "automatic upgrades n/a",
    }
    words = f"{held[st.driver_held]}, {upgrades[st.auto_upgrades]}"
    if st.rocm_version:
        words = f"ROCm {st.rocm_version}, " + words
    if st.auto_upgrades and st.auto_upgrades_skip_driver:
        words += " (driver excluded)"
    if st.reboot_reasons:
        words += "; reboot pending: " + "; ".join(st.reboot_reasons)
    return words
