"""NVIDIA XID lines and OOM kills from the kernel log, read incrementally in a background thread.

Sources, the first that works:

1. the journal: ``journalctl -k -o json --grep 'NVRM: …|Killed process'`` over this boot, then
   one long-lived ``journalctl -k -f --after-cursor`` the last entry seen (a journalctl per poll
   would open every journal file every few seconds: tens of ms each time on a big journal).
   Needs root or group systemd-journal/adm/wheel; without them journalctl quietly shows no
   kernel messages, which is how we notice.
2. ``/dev/kmsg``, the kernel ring buffer ``dmesg`` prints (readable by root where
   ``kernel.dmesg_restrict=1``). The open file keeps its position, so each poll reads only
   the records added since the last one.

Neither readable: one plain note, then silence. Polling runs in a thread every few seconds,
so a slow journal never delays a sample.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import re
import subprocess
import threading
import time
from typing import Any, Callable, Optional, Tuple, Union

from ..schema import oom_event, pci_key, xid_event
from .problems import Problems
from .problems import describe as describe_error

POLL_S = 5.0
CLOSE_WAIT_S = 2.0
SOURCE = "kernel log"  # the Problems source name of the one note

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+),?\s*(.*)")
# "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus." carries no XID number; it is XID 79.
_FELL_OFF = re.compile(r"NVRM: GPU (?:at PCI:)?([0-9a-fA-F:.]+): GPU has fallen off the bus")
# mm/oom_kill.c: "Out of memory: Killed process 1234 (python3) total-vm:…kB, anon-rss:…kB, …",
# "Memory cgroup out of memory: Killed process …" when a cgroup limit (a container, a Slurm
# job, a systemd MemoryMax) was hit; kernels before 4.19 printed a bare "Killed process …".
_OOM = re.compile(
    r"(?:(Memory cgroup out of memory|Out of memory)[^:]*: )?Killed process (\d+) \((.*?)\)(?:.*?anon-rss:(\d+)kB)?"
)
_JOURNAL_PATTERN = "NVRM: (Xid|GPU .*fallen off the bus)|Killed process"
_PERMISSION_HINT = "not seeing messages from other users and the system"

Line = Tuple[float, str, Optional[int]]  # (wall time, text, µs since boot or None)


def parse_line(text: str) -> tuple[str, int, str] | None:
    """-> (pci, xid, detail) for an XID (or fallen-off-the-bus) line, else None."""
    match = _XID.search(text)
    if match:
        return match.group(1), int(match.group(2)), match.group(3).strip()
    match = _FELL_OFF.search(text)
    if match:
        return match.group(1), 79, "GPU has fallen off the bus"
    return None


def parse_oom(text: str) -> tuple[int, str, bool, int | None] | None:
    """-> (pid, process name, in a memory cgroup, anon RSS bytes or None) for an OOM kill."""
    match = _OOM.search(text)
    if not match or not (match.group(1) or text.lstrip().startswith("Killed process")):
        return None
    rss_kb = match.group(4)
    return (
        int(match.group(2)),
        match.group(3),
        (match.group(1) or "").startswith("Memory cgroup"),
        int(rss_kb) * 1024 if rss_kb else None,
    )


def read_boot_id(path: str = "/proc/sys/kernel/random/boot_id") -> str | None:
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


class JournalSource:
    """The kernel messages in the systemd journal, after a remembered cursor."""

    name = "journal"

    def __init__(self, run: Callable[..., Any], popen: Callable[..., Any] = subprocess.Popen) -> None:
        self.run = run
        self.popen = popen
        self.cursor: str | None = None
        self.backfilled = False
        self.grep = True  # journalctl without PCRE2 (or older than v237) has no --grep
        self.follower: Any = None  # the long-lived journalctl -f (a Popen), after the backfill
        self._partial = b""

    def open(self) -> str | None:
        """-> None when usable, else the reason in plain words."""
        try:
            entries, stderr = self._journalctl(["-b", "-n", "1"], grep=False)
        except OSError as exc:
            return "journalctl: %s" % (exc.strerror or exc)
        except RuntimeError as exc:
            return str(exc)
        if not entries:
            if _PERMISSION_HINT in stderr:
                return "journalctl: no permission to read the system journal"
            return "journalctl: the journal holds no kernel messages for this boot"
        self.cursor = entries[-1].get("__CURSOR")
        return None

    def read(self) -> list[Line]:
        """New kernel lines as (time, text, µs since boot or None): the whole boot once, then
        after the cursor."""
        # The boot's backfill greps (one pass over the whole boot); the follower then prints
        # every kernel line after the cursor and they are filtered here. With --grep the
        # cursor would only move on matching lines. Lines between open() and the backfill
        # come twice; their ids make that harmless.
        if self.backfilled and self.cursor:
            entries = self._follow()
            if entries and entries[-1].get("__CURSOR"):
                self.cursor = entries[-1]["__CURSOR"]
        else:
            entries, _ = self._journalctl(["-b"], grep=self.grep)
            self.backfilled = True
            if self.cursor is None and entries and entries[-1].get("__CURSOR"):
                self.cursor = entries[-1][
                    "__CURSOR"
                ]  # (the grep's last match: older than open()'s)
        lines: list[Line] = []
        for entry in entries:
            text = entry.get("MESSAGE")
            if isinstance(text, list):  # journald stores non-UTF-8 text as a byte array
                text = bytes(text).decode("utf-8", "replace")
            if not isinstance(text, str):
                continue
            usec = entry.get("__REALTIME_TIMESTAMP")
            when = int(usec) / 1e6 if usec else time.time()
            since_boot = entry.get("_SOURCE_MONOTONIC_TIMESTAMP")
            lines.append((when, text, int(since_boot) if since_boot else None))
        return lines

    def _follow(self) -> list[dict[str, Any]]:
        """The entries the follower printed since the last call. A follower that ended
        (journalctl killed, the journal gone) is read to its end, then started again after the
        cursor on the next call."""
        if self.follower is None:
            # --no-tail: journalctl -f before systemd ~v254 shows only 10 lines past the cursor
            argv = [
                "journalctl",
                "-k",
                "-f",
                "--no-tail",
                "-o",
                "json",
                "--no-pager",
                "--after-cursor",
                self.cursor,
            ]
            self.follower = self.popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=dict(os.environ, LC_ALL="C"),
                preexec_fn=_die_with(os.getpid()),
            )
            os.set_blocking(self.follower.stdout.fileno(), False)
        chunks: list[bytes] = []
        ended = False
        while True:
            try:
                chunk = os.read(self.follower.stdout.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                ended = True
                break
            chunks.append(chunk)
        data = self._partial + b"".join(chunks)
        *complete, self._partial = data.split(b"\n")
        if ended:
            self.close()
        entries: list[dict[str, Any]] = []
        for line in complete:
            if line.strip():
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    continue
        return entries

    def close(self) -> None:
        if self.follower is not None:
            if self.follower.poll() is None:
                self.follower.terminate()
                try:
                    self.follower.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self.follower.kill()
            self.follower.stdout.close()
            self.follower = None
            self._partial = b""

    def _journalctl(self, where: list[str], grep: bool) -> tuple[list[dict[str, Any]], str]:
        argv = ["journalctl", "-k", "-o", "json", "--no-pager"] + where
        if grep:
            argv += ["--grep", _JOURNAL_PATTERN]
        done = self.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=20,
            env=dict(os.environ, LC_ALL="C"),
        )
        stderr = done.stderr or ""
        # With --grep, "nothing matched" is exit status 1 with nothing on stderr.
        if done.returncode not in (0, 1) or (done.returncode == 1 and stderr.strip()):
            if grep and ("grep" in stderr or "pattern" in stderr):
                self.grep = False
                return self._journalctl(where, grep=False)
            raise RuntimeError(
                "journalctl failed: %s"
                % (stderr.strip().splitlines() or ["exit %d" % done.returncode])[0]
            )
        entries: list[dict[str, Any]] = []
        for line in (done.stdout or "").splitlines():
            if line.strip():
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    continue
        return entries, stderr


class KmsgSource:
    """``/dev/kmsg``: one record per read; the open file remembers where we are."""

    name = "dmesg"

    def __init__(self, path: str = "/dev/kmsg") -> None:
        self.path = path
        self.fd: int | None = None

    def open(self) -> str | None:
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            return "%s: %s" % (self.path, exc.strerror or exc)
        return None

    def read(self) -> list[Line]:
        lines: list[Line] = []
        if self.fd is None:
            return lines
        wall, mono = time.time(), time.monotonic()
        while True:
            try:
                record = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:  # records were overwritten before we got to them
                continue
            if not record:
                break
            parsed = parse_kmsg_record(record)
            if parsed is not None:
                since_boot_s, text = parsed
                lines.append((wall - (mono - since_boot_s), text, int(round(since_boot_s * 1e6))))
        return lines

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


Source = Union[JournalSource, KmsgSource]


def _find_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None


_PRCTL = _find_prctl()  # looked up here: the forked child must not dlopen (it may deadlock)


def _die_with(parent_pid: int) -> Callable[[], None]:
    """For the journalctl child: SIGTERM it when the probe dies, even by SIGKILL (Linux's
    PR_SET_PDEATHSIG); a follower idle on a quiet journal would otherwise linger until the
    kernel logs something. A parent already gone before prctl took effect: exit at once."""

    def in_child() -> None:
        if _PRCTL is not None:
            _PRCTL(1, 15)  # PR_SET_PDEATHSIG, SIGTERM
        if os.getppid() != parent_pid:
            os._exit(0)

    return in_child


def parse_kmsg_record(record: bytes) -> tuple[float, str] | None:
    """``b"4,812,93112233,-;NVRM: Xid …\\n SUBSYSTEM=pci"`` -> (93.112233, "NVRM: Xid …")."""
    head, sep, body = record.partition(b";")
    fields = head.split(b",")
    if not sep or len(fields) < 3:
        return None
    try:
        since_boot_s = int(fields[2]) / 1e6
    except ValueError:
        return None
    return since_boot_s, body.split(b"\n", 1)[0].decode("utf-8", "replace")


class KernelLog:
    """XID and OOM-kill events for the probe: ``events()`` returns those found since the last call.

    The thread starts on the first ``events()`` call; ``set_gpus`` maps PCI ids to indexes.
    """

    def __init__(
        self,
        problems: Problems,
        run: Callable[..., Any] = subprocess.run,
        kmsg_path: str = "/dev/kmsg",
        poll_s: float = POLL_S,
        popen: Callable[..., Any] = subprocess.Popen,
    ) -> None:
        self.problems = problems
        self.run = run
        self.popen = popen
        self.kmsg_path = kmsg_path
        self.poll_s = poll_s
        # from the thread: ("xid", (time, pci, xid, detail, line id)) or ("oom-kill", event)
        self._found: collections.deque[tuple[str, Any]] = collections.deque()
        self._boot_id = read_boot_id()
        self._note: str | None = None
        self._gpu_by_pci: dict[tuple[int, ...] | None, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.first_poll = threading.Event()  # set once the first poll is done (or failed)

    def set_gpus(self, gpus: list[dict[str, Any]]) -> None:
        """``gpus``: the facts' GPU dicts (``index``, ``bus_id``)."""
        self._gpu_by_pci = {
            pci_key(g.get("bus_id")): g.get("index") for g in gpus if g.get("bus_id")
        }

    def events(self) -> list[dict[str, Any]]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._poll, name="kernel-log", daemon=True)
            self._thread.start()
        note, self._note = self._note, None
        if note:
            self.problems.report(SOURCE, note)
        events: list[dict[str, Any]] = []
        while self._found:
            kind, found = self._found.popleft()
            if kind == "xid":  # PCI ids become GPU indexes here: the facts may come after the line
                when, pci, xid, detail, line_id = found
                found = xid_event(
                    when, pci, xid, detail, self._gpu_by_pci.get(pci_key(pci)), line_id
                )
            events.append(found)
        return events

    def close(self) -> None:
        """Stops the thread and waits a moment for it: it ends the journalctl it follows with,
        which must not outlive the probe."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(CLOSE_WAIT_S)

    def _poll(self) -> None:
        source = self._open_source()
        if source is None:
            self.first_poll.set()
            return
        try:
            while True:
                try:
                    lines = source.read()
                except Exception as exc:  # noqa: BLE001 - a broken journal must not kill the probe
                    self._note = "XIDs from the %s: %s" % (source.name, describe_error(exc))
                    lines = []
                for when, text, since_boot_us in lines:
                    event = self._event(when, text, since_boot_us)
                    if event is not None:
                        self._found.append(event)
                self.first_poll.set()
                if self._stop.wait(self.poll_s):
                    return
        finally:
            if hasattr(source, "close"):
                source.close()

    def _event(self, when: float, text: str, since_boot_us: int | None) -> tuple[str, Any] | None:
        line_id = None
        if self._boot_id and since_boot_us is not None:
            line_id = "%s/%d" % (self._boot_id, since_boot_us)
        xid = parse_line(text)
        if xid is not None:
            return "xid", (when, *xid, line_id)
        oom = parse_oom(text)
        if oom is not None:
            return "oom-kill", oom_event(when, *oom, line_id=line_id)
        return None

    def _open_source(self) -> Source | None:
        reasons: list[str] = []
        for source in (JournalSource(self.run, self.popen), KmsgSource(self.kmsg_path)):
            reason = source.open()
            if reason is None:
                return source
            reasons.append(reason)
        self._note = (
            "XIDs and OOM kills are not read from the kernel log (%s): "
            "run as root or add the user to group systemd-journal or adm"
            % "; ".join(reasons)
        )
        return None
