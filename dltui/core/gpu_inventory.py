"""Which GPUs each node has listed, remembered across dltui sessions.

A GPU that fell off the bus and a node rebooted since: the node now lists seven GPUs and
nothing in this session says it had eight. ``gpu_missing`` asks this inventory which GPUs
(by UUID) a node listed before and does not list now. It is written only when a node lists
a GPU it never listed before, or when the operator accepts a change (acknowledging the alert
forgets the gone GPUs). A node answering under the same name with another hostname is
another machine: its entry starts over.

The file is JSON at ``$XDG_STATE_HOME/dltui/gpu-inventory.json`` (``~/.local/state/…``). An
unreadable one is set aside as ``….corrupt`` and the inventory starts empty. Sessions running
at once write only the nodes they changed, merged into the file under a lock. Nodes met
together (a fleet starting, thousands from Prometheus) are written together: one file write
per WRITE_EVERY_S at most, not one per node, whose cost would grow with the square of the
fleet; what is still pending is written at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import time

try:
    import fcntl
except ImportError:  # not POSIX: sessions do not lock each other out, each still merges
    fcntl = None  # type: ignore[assignment]
from dataclasses import dataclass
from pathlib import Path

from dltui.state_dir import open_private, state_dir

from .models import GpuFacts

REFRESH_LISTED_S = 3600.0  # "listed until" is kept to the hour: one write a node an hour at most
WRITE_EVERY_S = 2.0  # changes arriving closer together than this share one file write


def default_path() -> Path:
    return state_dir() / "gpu-inventory.json"


@dataclass(frozen=True)
class KnownGpu:
    uuid: str
    index: int
    name: str | None
    bus_id: str | None
    last_listed: float  # when a session last saw the node list it

    def describe(self) -> str:
        parts = [p for p in (self.name, f"bus {self.bus_id}" if self.bus_id else None) if p]
        return f"GPU{self.index} {self.uuid}" + (f" ({', '.join(parts)})" if parts else "")


class GpuInventory:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.nodes: dict[str, dict] = self._load()
        self._changed: set[str] = set()  # the nodes this session writes (others are left as found)
        self._pending = False  # changes not yet in the file
        self._written_at = float("-inf")  # monotonic time of the last write
        atexit.register(self.flush)

    def reconcile(
        self, node: str, hostname: str | None, gpus: list[GpuFacts], now: float | None = None
    ) -> list[KnownGpu]:
        """The GPUs ``node`` listed before and does not list now; records the ones it lists."""
        now = time.time() if now is None else now
        entry = self.nodes.get(node)
        if entry is None or entry.get("hostname") != hostname:
            entry = {"hostname": hostname, "gpus": {}}
        known: dict = entry["gpus"]
        listed = {g.uuid: g for g in gpus if g.uuid}
        gone = [_known(uuid, rec) for uuid, rec in known.items() if uuid not in listed]
        changed = self.nodes.get(node) is not entry or any(
            uuid not in known or now - float(known[uuid].get("last_listed", 0.0)) > REFRESH_LISTED_S
            for uuid in listed
        )
        for uuid, g in listed.items():
            known[uuid] = {"index": g.index, "name": g.name, "bus_id": g.bus_id, "last_listed": now}
        self.nodes[node] = entry
        if changed:
            self._changed.add(node)
            self._pending = True
        self.flush_if_due()
        return sorted(gone, key=lambda k: k.index)

    def flush_if_due(self) -> None:
        """Writes what is pending once WRITE_EVERY_S has passed since the last write (the
        dashboard calls it on its tick, so a quiet fleet's last burst is not left to exit)."""
        if self._pending and time.monotonic() - self._written_at >= WRITE_EVERY_S:
            self.flush()

    def forget(self, node: str, uuids: list[str]) -> None:
        """The operator accepted that these GPUs are gone (an RMA, a swapped board)."""
        known = self.nodes.get(node, {}).get("gpus", {})
        if any(known.pop(uuid, None) is not None for uuid in list(uuids)):
            self._changed.add(node)
            self._pending = True
            self.flush()  # the operator's decision is written at once

    def _load(self, set_aside: bool = True) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("gpus"), dict) for v in data.values()
            ):
                raise ValueError("not an inventory")
            return data
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            if set_aside:
                try:
                    self.path.replace(self.path.with_name(self.path.name + ".corrupt"))
                except OSError:
                    pass
            return {}

    def flush(self) -> None:
        """This session's nodes merged into the file as it is now, under a lock, replaced
        atomically; a read-only home costs the memory across sessions, nothing else."""
        if not self._pending:
            return
        self._pending = False
        self._written_at = time.monotonic()
        try:
            lock_fd = open_private(self.path.with_name(self.path.name + ".lock"), os.O_WRONLY)
            with open(lock_fd, "a") as lock:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                merged = self._load(set_aside=False)
                merged.update({name: self.nodes[name] for name in self._changed})
                tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
                with open(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as f:
                    f.write(json.dumps(merged, indent=1, sort_keys=True))
                tmp.replace(self.path)
        except OSError:
            pass


def _known(uuid: str, rec: dict) -> KnownGpu:
    return KnownGpu(
        uuid,
        int(rec.get("index", -1)),
        rec.get("name"),
        rec.get("bus_id"),
        float(rec.get("last_listed", 0.0)),
    )
