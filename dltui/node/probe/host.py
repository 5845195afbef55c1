"""Host side of the probe: CPU, memory, pressure, tasks, disks, file systems and networks.

Reads /proc and /sys only (never spawns a process). Rates come from the difference with the
previous call over the real elapsed monotonic time; the first call has no previous reading,
so its rates are None rather than invented zeros.
"""

from __future__ import annotations

import errno
import operator
import os
import shlex
import sys
import time
from typing import Any, Dict, Sequence

from ..schema import D_STATE_EVERY_TICKS, MEMORY_FIELDS, PRESSURE_FIELDS
from .files import BoundedStatvfs, KeptOpen, MountTable, read_sys, read_text
from .problems import Problems
from .procfs import (
    SECTOR_BYTES,
    CpuTimes,
    DiskCounters,
    Mount,
    NetCounters,
    parse_diskstats,
    parse_loadavg,
    parse_meminfo,
    parse_mounts,
    parse_net_dev,
    parse_pid_state,
    parse_pressure,
    parse_stat,
)

Record = Dict[str, Any]

# Block devices that are never a disk worth watching: loop devices (snaps, images), RAM disks,
# zram swap, optical drives, floppies.
SKIPPED_DISK_PREFIXES = ("loop", "ram", "zram", "sr", "fd")

LOCAL_FSTYPES = frozenset(("ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "bcachefs"))
# statvfs on these can block for as long as the server (or FUSE daemon) does not answer.
NETWORK_FSTYPES = frozenset(
    "nfs nfs4 cifs smb3 lustre gpfs beegfs ceph glusterfs 9p virtiofs".split()
)
# FUSE file systems that are views of something else, not storage.
PSEUDO_FUSE_FSTYPES = frozenset(
    ("fuse.lxcfs", "fuse.portal", "fuse.gvfsd-fuse", "fuse.snapfuse", "fuse.squashfuse")
)
# tmpfs mounts that fill up and break jobs: DataLoader workers pass batches through /dev/shm.
WATCHED_TMPFS = frozenset(("/dev/shm", "/tmp"))

STATVFS_TIMEOUT_S = 0.5
# Network and FUSE mounts are asked every 10 ticks (each ask is a thread with a timeout);
# capacity moves slowly and filesystem_full judges rates over minutes.
REMOTE_STATVFS_EVERY_TICKS = 10

# What memory_record reads from /proc/meminfo.
MEMINFO_NAMES = frozenset(
    (
        "MemTotal",
        "MemFree",
        "MemAvailable",
        "Buffers",
        "Cached",
        "SReclaimable",
        "Shmem",
        "SwapTotal",
        "SwapFree",
    )
)

PRESSURE_RESOURCES = ("cpu", "io", "memory")
# resource -> (line, window, record key) for every value a sample keeps (built once)
PRESSURE_KEYS = {
    resource: [
        (kind, window, "%s_%s_%s_percent" % (resource, kind, window))
        for kind in ("some", "full")
        for window in ("avg10", "avg60")
    ]
    for resource in PRESSURE_RESOURCES
}

# Counting D-state processes reads /proc/<pid>/stat of every process, ~10 µs each: 0.7 ms with
# 75 processes, 27 ms with 2000, more than the whole rest of a sample. So the scan runs every
# D_STATE_EVERY_TICKS ticks (schema.py: the rules know it too) and the ticks between report
# the last count.


class HostCollector:
    """Host facts once, host samples per tick. A failing source is reported to ``problems``
    once and leaves its part of the sample empty (None or []); the rest is still collected."""

    def __init__(self, problems: Problems, proc: str = "/proc", sys: str = "/sys") -> None:
        self.problems = problems
        self.proc = proc
        self.sys = sys
        # (total CpuTimes, {index: CpuTimes}) of the previous call
        self._cores: tuple[CpuTimes, dict[int, CpuTimes]] | None = None
        self._disks: tuple[float, dict[str, DiskCounters]] | None = None  # (monotonic time, ...)
        self._networks: tuple[float, dict[str, NetCounters]] | None = None
        self._block_listing: list[str] | None = None
        self._watched_disks: frozenset[str] = frozenset()
        self._diskstats_rows = -1  # rows of /proc/diskstats when /sys/block was last listed
        # the files read every tick, kept open and read again from their start
        self._files = {
            name: KeptOpen(proc + "/" + name, one_record=name not in ("diskstats", "net/dev"))
            for name in ("stat", "loadavg", "meminfo", "diskstats", "net/dev")
            + tuple("pressure/" + r for r in PRESSURE_RESOURCES)
        }
        self._mount_table = MountTable(proc + "/self/mounts")
        self._watched_mounts: list[tuple[Mount, bool]] = []
        self._statvfs = BoundedStatvfs(STATVFS_TIMEOUT_S)
        self._ticks_to_remote_statvfs = 0
        self._remote_records: dict[str, Record] = {}  # mountpoint -> last record of a network or FUSE mount
        self._d_state_count: int | None = None
        # The first scan waits for the second sample, which has rates too: the first sample
        # is partial anyway, and on a node with thousands of processes it goes out 27 ms sooner.
        self._ticks_to_d_state_scan = 1

    # ---- facts ---------------------------------------------------------------------------

    def facts(self) -> dict[str, Any]:
        uname = os.uname()
        facts: dict[str, Any] = {
            "hostname": uname.nodename,
            "os": os_pretty_name(),
            "kernel": uname.release,
            "cpu_model": None,
            "cpu_count": None,
            "memory_total_bytes": None,
            "boot_time": None,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "block_devices": [],
            "nics": [],
        }
        with self.problems.guard("cpuinfo"):
            facts["cpu_model"], facts["cpu_count"] = cpu_model_and_count(
                read_text(self.proc + "/cpuinfo")
            )
        with self.problems.guard("meminfo"):
            meminfo = parse_meminfo(read_text(self.proc + "/meminfo"), ("MemTotal",))
            facts["memory_total_bytes"] = meminfo["MemTotal"]
        with self.problems.guard("stat"):
            facts["boot_time"] = parse_stat(read_text(self.proc + "/stat"))["btime"]
        with self.problems.guard("block devices"):
            facts["block_devices"] = [self._block_device(n) for n in sorted(self._disk_names())]
        with self.problems.guard("network interfaces"):
            names = sorted(os.listdir(self.sys + "/class/net"))
            facts["nics"] = [self._nic(n) for n in names if shown_nic(n)]
        return facts

    def _block_device(self, name: str) -> Record:
        base = "%s/block/%s" % (self.sys, name)
        size = read_sys(base + "/size")
        rotational = read_sys(base + "/queue/rotational")
        return {
            "name": name,
            "size_bytes": int(size) * SECTOR_BYTES if size is not None else None,
            "model": read_sys(base + "/device/model") or None,
            "rotational": rotational == "1" if rotational is not None else None,
        }

    def _nic(self, name: str) -> Record:
        base = "%s/class/net/%s" % (self.sys, name)
        # speed reads -1, or fails with EINVAL, when the link is down or the driver has no idea
        speed_text = read_sys(base + "/speed")
        speed = int(speed_text) if speed_text is not None else -1
        mtu = read_sys(base + "/mtu")
        return {
            "name": name,
            "speed_mbps": speed if speed >= 0 else None,
            "mac": read_sys(base + "/address") or None,
            "mtu": int(mtu) if mtu is not None else None,
            "operstate": read_sys(base + "/operstate"),
        }

    def close(self) -> None:
        """Release the descriptors kept open (the mount table, the files read every tick)."""
        self._mount_table.close()
        for kept in self._files.values():
            kept.close()

    # ---- sample --------------------------------------------------------------------------

    def sample(self) -> dict[str, Any]:
        sample: dict[str, Any] = {
            "cpu": None,
            "memory": None,
            "pressure": None,
            "tasks": None,
            "disks": [],
            "filesystems": [],
            "networks": [],
        }
        stat: dict[str, Any] = {}
        files = self._files
        with self.problems.guard("cpu"):
            stat = parse_stat(files["stat"].read())
            sample["cpu"] = self._cpu(stat, parse_loadavg(files["loadavg"].read()))
        with self.problems.guard("tasks"):
            sample["tasks"] = {
                "running": stat.get("procs_running"),
                "blocked_io": stat.get("procs_blocked"),
                "d_state_processes": self._d_state_processes(),
            }
        with self.problems.guard("memory"):
            meminfo = parse_meminfo(files["meminfo"].read(), MEMINFO_NAMES)
            sample["memory"] = memory_record(meminfo)
        with self.problems.guard("pressure"):
            sample["pressure"] = self._pressure()
        with self.problems.guard("disks"):
            sample["disks"] = self._disk_records()
        with self.problems.guard("filesystems"):
            sample["filesystems"] = self._filesystem_records()
        with self.problems.guard("networks"):
            sample["networks"] = self._network_records()
        return sample

    def _cpu(self, stat: dict[str, Any], loads: tuple[float, float, float]) -> Record:
        previous, self._cores = self._cores, (stat["cpu"], stat["cores"])
        prev_total: CpuTimes | None = None
        prev_cores: dict[int, CpuTimes] = {}
        if previous is not None:
            prev_total, prev_cores = previous
        record = cpu_percents(prev_total, stat["cpu"])
        record["load_1"], record["load_5"], record["load_15"] = loads
        record["cores"] = [
            cpu_percents(prev_cores.get(index), times, index)
            for index, times in sorted(stat["cores"].items())
        ]
        return record

    def _d_state_processes(self) -> int | None:
        if self._ticks_to_d_state_scan == 0:
            self._d_state_count = count_d_state_processes(self.proc)
            self._ticks_to_d_state_scan = D_STATE_EVERY_TICKS
        self._ticks_to_d_state_scan -= 1
        return self._d_state_count

    def _pressure(self) -> Record | None:
        record: dict[str, float | None] = {}
        for resource in PRESSURE_RESOURCES:
            try:
                text = self._files["pressure/" + resource].read()
            except OSError as exc:
                # No PSI on this kernel (< 4.20, or booted with psi=0): unknown, not zero.
                if exc.errno in (errno.ENOENT, errno.EOPNOTSUPP):
                    return None
                raise
            psi = parse_pressure(text)
            for kind, window, key in PRESSURE_KEYS[resource]:
                value = psi.get(kind, {}).get(window)
                record[key] = round(value, 1) if value is not None else None
        return {name: record[name] for name in PRESSURE_FIELDS}

    def _disk_records(self) -> list[Record]:
        text = self._files["diskstats"].read()
        rows = text.count("\n")
        if rows != self._diskstats_rows:  # a device came or went: /sys/block is listed again
            self._diskstats_rows = rows
            self._block_listing = None
        watched = self._disk_names()
        now = time.monotonic()
        current = parse_diskstats(text, watched)
        previous, self._disks = self._disks, (now, current)
        prev_time, prev = previous if previous is not None else (now, {})
        return [
            disk_record(name, c, prev.get(name), now - prev_time) for name, c in current.items()
        ]

    def _disk_names(self) -> frozenset[str]:
        """Whole disks worth a row, from /sys/block (which lists no partitions).

        Physical devices (those with a ``device`` link) are all kept. Virtual ones (dm-*,
        md*) are kept only at the top of their stack, i.e. with no holders: that is the
        device a file system sits on, and the layers under it would count the same I/O again.
        Empty devices (size 0: card readers, unassembled arrays) are skipped. The decision is
        cached until /proc/diskstats, read every tick anyway, gains or loses rows (a device
        came or went): listing /sys/block every second cost as much as parsing diskstats.
        """
        if self._block_listing is not None:  # listed again when /proc/diskstats changes rows
            return self._watched_disks
        listing = os.listdir(self.sys + "/block")
        self._block_listing = listing
        self._watched_disks = frozenset(n for n in listing if self._is_watched_disk(n))
        return self._watched_disks

    def _is_watched_disk(self, name: str) -> bool:
        if name.startswith(SKIPPED_DISK_PREFIXES):
            return False
        base = "%s/block/%s" % (self.sys, name)
        if read_sys(base + "/size") in (None, "0"):
            return False
        if os.path.exists(base + "/device"):
            return True
        try:
            return not os.listdir(base + "/holders")
        except OSError:
            return True

    def _filesystem_records(self) -> list[Record]:
        text = self._mount_table.read_if_changed()
        if text is not None:
            self._watched_mounts = watched_mounts(parse_mounts(text))
        refresh_remote = self._ticks_to_remote_statvfs == 0
        self._ticks_to_remote_statvfs = (self._ticks_to_remote_statvfs - 1) % REMOTE_STATVFS_EVERY_TICKS
        records = []
        for mount, may_hang in self._watched_mounts:
            if may_hang and not refresh_remote and mount.mountpoint in self._remote_records:
                records.append(self._remote_records[mount.mountpoint])
                continue
            stats: os.statvfs_result | None = None
            with self.problems.guard("statvfs " + mount.mountpoint):
                if may_hang:
                    stats = self._statvfs(mount.mountpoint)
                else:
                    stats = os.statvfs(mount.mountpoint)
            record = filesystem_record(mount, stats)
            if may_hang:
                self._remote_records[mount.mountpoint] = record
            records.append(record)
        return records

    def _network_records(self) -> list[Record]:
        now = time.monotonic()
        current = parse_net_dev(self._files["net/dev"].read(), shown_nic)
        previous, self._networks = self._networks, (now, current)
        prev_time, prev = previous if previous is not None else (now, {})
        return [
            network_record(name, c, prev.get(name), now - prev_time) for name, c in current.items()
        ]


# One interface per container or VM (docker/podman veth, Calico cali, Cilium lxc, VM tap)
# would bury the real NICs and grow without end on a busy node; their traffic shows on the
# bridge or the physical NIC anyway.
PER_WORKLOAD_NIC_PREFIXES = ("veth", "cali", "lxc", "tap")


def shown_nic(name: str) -> bool:
    return name != "lo" and not name.startswith(PER_WORKLOAD_NIC_PREFIXES)


# ---- records from counters (pure) ---------------------------------------------------------


def cpu_percents(
    previous: CpuTimes | None, current: CpuTimes, index: int | None = None
) -> Record:
    """Shares of the CPU time between two /proc/stat readings, in percent (with ``index``
    first when given: a core's record).

    ``system`` includes irq and softirq time, so user + system + steal = total. A counter that
    went backwards (iowait may, per proc(5)) counts as 0.
    """
    record: Record = {} if index is None else {"index": index}
    if previous is not None:
        user, nice, system, idle, iowait, irq, softirq, steal = [
            c - p if c > p else 0 for c, p in zip(current, previous)
        ]
        elapsed = user + nice + system + idle + iowait + irq + softirq + steal
        if elapsed:
            scale = 100.0 / elapsed
            record["total_percent"] = round((elapsed - idle - iowait) * scale, 1)
            record["user_percent"] = round((user + nice) * scale, 1)
            record["system_percent"] = round((system + irq + softirq) * scale, 1)
            record["iowait_percent"] = round(iowait * scale, 1)
            record["steal_percent"] = round(steal * scale, 1)
            return record
    record.update(_NO_CPU_PERCENTS)
    return record


_NO_CPU_PERCENTS: Record = dict.fromkeys(
    ("total_percent", "user_percent", "system_percent", "iowait_percent", "steal_percent")
)


def memory_record(info: dict[str, int]) -> Record:
    """Memory as free(1) of procps-ng shows it.

    used = total - MemAvailable. Kernels before 3.14 have no MemAvailable: available is then
    unknown (None, no estimate) and used falls back to the older free(1) formula,
    total - free - buffers - cache, with cache = Cached + SReclaimable.
    """
    total = info["MemTotal"]
    buffers = info.get("Buffers", 0)
    cached = info.get("Cached", 0) + info.get("SReclaimable", 0)
    available = info.get("MemAvailable")
    if available is not None:
        used = total - available
    else:
        used = total - info["MemFree"] - buffers - cached
    swap_total = info.get("SwapTotal")
    swap_free = info.get("SwapFree")
    record = {
        "total_bytes": total,
        "used_bytes": used,
        "available_bytes": available,
        "cached_bytes": cached,
        "buffers_bytes": buffers,
        "shmem_bytes": info.get("Shmem"),
        "swap_total_bytes": swap_total,
        "swap_used_bytes": (
            swap_total - swap_free if swap_total is not None and swap_free is not None else None
        ),
    }
    return {name: record[name] for name in MEMORY_FIELDS}


def disk_record(
    name: str, current: DiskCounters, previous: DiskCounters | None, elapsed_s: float
) -> Record:
    record: Record = {
        "name": name,
        "read_bytes_per_s": None,
        "write_bytes_per_s": None,
        "read_iops": None,
        "write_iops": None,
        "busy_percent": None,
        "queue_depth": None,
        "await_ms": None,
    }
    # No previous reading, or a counter went backwards (device replaced, 32-bit wrap).
    if previous is None or elapsed_s <= 0 or any(map(operator.lt, current, previous)):
        return record
    d = DiskCounters._make(c - p for c, p in zip(current, previous))
    elapsed_ms = elapsed_s * 1000.0
    ios = d.reads + d.writes
    record["read_bytes_per_s"] = round(d.read_sectors * SECTOR_BYTES / elapsed_s)
    record["write_bytes_per_s"] = round(d.write_sectors * SECTOR_BYTES / elapsed_s)
    record["read_iops"] = round(d.reads / elapsed_s, 1)
    record["write_iops"] = round(d.writes / elapsed_s, 1)
    # io_ticks can run a little ahead of our clock; iostat caps %util at 100 too.
    record["busy_percent"] = round(min(100.0, 100.0 * d.io_ticks_ms / elapsed_ms), 1)
    record["queue_depth"] = round(d.time_in_queue_ms / elapsed_ms, 2)
    record["await_ms"] = round((d.read_ms + d.write_ms) / ios, 2) if ios else None
    return record


def network_record(
    name: str, current: NetCounters, previous: NetCounters | None, elapsed_s: float
) -> Record:
    record: Record = {
        "name": name,
        "rx_bytes_per_s": None,
        "tx_bytes_per_s": None,
        "rx_packets_per_s": None,
        "tx_packets_per_s": None,
        "rx_errors_total": current.rx_errors,
        "tx_errors_total": current.tx_errors,
        "rx_drops_total": current.rx_drops,
        "tx_drops_total": current.tx_drops,
    }
    if previous is None or elapsed_s <= 0 or any(map(operator.lt, current, previous)):
        return record
    record["rx_bytes_per_s"] = round((current.rx_bytes - previous.rx_bytes) / elapsed_s)
    record["tx_bytes_per_s"] = round((current.tx_bytes - previous.tx_bytes) / elapsed_s)
    record["rx_packets_per_s"] = round((current.rx_packets - previous.rx_packets) / elapsed_s, 1)
    record["tx_packets_per_s"] = round((current.tx_packets - previous.tx_packets) / elapsed_s, 1)
    return record


def filesystem_record(mount: Mount, stats: os.statvfs_result | None) -> Record:
    """One mount from its statvfs result, sizes as df(1) computes them; ``stats`` None (the
    call failed or hangs) leaves the sizes unknown."""
    record: Record = {
        "mountpoint": mount.mountpoint,
        "device": mount.device,
        "fstype": mount.fstype,
        "total_bytes": None,
        "used_bytes": None,
        "available_bytes": None,
        "used_percent": None,
        "inodes_used_percent": None,
    }
    if stats is None:
        return record
    used_blocks = stats.f_blocks - stats.f_bfree
    record["total_bytes"] = stats.f_blocks * stats.f_frsize
    record["used_bytes"] = used_blocks * stats.f_frsize
    record["available_bytes"] = stats.f_bavail * stats.f_frsize
    # Of what a non-root user can use: root's reserved blocks count neither as used nor free.
    usable = used_blocks + stats.f_bavail
    if usable > 0:
        record["used_percent"] = round(100.0 * used_blocks / usable, 1)
    # Inodes likewise against what non-root can still get (f_favail), as filesystem_full judges.
    used_inodes = stats.f_files - stats.f_ffree
    if stats.f_files > 0 and used_inodes + stats.f_favail > 0:
        record["inodes_used_percent"] = round(100.0 * used_inodes / (used_inodes + stats.f_favail), 1)
    return record


# ---- which mounts ------------------------------------------------------------------------


def watched_mounts(mounts: Sequence[Mount]) -> list[tuple[Mount, bool]]:
    """[(Mount, may_hang)] for the file systems worth watching, one per file system.

    Real storage only (local, network, FUSE), plus tmpfs on /dev/shm and /tmp, plus an
    overlay root (the probe running in a container). A later mount on the same mount point
    hides the earlier one. Bind mounts and btrfs subvolumes of one device are shown once, at
    the shortest mount point, as df(1) does; devices are compared only when the name says
    which storage it is (a path or ``host:/export``), not for ``tmpfs`` or ``s3fs``-like names.
    """
    by_mountpoint: dict[str, tuple[Mount, bool]] = {}
    for mount in mounts:
        may_hang = _may_hang(mount.fstype)
        if may_hang or _is_local_storage(mount):
            by_mountpoint[mount.mountpoint] = (mount, may_hang)
    best_for_device: dict[str, Mount] = {}
    for mount, _ in by_mountpoint.values():
        if _names_its_storage(mount.device):
            best = best_for_device.get(mount.device)
            if best is None or len(mount.mountpoint) < len(best.mountpoint):
                best_for_device[mount.device] = mount
    return [
        (mount, may_hang)
        for mount, may_hang in by_mountpoint.values()
        if not _names_its_storage(mount.device) or best_for_device[mount.device] is mount
    ]


def _may_hang(fstype: str) -> bool:
    if fstype in NETWORK_FSTYPES:
        return True
    return (fstype == "fuse" or fstype.startswith("fuse.")) and fstype not in PSEUDO_FUSE_FSTYPES


def _is_local_storage(mount: Mount) -> bool:
    if mount.fstype in LOCAL_FSTYPES:
        return True
    if mount.fstype == "tmpfs":
        return mount.mountpoint in WATCHED_TMPFS
    return mount.fstype == "overlay" and mount.mountpoint == "/"


def _names_its_storage(device: str) -> bool:
    return device.startswith("/") or ":" in device


# ---- small readers -----------------------------------------------------------------------


def count_d_state_processes(proc: str) -> int:
    """Processes in uninterruptible sleep (state D), from every /proc/<pid>/stat."""
    count = 0
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        # os.open/os.read: about a third cheaper than open().read() over thousands of files
        try:
            fd = os.open("%s/%s/stat" % (proc, name), os.O_RDONLY)
        except OSError:  # the process exited since the listing
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        if data and parse_pid_state(data) == b"D":
            count += 1
    return count


def cpu_model_and_count(cpuinfo: str) -> tuple[str | None, int | None]:
    """(model name, logical CPUs) from /proc/cpuinfo; the model is None where the kernel does
    not name it (arm64 lists only implementer and part numbers)."""
    model = None
    count = 0
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            count += 1
        elif key == "model name" and model is None:
            model = value.strip()
    return model, count or None


def os_pretty_name() -> str | None:
    """PRETTY_NAME from os-release(5), or None where the file is absent."""
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            text = read_text(path)
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("PRETTY_NAME="):
                values = shlex.split(line[len("PRETTY_NAME=") :])
                return values[0] if values else None
        return None
    return None
