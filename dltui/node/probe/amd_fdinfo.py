"""Processes on AMD GPUs from the kernel's DRM usage stats, where amd-smi is not installed: a
process that has a GPU's render node open shows, in ``/proc/PID/fdinfo/FD``, ``drm-driver:
amdgpu``, ``drm-pdev: 0000:29:00.0`` (which GPU), ``drm-client-id`` (one per open context,
shared by dup'ed fds) and its VRAM (``drm-memory-vram`` on older kernels, ``drm-total-vram``
/ ``drm-resident-vram`` since 6.8; KiB). See the kernel's Documentation/gpu/drm-usage-stats.rst.

A scan reads the link of every fd of every process (only those pointing at ``/dev/dri/`` are
opened), so it runs in its own thread every SCAN_EVERY_S, never inside a sample.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..schema import pci_key

SCAN_EVERY_S = 15.0
_VRAM_KEYS = ("drm-resident-vram", "drm-total-vram", "drm-memory-vram")


def parse_fdinfo(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def vram_mib(info: dict[str, str]) -> float | None:
    for key in _VRAM_KEYS:
        words = info.get(key, "").split()
        if words and words[0].isdigit():
            scale = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}.get(words[1] if len(words) > 1 else "", 1 / 2**20)
            return round(int(words[0]) * scale, 1)
    return None


def scan(proc: str = "/proc") -> dict[tuple[int, ...], list[dict[str, Any]]]:
    """-> {PCI key of the GPU: [{"pid", "name", "gpu_memory_mib"}]}: each process once per GPU,
    its VRAM summed over its DRM clients (fds sharing a client id counted once)."""
    found: dict[tuple[tuple[int, ...], int], dict[str, Any]] = {}
    clients: set[tuple[int, str]] = set()
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        pid, fd_dir = int(entry), os.path.join(proc, entry, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                if not os.readlink(os.path.join(fd_dir, fd)).startswith("/dev/dri/"):
                    continue
                with open(os.path.join(proc, entry, "fdinfo", fd), encoding="utf-8", errors="replace") as f:
                    info = parse_fdinfo(f.read())
            except OSError:
                continue
            key = pci_key(info.get("drm-pdev"))
            client = info.get("drm-client-id", fd)
            if info.get("drm-driver") != "amdgpu" or key is None or (pid, client) in clients:
                continue
            clients.add((pid, client))
            record = found.setdefault((key, pid), {"pid": pid, "name": _comm(proc, entry), "gpu_memory_mib": None})
            mib = vram_mib(info)
            if mib is not None:
                record["gpu_memory_mib"] = round((record["gpu_memory_mib"] or 0.0) + mib, 1)
    out: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for (key, _), record in sorted(found.items(), key=lambda item: item[0][1]):
        out.setdefault(key, []).append(record)
    return out


def _comm(proc: str, pid: str) -> str | None:
    try:
        with open(os.path.join(proc, pid, "comm"), encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


class FdinfoScanner:
    """``scan`` every SCAN_EVERY_S in a thread; ``by_gpu`` holds the newest answer."""

    def __init__(self, proc: str = "/proc", every_s: float = SCAN_EVERY_S) -> None:
        self.proc = proc
        self.every_s = every_s
        self.by_gpu: dict[tuple[int, ...], list[dict[str, Any]]] = {}
        self.scanned = threading.Event()  # the first scan is done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="amd-fdinfo", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.by_gpu = scan(self.proc)
            except OSError:
                pass  # no /proc to read: no processes, as before
            self.scanned.set()
            self._stop.wait(self.every_s)

    def processes(self, bus_id: str | None) -> list[dict[str, Any]]:
        key = pci_key(bus_id)
        return list(self.by_gpu.get(key, [])) if key is not None else []

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
