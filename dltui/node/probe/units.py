"""The training unit(s) and the newest checkpoint: what the node's systemd says, cheaply.

``systemctl show`` is a process (~3–5 ms of CPU with its D-Bus round trip), so the poller
runs it for all configured units together and only every ``UNIT_POLL_S`` (30) seconds, not every
sample. Between polls it reads ``/run/systemd/units/invocation:<unit>`` (a symlink systemd
keeps per running unit: a readlink, microseconds); when an invocation changes, it polls at
once, so a restart shows within one sample while a quiet unit costs next to nothing.

A unit that does not exist says ``load_state = "not-found"`` (systemctl exits 0 for it); a
node without systemd (a container) is noted once, as information, and never asked again.
Stdlib only, Python 3.8.
"""

from __future__ import annotations

import glob
import os
import subprocess
import time
from typing import Any, Callable, Dict, Iterable

from ..schema import SHOW_PROPERTIES, parse_show, unit_record
from .problems import Problems

UNIT_POLL_S = 30.0  # bench/unit_actions.py: a poll costs ~10 ms of node CPU (systemctl + systemd)
SHOW_TIMEOUT_S = 5.0
CHECKPOINT_MAX_FILES = 2000  # a glob matching more is cut off there (bounded work per poll)
INVOCATION_DIR = "/run/systemd/units"

Record = Dict[str, Any]


def newest_file(pattern: str, limit: int = CHECKPOINT_MAX_FILES) -> tuple[str | None, float | None, int]:
    """(path, mtime, files looked at) of the newest file matching ``pattern``; bounded: at
    most ``limit`` matches are stat'ed."""
    best_path: str | None = None
    best_mtime: float | None = None
    seen = 0
    for path in glob.iglob(os.path.expanduser(pattern)):
        if seen >= limit:
            break
        seen += 1
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            continue  # removed between the listing and the stat: a rotating checkpoint
        if best_mtime is None or mtime > best_mtime:
            best_path, best_mtime = path, mtime
    return best_path, best_mtime, seen


class UnitPoller:
    """Polls the configured units and the checkpoint glob; see the module docstring."""

    def __init__(
        self,
        units: Iterable[str],
        checkpoint: str | None,
        problems: Problems,
        run: Callable[..., Any] = subprocess.run,
        poll_s: float = UNIT_POLL_S,
        invocation_dir: str = INVOCATION_DIR,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.units = list(units)
        self.checkpoint = checkpoint
        self.problems = problems
        self.run = run
        self.poll_s = poll_s
        self.invocation_dir = invocation_dir
        self.clock = clock
        self.no_systemd = False
        self.records: list[Record] = []
        self.checkpoint_record: Record | None = None
        self._next = 0.0
        self._links: dict[str, str | None] = {}

    def sample(self) -> tuple[list[Record], Record | None]:
        """(unit records, checkpoint record or None), re-read when due."""
        now = self.clock()
        links = self._read_links() if self.units and not self.no_systemd else {}
        if now >= self._next or links != self._links:
            self._links = links
            self._next = now + self.poll_s
            if self.units and not self.no_systemd:
                self.records = self._show()
            if self.checkpoint:
                self.checkpoint_record = self._checkpoint(self.checkpoint)
        return self.records, self.checkpoint_record

    def _read_links(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for unit in self.units:
            try:
                out[unit] = os.readlink(os.path.join(self.invocation_dir, "invocation:" + unit))
            except OSError:
                out[unit] = None
        return out

    def _show(self) -> list[Record]:
        argv = [
            "systemctl",
            "show",
            "--no-pager",
            "-p",
            ",".join(SHOW_PROPERTIES),
            "--",
        ] + self.units
        try:
            done = self.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                timeout=SHOW_TIMEOUT_S,
                env=dict(os.environ, LC_ALL="C", SYSTEMD_PAGER="cat"),
            )
        except FileNotFoundError:
            return self._without_systemd("no systemctl on this node: unit state is not read")
        except subprocess.TimeoutExpired:
            self.problems.report(
                "units", "systemctl show did not answer within %g s" % SHOW_TIMEOUT_S
            )
            return [dict(r, error="systemd did not answer") for r in self.records]
        out = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0 and not out.strip():
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = err[0] if err else "exit status %d" % done.returncode
            if "not been booted with systemd" in reason or "Failed to connect to bus" in reason:
                return self._without_systemd(
                    "no systemd on this node (%s): unit state is not read" % reason
                )
            self.problems.report("units", "systemctl show: " + reason)
            return [_error_record(u, reason) for u in self.units]
        self.problems.clear("units")
        blocks = parse_show(out)
        if len(blocks) != len(self.units):  # one block per unit, in order; else match by Id
            by_id = {b.get("Id"): b for b in blocks}
            blocks = [by_id.get(u) or {"LoadState": "not-found"} for u in self.units]
        return [unit_record(u, b) for u, b in zip(self.units, blocks)]

    def _without_systemd(self, message: str) -> list[Record]:
        self.no_systemd = True  # said once; never asked again on this connection
        self.problems.clear("units")
        self.problems.note("units", message)
        return [_error_record(u, "no systemd on this node") for u in self.units]

    def _checkpoint(self, pattern: str) -> Record:
        try:
            path, mtime, seen = newest_file(pattern)
        except (OSError, ValueError) as exc:
            return {
                "glob": pattern,
                "newest_path": None,
                "newest_mtime": None,
                "matched_files": 0,
                "error": str(exc),
            }
        return {
            "glob": pattern,
            "newest_path": path,
            "newest_mtime": None if mtime is None else round(mtime, 3),
            "matched_files": seen,
            "error": None,
        }


def unit_of(pid: int, units: Iterable[str], proc: str = "/proc") -> str | None:
    """The configured unit whose cgroup holds ``pid`` (``…/dl_train.service`` in
    /proc/PID/cgroup), or None. One small read per GPU process."""
    try:
        with open("%s/%d/cgroup" % (proc, pid)) as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    for unit in units:
        if "/" + unit + "\n" in text or "/" + unit + "/" in text or text.endswith("/" + unit):
            return unit
    return None


def mark_unit_processes(gpus: list[Record], units: Iterable[str], proc: str = "/proc") -> None:
    """Set ``unit`` on each GPU process (dicts of a collected sample) that belongs to one of
    ``units``; a PID shared by several GPUs is read once."""
    seen: dict[int, str | None] = {}
    for g in gpus:
        for p in g.get("processes") or ():
            pid = p.get("pid")
            if not isinstance(pid, int):
                continue
            if pid not in seen:
                seen[pid] = unit_of(pid, units, proc)
            if seen[pid] is not None:
                p["unit"] = seen[pid]


def _error_record(unit: str, reason: str) -> Record:
    rec = unit_record(unit, {})
    rec["error"] = reason
    return rec
