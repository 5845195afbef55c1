"""Field tables shared by the probe (on the node) and the decoder (on the operator's machine).

A sample is a set of flat *records*: ``cpu``, ``memory``, ``pressure``, ``tasks``, one ``core``
per CPU, one ``disk`` / ``filesystem`` / ``network`` / ``gpu`` per device. The wire codec
(``wire.py``) sends a record's fields by their position in these tables, and only the fields
that changed, so both ends must use the same table: they do, because the probe shipped to a
node is this very source. Units live in the names; a value the hardware does not report is
``None`` (JSON ``null``), never 0.

Also here, because both ends build or read them alike: the event records (an XID, an OOM
kill), the unit record from ``systemctl show``, the one normaliser of PCI bus ids, the NVMe
critical warning bits, and the one rule for running a read as root through ``sudo -n`` and the
sudoers line that allows exactly it (the probe's SMART reads, the actions' unit changes). The
operator's side imports from ``dltui.node`` only this, ``wire`` and ``xid`` (and what it ships).

Bump PROTOCOL whenever a table changes in a way an older decoder would misread.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Sequence

from .xid import describe

PROTOCOL = 1

# The burn-in driver's phases, in order, as its status.json and result.json name them.
BurninPhase = Literal["preflight", "load", "post"]
BURNIN_PHASES: tuple[BurninPhase, ...] = ("preflight", "load", "post")

CPU_FIELDS = (
    "total_percent",
    "user_percent",
    "system_percent",
    "iowait_percent",  # display only: proc(5) calls iowait unreliable
    "steal_percent",
    "load_1",
    "load_5",
    "load_15",
)

CORE_FIELDS = (
    "index",
    "total_percent",
    "user_percent",
    "system_percent",
    "iowait_percent",
    "steal_percent",
)

MEMORY_FIELDS = (
    "total_bytes",
    "used_bytes",
    "available_bytes",
    "cached_bytes",
    "buffers_bytes",
    "shmem_bytes",
    "swap_total_bytes",
    "swap_used_bytes",
)

# PSI from /proc/pressure/*; the whole record is absent where the kernel has no PSI.
PRESSURE_FIELDS = (
    "cpu_some_avg10_percent",
    "cpu_some_avg60_percent",
    "cpu_full_avg10_percent",
    "cpu_full_avg60_percent",
    "io_some_avg10_percent",
    "io_some_avg60_percent",
    "io_full_avg10_percent",
    "io_full_avg60_percent",
    "memory_some_avg10_percent",
    "memory_some_avg60_percent",
    "memory_full_avg10_percent",
    "memory_full_avg60_percent",
)

# The tasks record's d_state_processes is counted every D_STATE_EVERY_TICKS samples (a scan of
# every process) and repeated between: the rules read it knowing so.
D_STATE_EVERY_TICKS = 10

TASK_FIELDS = (
    "running",  # procs_running from /proc/stat
    "blocked_io",  # procs_blocked from /proc/stat: tasks waiting for I/O
    "d_state_processes",  # processes whose state is D (uninterruptible sleep)
)

DISK_FIELDS = (
    "name",
    "read_bytes_per_s",
    "write_bytes_per_s",
    "read_iops",
    "write_iops",
    "busy_percent",  # Δ io_ticks / Δt: misleading on NVMe and RAID, see await and queue
    "queue_depth",  # Δ weighted ms / Δt: average requests in flight
    "await_ms",  # Δ (read+write ms) / Δ completed I/Os
)

FILESYSTEM_FIELDS = (
    "mountpoint",
    "device",
    "fstype",
    "total_bytes",
    "used_bytes",
    "available_bytes",  # available to non-root (f_bavail)
    "used_percent",  # of what non-root can use, as df(1) computes it
    "inodes_used_percent",
)

NETWORK_FIELDS = (
    "name",
    "rx_bytes_per_s",
    "tx_bytes_per_s",
    "rx_packets_per_s",
    "tx_packets_per_s",
    "rx_errors_total",
    "tx_errors_total",
    "rx_drops_total",
    "tx_drops_total",
)

# One per InfiniBand / RoCE HCA port, from sysfs (see infiniband.py); the counters are read
# every few seconds and repeated in between.
IB_PORT_FIELDS = (
    "name",  # "mlx5_0:1", as NCCL_IB_HCA spells a port
    "device",
    "port",
    "state",  # ACTIVE, DOWN, INIT, ARMED
    "phys_state",  # LinkUp, Polling, Disabled, ...
    "rate_gbps",  # the negotiated signalling rate
    "rate_detail",  # lanes and generation: "4X NDR"; "1X" on a 4-lane port is a degraded link
    "link_layer",  # "InfiniBand" or "Ethernet" (RoCE)
    "hca_type",  # "MT4129"; ports of one HCA type are each other's siblings
    "netdev",  # the interface beside the port (RoCE, IPoIB), null when none
    "symbol_errors_total",  # cumulative, from the HCA; alert on rises
    "link_downed_total",
    "link_error_recovery_total",
    "rcv_errors_total",
    "xmit_discards_total",
    "excessive_buffer_overrun_errors_total",
    "local_link_integrity_errors_total",
    "rx_bytes_per_s",
    "tx_bytes_per_s",
    "error",
)

# One GPU process, inside a GPU record's "processes"; only "pid" is always there. The owner,
# job, container and pod are read once per process (probe/attribution.py); core.models.GpuProcess.
PROCESS_FIELDS = (
    "pid",
    "name",
    "gpu_memory_mib",
    "unit",  # the configured systemd unit whose cgroup holds it
    "uid",  # owner of /proc/PID
    "user",  # that uid's name on the node
    "slurm_job",  # from the cgroup (proctrack/cgroup) or `scontrol listpids` (linuxproc)
    "slurm_step",
    "outside_job",  # true: on a Slurm node, in no job (asked scontrol)
    "container_id",  # 64 hex digits, from the cgroup path
    "container_runtime",  # docker | podman | containerd | crio | cri
    "pod_uid",  # the Kubernetes pod, from kubepods…pod<uid>
)

GPU_FIELDS = (
    "index",
    "uuid",
    "name",
    "utilization_percent",
    "memory_utilization_percent",
    # Sub-second utilisation readings since the previous sample (NVML nvmlDeviceGetSamples),
    # oldest first, evenly spaced by utilization_sample_period_ms; [] where unavailable.
    "utilization_samples_percent",
    "utilization_sample_period_ms",
    "memory_used_mib",
    "memory_total_mib",
    "temperature_c",  # core (temperature.gpu); there is no junction/hotspot sensor
    "memory_temperature_c",  # HBM
    "temperature_margin_c",  # T.Limit margin: degrees left before slowdown
    "power_w",
    "power_limit_w",  # enforced
    "sm_clock_mhz",
    "memory_clock_mhz",
    "sm_clock_max_mhz",
    "memory_clock_max_mhz",
    "pstate",  # 0 = P0
    "fan_percent",  # intended speed; null on passive cards
    "clock_event_reasons_mask",
    "clock_event_reasons",  # decoded names of the active bits (see CLOCK_EVENT_BITS)
    "clock_event_sw_power_cap_us",  # cumulative counters: alert on deltas
    "clock_event_sync_boost_us",
    "clock_event_sw_thermal_us",
    "clock_event_hw_thermal_us",
    "clock_event_hw_power_brake_us",
    "pcie_gen",
    "pcie_width",
    "pcie_max_gen",
    "pcie_max_width",
    "pcie_replay_count",
    "ecc_corrected_volatile",
    "ecc_uncorrected_volatile",
    "ecc_corrected_aggregate",
    "ecc_uncorrected_aggregate",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "retired_pages_pending",
    # [{"pid", "name", "gpu_memory_mib"}, and where known "unit", "uid", "user", "slurm_job",
    #  "slurm_step", "outside_job", "container_id", "container_runtime", "pod_uid"]: PROCESS_FIELDS
    "processes",
    "error",  # plain words when this GPU could not be read (e.g. "GPU is lost"), else null
    # Appended, so a position an older decoder reads keeps its meaning. Other vendors (AMD
    # Instinct, Intel Gaudi; see probe/amd*.py, probe/gaudi.py): "nvidia", "amd" or "intel";
    # the junction (AMD "hotspot") sensor NVIDIA does not expose; the vendor's own "clocks are
    # held back now" (AMD throttle_status), where there is no clock-event mask; AMD XGMI (its
    # NVLink) link errors, RAS counts of the XGMI_WAFL block.
    "vendor",
    "hotspot_temperature_c",
    "throttled",
    "xgmi_errors_total",
)

# One per GPU that has NVLink (see nvlink.py): links by index, error counters summed over links.
NVLINK_FIELDS = (
    "gpu",  # the GPU's index
    "links_active",
    "links_total",  # links the GPU has; null when the source cannot say (all inactive)
    "links_up",  # per link index: true active, false inactive
    "link_speeds_gbytes_per_s",  # per link index, null where inactive
    "crc_errors_total",  # flow-control and data CRC errors, every link together
    "replay_errors_total",
    "recovery_errors_total",
    "error",
)

# One per configured systemd unit (``--unit``), from ``systemctl show`` (see units.py).
UNIT_FIELDS = (
    "name",
    "load_state",  # loaded, not-found, masked, bad-setting, error
    "active_state",  # active, inactive, failed, activating, deactivating, reloading
    "sub_state",
    "result",  # success, exit-code, signal, core-dump, timeout, start-limit-hit, oom-kill, ...
    "restarts_total",  # NRestarts: automatic Restart= restarts only
    "main_pid",  # 0 when no main process
    "exec_main_status",
    "invocation_id",  # changes with every start; "" when never started
    "started_monotonic_us",  # ExecMainStartTimestampMonotonic (CLOCK_MONOTONIC, µs); 0 = never
    "memory_current_bytes",  # null where the node's systemd has no memory accounting
    "cpu_usage_us",  # CPUUsageNSec / 1000; null without CPU accounting
    "error",  # plain words when the unit could not be read
    "restart_policy",  # Restart=: no, always, on-failure, …; "no": a crash is not restarted (unit_no_restart)
)

# One per configured training container (``--container``: a name or label=K=V), from the
# engine's ``inspect`` (probe/containers.py): the unit record's twin.
CONTAINER_FIELDS = (
    "name",  # as configured (a name, or the name a label selector found)
    "engine",  # docker or podman
    "id",  # the engine's id (64 hex digits)
    "image",
    "state",  # running, restarting, exited, paused, created, dead
    "restart_policy",  # no, always, unless-stopped, on-failure[:N]; null when not reported
    "restarts_total",  # the engine's RestartCount: restarts by its policy
    "oom_killed",  # the last exit was the kernel's OOM kill
    "health",  # healthy, unhealthy, starting; null without a health check
    "exit_code",  # the last exit's code
    "started_at",  # RFC 3339 as the engine writes it
    "finished_at",
    "error",  # plain words when it could not be read (no such container, no engine, denied)
)



def inspect_fields(obj: Any) -> dict[str, Any]:
    """The CONTAINER_FIELDS one ``docker inspect`` / ``podman inspect`` object gives (name to
    finished_at; podman's shape is close, not identical: ``Healthcheck`` for ``Health``, ``""``
    for policy "no"). Read here once for both ends: the probe's configured containers and the
    operator side's lookup of the container holding a GPU. Values are the engine's, unsanitised."""
    obj = obj if isinstance(obj, dict) else {}

    def table(where: Any, key: str) -> dict[str, Any]:
        value = where.get(key)
        return value if isinstance(value, dict) else {}

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value != "" else None

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    state, host, config = (table(obj, k) for k in ("State", "HostConfig", "Config"))
    policy_obj = host.get("RestartPolicy")
    policy = None
    if isinstance(policy_obj, dict):
        policy = policy_obj.get("Name") if isinstance(policy_obj.get("Name"), str) else None
        if policy == "":
            policy = "no"  # podman (and old docker) write no policy as ""
        retries = count(policy_obj.get("MaximumRetryCount"))
        if policy == "on-failure" and retries:
            policy = "on-failure:%d" % retries
    health = table(state, "Health") or table(state, "Healthcheck")
    oom = state.get("OOMKilled")
    name = obj.get("Name")
    return {
        "name": name.lstrip("/") if isinstance(name, str) else None,
        "id": text(obj.get("Id")),
        "image": text(config.get("Image")) or text(obj.get("ImageName")) or text(obj.get("Image")),
        "state": text(state.get("Status")),
        "restart_policy": policy,
        "restarts_total": count(obj.get("RestartCount")),
        "oom_killed": oom if isinstance(oom, bool) else None,
        "health": text(health.get("Status")),
        "exit_code": count(state.get("ExitCode")),
        "started_at": text(state.get("StartedAt")),
        "finished_at": text(state.get("FinishedAt")),
    }


# The newest file matching the node group's checkpoint glob (``--checkpoint``).
CHECKPOINT_FIELDS = (
    "glob",
    "newest_path",
    "newest_mtime",  # epoch seconds, the node's clock; null when nothing matches
    "matched_files",  # how many were looked at (at most units.CHECKPOINT_MAX_FILES)
    "error",
)

# One per drive smartctl reads (see smart.py), re-read every few minutes: the wire sends a
# drive's fields only when a new reading changed them. NVMe fields are null on SATA/SAS drives
# and the ATA attribute counts null on NVMe.
DRIVE_FIELDS = (
    "device",  # /dev/nvme0, /dev/sda; "/dev/bus/0 megaraid,1" behind a RAID controller
    "type",  # smartctl's device type: nvme, sat, scsi, megaraid,N, ...
    "protocol",  # NVMe, ATA, SCSI
    "model",
    "serial",
    "capacity_bytes",
    "smart_passed",  # SMART overall-health self-assessment; null when the drive gives none
    "critical_warning_mask",  # NVMe critical warning byte
    "critical_warnings",  # its bits by name (smart.CRITICAL_WARNING_BITS)
    "available_spare_percent",  # NVMe
    "available_spare_threshold_percent",
    "endurance_used_percent",  # NVMe "percentage used": 100 = rated endurance reached
    "media_errors_total",  # NVMe media and data integrity errors; SAS uncorrected errors
    "error_log_entries_total",
    "unsafe_shutdowns_total",
    "reallocated_sectors_total",  # ATA attribute 5; SAS grown defect list
    "pending_sectors",  # ATA 197: waiting to be reallocated (a count now, not cumulative)
    "offline_uncorrectable_sectors",  # ATA 198
    "udma_crc_errors_total",  # ATA 199: cabling, not the media
    "temperature_c",
    "power_on_hours",
    "read_time",  # epoch seconds (node clock) of this reading
    "error",  # plain words when the drive could not be read now (its last reading is kept)
)

# The ``stack`` fact (stack.py): read once per connection, from files only.
STACK_FIELDS = (
    "package_manager",  # dpkg, rpm, or null
    "driver_packages",  # installed NVIDIA driver packages (dpkg; null on RPM systems)
    "driver_packages_unheld",  # those without a hold: an upgrade may replace them
    "driver_package_version",  # the userspace driver the packages installed (535.183.01)
    "driver_held",  # every driver package held (dpkg) / version-locked or excluded (dnf)
    "driver_module_version",  # the loaded kernel module's version
    "auto_upgrades",  # unattended-upgrades / dnf-automatic installs updates on its own
    "auto_upgrades_skip_driver",  # its blacklist covers every driver package
    "auto_upgrades_source",  # where that was read, in words
    "kernel_newest_installed",  # newest release under /lib/modules
    "reboot_reasons",  # why a reboot is pending, in words; [] when none
    "rocm_version",  # /opt/rocm/.info/version, where ROCm is installed (appended: positions stay)
)

RECORD_FIELDS = {
    "cpu": CPU_FIELDS,
    "core": CORE_FIELDS,
    "memory": MEMORY_FIELDS,
    "pressure": PRESSURE_FIELDS,
    "tasks": TASK_FIELDS,
    "disk": DISK_FIELDS,
    "filesystem": FILESYSTEM_FIELDS,
    "network": NETWORK_FIELDS,
    "ib_port": IB_PORT_FIELDS,
    "gpu": GPU_FIELDS,
    "nvlink": NVLINK_FIELDS,
    "unit": UNIT_FIELDS,
    "container": CONTAINER_FIELDS,
    "checkpoint": CHECKPOINT_FIELDS,
    "drive": DRIVE_FIELDS,
}

# Clock-event ("throttle") reason bits, as NVML and nvidia-smi define them: the one place
# their values are written (parsers, rules and the demo import them).
GPU_IDLE = 0x1
APPLICATIONS_CLOCKS_SETTING = 0x2
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SYNC_BOOST = 0x10
SW_THERMAL_SLOWDOWN = 0x20
HW_THERMAL_SLOWDOWN = 0x40
HW_POWER_BRAKE_SLOWDOWN = 0x80
DISPLAY_CLOCK_SETTING = 0x100
BOARD_LIMIT = 0x200
RELIABILITY = 0x400
CLOCK_EVENT_BITS = (
    (GPU_IDLE, "gpu_idle"),
    (APPLICATIONS_CLOCKS_SETTING, "applications_clocks_setting"),
    (SW_POWER_CAP, "sw_power_cap"),
    (HW_SLOWDOWN, "hw_slowdown"),
    (SYNC_BOOST, "sync_boost"),
    (SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
    (HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
    (HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake_slowdown"),
    (DISPLAY_CLOCK_SETTING, "display_clock_setting"),
    (BOARD_LIMIT, "board_limit"),
    (RELIABILITY, "reliability"),
)


# NVMe critical warning bits (NVMe base spec, SMART / Health log byte 0), named as smartctl's
# JSON names them under smart_status.nvme.
SPARE_BELOW_THRESHOLD = 0x01
CRITICAL_WARNING_BITS = (
    (SPARE_BELOW_THRESHOLD, "spare_below_threshold"),
    (0x02, "temperature_above_or_below_threshold"),
    (0x04, "reliability_degraded"),
    (0x08, "media_read_only"),
    (0x10, "volatile_memory_backup_failed"),
    (0x20, "persistent_memory_region_unreliable"),
)


def decode_critical_warning(mask: int | None) -> list[str] | None:
    """Names of the NVMe critical warning bits set in ``mask``; unknown bits kept as hex."""
    if mask is None:
        return None
    names = [name for bit, name in CRITICAL_WARNING_BITS if mask & bit]
    unknown = mask & ~0x3F
    if unknown:
        names.append(hex(unknown))
    return names


# sudo: ``sudo -n`` never prompts; sudoers matches the whole command line, so the line dltui
# suggests names the binary by its full path and every argument as run.
SUDO = "sudo"
# What sudo -n prints when it will not run the command without a password, by sudo version.
SUDO_REFUSALS = (
    "a password is required",
    "is not allowed to execute",
    "not in the sudoers file",
    "a terminal is required",
)


def sudo_refused(argv: Sequence[str], stderr: str) -> bool:
    """Whether this run of ``argv`` was stopped by sudo itself (not by the command)."""
    return bool(argv) and argv[0] == SUDO and any(words in stderr for words in SUDO_REFUSALS)


def sudoers_line(user: str, commands: Sequence[Sequence[str]]) -> str:
    """One sudoers line that lets ``user`` run exactly each of ``commands`` (``sudo -n``
    dropped) as root and nothing else; characters special to sudoers are escaped."""
    specs = []
    for argv in commands:
        command = list(argv)
        if command[:2] == [SUDO, "-n"]:
            command = command[2:]
        specs.append(" ".join([command[0], *(_sudoers_escape(a) for a in command[1:])]))
    return "%s ALL=(root) NOPASSWD: %s" % (user, ", ".join(specs))


def _sudoers_escape(arg: str) -> str:
    """sudo matches a command's arguments with fnmatch(3) after sudoers' own unescaping: an
    argument is escaped for fnmatch first (``\\x2d`` in a unit name must match itself), then
    for sudoers (``\\ , : =``), so a backslash is written four times."""
    arg = re.sub(r"([\\*?\[\]])", r"\\\1", arg)
    for ch in "\\,:=":
        arg = arg.replace(ch, "\\" + ch)
    return arg


def decode_clock_event_reasons(mask: int | None) -> list[str] | None:
    """Names of the bits set in ``mask``; unknown bits are kept as hex so none is hidden."""
    if mask is None:
        return None
    names = [name for bit, name in CLOCK_EVENT_BITS if mask & bit]
    known = 0
    for bit, _ in CLOCK_EVENT_BITS:
        known |= bit
    unknown = mask & ~known
    if unknown:
        names.append(hex(unknown))
    return names


def pci_key(text: str | None) -> tuple[int, ...] | None:
    """A PCI bus id, however written, as a key to compare (the one normaliser of bus ids):
    ``0000:3b:00``, ``00000000:3B:00.0``, ``3b:00.0`` -> (0, 0x3b, 0); None if unreadable.

    XID lines omit the PCI function, NVML's bus ids carry an 8-digit domain: compare keys.
    """
    parts = (text or "").split(".")[0].split(":")
    if len(parts) == 2:
        parts = ["0"] + parts
    if len(parts) != 3:
        return None
    try:
        return tuple(int(p, 16) for p in parts)
    except ValueError:
        return None


# -- event records ----------------------------------------------------------------------------


def xid_event(when: float, pci: str | None, xid: int, detail: str | None, gpu: int | None,
              line_id: str | None = None) -> dict[str, Any]:
    """An event dict shaped like ``NodeEvent``. ``line_id`` names the kernel line for good
    (boot id + µs since boot): every new session backfills the boot, and the operator side
    drops what it has seen by this id."""
    info = describe(xid)
    where = "GPU %d" % gpu if gpu is not None else "PCI %s" % pci
    return {
        "time": round(when, 3),
        "kind": "xid",
        "message": "XID %d on %s: %s — %s" % (xid, where, info.meaning, info.action),
        "gpu": gpu,
        "severity": info.severity,
        "data": {"xid": xid, "pci": pci, "detail": detail, "id": line_id},
    }


def oom_event(when: float, pid: int, name: str, in_cgroup: bool, rss_bytes: int | None,
              line_id: str | None = None) -> dict[str, Any]:
    """An event dict shaped like ``NodeEvent`` for a process the kernel's OOM killer ended."""
    where = "a memory cgroup's limit (container, job or unit)" if in_cgroup else "the node's memory"
    size = " holding %.1f GiB" % (rss_bytes / 2**30) if rss_bytes else ""
    return {
        "time": round(when, 3),
        "kind": "oom-kill",
        "message": "OOM killer ended %s (pid %d)%s: %s ran out" % (name, pid, size, where),
        "gpu": None,
        "severity": "critical",
        "data": {
            "pid": pid,
            "process": name,
            "cgroup": in_cgroup,
            "rss_bytes": rss_bytes,
            "id": line_id,
        },
    }


# The sampling intervals the probe takes (``--interval``'s range on the operator's side, and
# ``interval SECONDS`` on the probe's stdin): the config, the command line and the fleet state
# read the same range, so an interval one end accepts is one the other end takes.
MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 3600.0


def interval_event(when: float, interval: float) -> dict[str, Any]:
    """An event dict shaped like ``NodeEvent``: the probe took a new sampling interval (the
    operator's ``+`` / ``-``). On the node's timeline, and the operator's side takes the new
    interval from it (stale-node timing, the header)."""
    return {
        "time": round(when, 3),
        "kind": "interval",
        "message": "sampling every %g s" % interval,
        "gpu": None,
        "severity": "info",
        "data": {"interval_s": interval},
    }


# -- the unit record, from systemctl show (the probe's poll and the actions' reads alike) --------

SHOW_PROPERTIES = (
    "Id",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "NRestarts",
    "MainPID",
    "ExecMainStatus",
    "InvocationID",
    "ExecMainStartTimestampMonotonic",
    "MemoryCurrent",
    "CPUUsageNSec",
    "Restart",
)
_NOT_SET = ("", "[not set]", "18446744073709551615")  # systemd's "infinity" / unknown


def parse_show(text: str) -> list[dict[str, str]]:
    """``systemctl show`` output (``Key=Value`` lines, one blank-line-separated block per
    unit) -> list of dicts, in the order given."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key] = value
    if current:
        blocks.append(current)
    return blocks


def _int(value: str | None) -> int | None:
    if value is None or value in _NOT_SET:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def unit_record(name: str, props: dict[str, str]) -> dict[str, Any]:
    """One ``unit`` record (schema.UNIT_FIELDS) from a show block."""
    cpu_ns = _int(props.get("CPUUsageNSec"))
    return {
        "name": name,
        "load_state": props.get("LoadState") or None,
        "active_state": props.get("ActiveState") or None,
        "sub_state": props.get("SubState") or None,
        "result": props.get("Result") or None,
        "restarts_total": _int(props.get("NRestarts")),
        "main_pid": _int(props.get("MainPID")),
        "exec_main_status": _int(props.get("ExecMainStatus")),
        "invocation_id": props.get("InvocationID", ""),
        "started_monotonic_us": _int(props.get("ExecMainStartTimestampMonotonic")),
        "memory_current_bytes": _int(props.get("MemoryCurrent")),
        "cpu_usage_us": None if cpu_ns is None else cpu_ns // 1000,
        "error": None,
        "restart_policy": props.get("Restart") or None,
    }
