"""This machine through psutil, for the local view where there is no Linux /proc (macOS, BSD).

Same shape as the probe's ``Collector``: facts once, a collected sample per call. Fields that
psutil cannot give on a platform stay None. GPUs come from the probe's GPU code, which only
needs nvidia-smi or NVML, not /proc.
"""

from __future__ import annotations

import os
import platform
import socket
import time

import psutil

from dltui.node.probe.gpu import open_gpu
from dltui.node.probe.problems import Problems

_SKIP_FS = {"devfs", "autofs", "nullfs", "tmpfs", "devtmpfs", "proc", "sysfs", "overlay", "squashfs"}


class PsutilCollector:
    def __init__(self, interval_s: float = 1.0):
        self.interval_s = interval_s
        self.problems = Problems()
        self.gpu, self.gpu_source, self.gpu_note = open_gpu(self.problems, interval_s)
        self._prev: tuple[float, object, object] | None = None
        psutil.cpu_times_percent(percpu=True)  # prime: the first call compares with boot

    def set_interval(self, interval_s: float) -> None:
        self.interval_s = interval_s

    def facts(self) -> dict:
        facts = {
            "hostname": socket.gethostname(),
            "os": f"{platform.system()} {platform.release()}",
            "kernel": platform.release(),
            "cpu_model": platform.processor() or None,
            "cpu_count": psutil.cpu_count(),
            "memory_total_bytes": psutil.virtual_memory().total,
            "boot_time": psutil.boot_time(),
            "python": platform.python_version(),
            "gpu_source": self.gpu_source,
            "gpu_note": self.gpu_note,
            "nics": [
                {"name": name, "speed_mbps": s.speed or None, "mtu": s.mtu, "operstate": "up" if s.isup else "down"}
                for name, s in psutil.net_if_stats().items()
                if not name.startswith("lo")
            ],
            "gpus": [],
        }
        if self.gpu is not None:
            with self.problems.guard("gpu facts"):
                facts.update(self.gpu.facts())
        return facts

    def sample(self) -> dict:
        now = time.monotonic()
        per_core = psutil.cpu_times_percent(percpu=True)
        cores = [_cpu(c) | {"index": i} for i, c in enumerate(per_core)]
        total = _average(cores)
        load = os.getloadavg() if hasattr(os, "getloadavg") else (None, None, None)
        vm, sw = psutil.virtual_memory(), psutil.swap_memory()
        disks, nets = psutil.disk_io_counters(perdisk=True) or {}, psutil.net_io_counters(pernic=True) or {}
        prev, self._prev = self._prev, (now, disks, nets)
        sample = {
            "time": round(time.time(), 3),
            "cpu": total | {"load_1": load[0], "load_5": load[1], "load_15": load[2], "cores": cores},
            "memory": {
                "total_bytes": vm.total, "used_bytes": vm.total - vm.available, "available_bytes": vm.available,
                "cached_bytes": getattr(vm, "cached", None), "buffers_bytes": getattr(vm, "buffers", None),
                "shmem_bytes": getattr(vm, "shared", None), "swap_total_bytes": sw.total, "swap_used_bytes": sw.used,
            },
            "pressure": None,
            "tasks": None,
            "disks": _disks(disks, prev, now),
            "filesystems": _filesystems(),
            "networks": _networks(nets, prev, now),
            "gpus": [],
        }
        if self.gpu is not None:
            with self.problems.guard("gpu"):
                sample["gpus"] = self.gpu.sample()
        return sample

    def events(self) -> list:
        return []

    def close(self) -> None:
        if self.gpu is not None:
            self.gpu.close()


def _cpu(c) -> dict:
    idle = getattr(c, "idle", 0.0)
    return {
        "total_percent": round(100.0 - idle, 1),
        "user_percent": round(c.user, 1),
        "system_percent": round(c.system, 1),
        "iowait_percent": getattr(c, "iowait", None),
        "steal_percent": getattr(c, "steal", None),
    }


def _average(cores: list[dict]) -> dict:
    keys = ("total_percent", "user_percent", "system_percent", "iowait_percent", "steal_percent")
    out = {}
    for k in keys:
        vals = [c[k] for c in cores if c[k] is not None]
        out[k] = round(sum(vals) / len(vals), 1) if vals else None
    return out


def _rate(new: float, old: float, dt: float) -> float | None:
    """Per second; None when the counter went backwards (a reset): unknown, not 0."""
    return None if new < old else round((new - old) / dt, 1)


def _disks(disks: dict, prev, now: float) -> list[dict]:
    out = []
    for name, d in disks.items():
        rec = dict.fromkeys(("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "busy_percent",
                             "queue_depth", "await_ms"))
        rec["name"] = name
        old = prev[1].get(name) if prev else None
        if old is not None:
            dt = max(now - prev[0], 1e-6)
            rec["read_bytes_per_s"] = _rate(d.read_bytes, old.read_bytes, dt)
            rec["write_bytes_per_s"] = _rate(d.write_bytes, old.write_bytes, dt)
            rec["read_iops"] = _rate(d.read_count, old.read_count, dt)
            rec["write_iops"] = _rate(d.write_count, old.write_count, dt)
            if hasattr(d, "busy_time"):
                busy = _rate(d.busy_time, old.busy_time, dt * 10)
                rec["busy_percent"] = None if busy is None else min(100.0, busy)
        out.append(rec)
    return out


def _networks(nets: dict, prev, now: float) -> list[dict]:
    out = []
    for name, n in nets.items():
        if name.startswith("lo"):
            continue
        rec = {"name": name, "rx_bytes_per_s": None, "tx_bytes_per_s": None, "rx_packets_per_s": None,
               "tx_packets_per_s": None, "rx_errors_total": n.errin, "tx_errors_total": n.errout,
               "rx_drops_total": n.dropin, "tx_drops_total": n.dropout}
        old = prev[2].get(name) if prev else None
        if old is not None:
            dt = max(now - prev[0], 1e-6)
            rec["rx_bytes_per_s"] = _rate(n.bytes_recv, old.bytes_recv, dt)
            rec["tx_bytes_per_s"] = _rate(n.bytes_sent, old.bytes_sent, dt)
            rec["rx_packets_per_s"] = _rate(n.packets_recv, old.packets_recv, dt)
            rec["tx_packets_per_s"] = _rate(n.packets_sent, old.packets_sent, dt)
        out.append(rec)
    return out


def _filesystems() -> list[dict]:
    out = []
    for part in psutil.disk_partitions(all=False):
        if part.fstype in _SKIP_FS and part.mountpoint not in ("/dev/shm", "/tmp"):
            continue
        try:
            u = psutil.disk_usage(part.mountpoint)
        except OSError:
            continue
        out.append({"mountpoint": part.mountpoint, "device": part.device, "fstype": part.fstype,
                    "total_bytes": u.total, "used_bytes": u.used, "available_bytes": u.free,
                    "used_percent": u.percent, "inodes_used_percent": None})
    return out
