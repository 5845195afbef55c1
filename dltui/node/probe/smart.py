"""Drive health from smartmontools 7+ (``smartctl -j``), read in a thread off the sampling loop.

``smartctl --scan-open -j`` lists the drives, then ``smartctl -j -a -n standby DEV`` reads
each one (``-n standby``: a spun-down disk is not woken up; it keeps its last reading). This
runs two seconds after start (``FIRST_READ_DELAY_S``) and every ``SMART_EVERY_S`` (5 min) in a
daemon thread: a read costs tens of ms of CPU per drive and can wait seconds on a busy disk,
and SMART counters move over days. The samples carry the newest reading, which the wire sends
only when it changed.

SMART needs root (NVMe admin commands CAP_SYS_ADMIN): as root smartctl runs directly, else
under ``sudo -n`` with its full path. A refusal is said once (``note``), with the sudoers line
that allows exactly the commands run, and sudo is not asked again on that connection (each
refusal is an auth-log line); so is a node without smartctl, or with one older than 7.

The exit status is a bit mask (smartctl(8)): bits 0-1 mean nothing was read (bad command line,
device open failed or asleep); the other bits say the drive was read and something is bad,
which the JSON itself tells in detail, so they are not used. Stdlib only, Python 3.8.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable, Sequence

from ..schema import SUDO, decode_critical_warning, sudo_refused, sudoers_line

SMART_EVERY_S = 300.0
# The first read waits this long after the probe starts: a fleet that starts together puts
# every node's first samples on screen before its smartctl runs (as the kernel log waits).
FIRST_READ_DELAY_S = 2.0
READ_TIMEOUT_S = 60.0  # one smartctl call; a drive stuck in error recovery can take long
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")  # not on a non-root PATH on Debian
MAX_DRIVES = 128
TEXT_LIMIT = 80  # model, serial and error strings come from the drive: kept short

# ATA attribute ids whose raw value is a count operators watch.
ATA_REALLOCATED, ATA_PENDING, ATA_OFFLINE_UNCORRECTABLE, ATA_UDMA_CRC = 5, 197, 198, 199
_COULD_NOT_READ = 0x03  # exit status bits 0 (command line) and 1 (open failed / asleep)

Run = Callable[..., Any]  # subprocess.run's signature


def drive_record(device: str, data: dict[str, Any], read_time: float) -> dict[str, Any]:
    """One ``drive`` record (schema.DRIVE_FIELDS) from ``smartctl -j -a`` output."""
    nvme = _dict(data.get("nvme_smart_health_information_log"))
    status = _dict(data.get("smart_status"))
    dev = _dict(data.get("device"))
    attrs = _ata_raw(data)
    scsi_errors = _dict(data.get("scsi_error_counter_log"))
    warning = _int(nvme.get("critical_warning"))
    media_errors = _int(nvme.get("media_errors"))
    reallocated = attrs.get(ATA_REALLOCATED)
    if scsi_errors:
        # SAS/SCSI: uncorrected read + write errors are its media errors, and its grown defect
        # list (below) its reallocated blocks
        media_errors = _sum(
            _int(_dict(scsi_errors.get(d)).get("total_uncorrected_errors"))
            for d in ("read", "write")
        )
    if reallocated is None:
        reallocated = _int(data.get("scsi_grown_defect_list"))
    passed = status.get("passed")
    capacity = _int(_dict(data.get("user_capacity")).get("bytes")) or _int(
        data.get("nvme_total_capacity")
    )
    return {
        "device": device,
        "type": printable(dev.get("type")),
        "protocol": printable(dev.get("protocol")),
        "model": printable(data.get("model_name") or data.get("scsi_model_name")),
        "serial": printable(data.get("serial_number")),
        "capacity_bytes": capacity,
        "smart_passed": passed if isinstance(passed, bool) else None,
        "critical_warning_mask": warning,
        "critical_warnings": decode_critical_warning(warning),
        "available_spare_percent": _int(nvme.get("available_spare")),
        "available_spare_threshold_percent": _int(nvme.get("available_spare_threshold")),
        "endurance_used_percent": _int(nvme.get("percentage_used")),
        "media_errors_total": media_errors,
        "error_log_entries_total": _int(nvme.get("num_err_log_entries")),
        "unsafe_shutdowns_total": _int(nvme.get("unsafe_shutdowns")),
        "reallocated_sectors_total": reallocated,
        "pending_sectors": attrs.get(ATA_PENDING),
        "offline_uncorrectable_sectors": attrs.get(ATA_OFFLINE_UNCORRECTABLE),
        "udma_crc_errors_total": attrs.get(ATA_UDMA_CRC),
        "temperature_c": _int(_dict(data.get("temperature")).get("current")),
        "power_on_hours": _int(_dict(data.get("power_on_time")).get("hours")),
        "read_time": round(read_time, 3),
        "error": None,
    }


def unreadable_record(
    device: str, reason: str, read_time: float, previous: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The record of a drive that could not be read now: its last reading (if any) with the
    reason, so a drive that stops answering keeps what it said last."""
    rec = dict(previous) if previous else drive_record(device, {}, read_time)
    rec["error"] = printable(reason)
    return rec


def messages(data: dict[str, Any]) -> list[str]:
    """smartctl's own messages (``smartctl.messages[].string``), errors first."""
    items = [m for m in _dict(data.get("smartctl")).get("messages") or () if isinstance(m, dict)]
    items.sort(key=lambda m: m.get("severity") != "error")
    return [str(m.get("string", "")) for m in items if m.get("string")]


def scanned_devices(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """``smartctl --scan[-open] -j`` -> [(device id, the arguments naming it)]. A RAID
    controller's disks share one name (``/dev/bus/0 -d megaraid,1``): their ``-d`` type is
    part of both. Devices the scan could not open are left out."""
    devices = [d for d in data.get("devices") or () if isinstance(d, dict) and d.get("name")]
    devices = [d for d in devices if not d.get("open_error")][:MAX_DRIVES]
    out = []
    for d in devices:
        name, kind = str(d["name"]), str(d.get("type") or "")
        if "," in kind:  # a disk behind a RAID controller: only its -d type reaches it
            out.append(("%s %s" % (name, kind), ["-d", kind, name]))
        else:  # smartctl's own detection on open picks the same type the scan did
            out.append((name, [name]))
    return out


class SmartReader:
    """Reads every drive now and then; ``records`` is the newest reading (replaced whole, so
    the sampling thread reads it without a lock) and ``note`` the one thing to tell the
    operator (no smartctl, sudo refused), or None."""

    def __init__(
        self,
        every_s: float = SMART_EVERY_S,
        first_delay_s: float = 0.0,
        run: Run | None = None,
        root: bool | None = None,
        find: Callable[[str], str | None] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.every_s = every_s
        self.first_delay_s = first_delay_s
        self.run = run or run_process
        self.root = os.geteuid() == 0 if root is None else root
        self.find = find or find_tool
        self.clock = clock
        self.records: list[dict[str, Any]] = []
        self.note: str | None = None
        self.given_up = False  # no smartctl, or too old: never asked again on this connection
        self.reads = 0
        self._smartctl: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="smart", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        if self._stop.wait(self.first_delay_s):
            return
        while True:
            try:
                self.records = self.read()
            except Exception as exc:  # noqa: BLE001 - a bug here must not end the probe
                self.note = "drive health: %s" % (str(exc).strip() or type(exc).__name__)
            if self.given_up or self._stop.wait(self.every_s):
                return

    def read(self) -> list[dict[str, Any]]:
        """One pass over every drive (blocking: the thread's job, or a burn-in's baseline)."""
        if self._smartctl is None:
            self._smartctl = self.find("smartctl")
            if self._smartctl is None:
                return self._give_up(
                    "smartctl not found: drive health (SMART) is not read on this node "
                    "(install smartmontools 7 or newer)"
                )
            if not self.root and self.find("sudo") is None:
                return self._give_up(
                    "drive health is not read: SMART needs root, and there is no sudo"
                )
        self.reads += 1
        scan_argv = as_root([self._smartctl, "--scan-open", "-j"], self.root)
        scan, code, err = self._json(scan_argv)
        if scan is None:
            if sudo_refused(scan_argv, err):
                return self._refused(scan_argv, err)
            if code is not None and code & 1:
                return self._give_up(
                    "smartctl here has no JSON output (smartmontools older than 7.0): "
                    "drive health is not read"
                )
            self.note = "drive health: smartctl --scan-open failed (%s)" % (err or "no output")
            return self.records
        previous = {r["device"]: r for r in self.records}
        records = []
        for device, args in scanned_devices(scan):
            argv = as_root([self._smartctl, "-j", "-a", "-n", "standby", *args], self.root)
            records.append(self._read_drive(device, argv, previous.get(device)))
        self.note = None
        return records

    def _read_drive(
        self, device: str, argv: list[str], previous: dict[str, Any] | None
    ) -> dict[str, Any]:
        now = self.clock()
        data, code, err = self._json(argv)
        if data is None:
            return unreadable_record(device, err or "smartctl printed no JSON", now, previous)
        said = messages(data)
        if code is not None and code & _COULD_NOT_READ:
            text = " ".join(said)
            if "STANDBY" in text or "SLEEP" in text:  # -n standby: asleep, not broken
                return (
                    dict(previous)
                    if previous
                    else unreadable_record(device, "asleep (standby)", now)
                )
            return unreadable_record(
                device, said[0] if said else "exit status %d" % code, now, previous
            )
        return drive_record(device, data, now)

    def _json(self, argv: Sequence[str]) -> tuple[dict[str, Any] | None, int | None, str]:
        """(parsed stdout or None, exit status or None, first stderr line)."""
        import subprocess  # in the reader's thread: not on the probe's way to its first sample

        try:
            done = self.run(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                timeout=READ_TIMEOUT_S,
                env=dict(os.environ, LC_ALL="C"),
            )
        except subprocess.TimeoutExpired:
            return None, None, "no answer within %g s" % READ_TIMEOUT_S
        except OSError as exc:  # not found, not executable by this account
            return None, None, "%s: %s" % (argv[0], exc.strerror or exc)
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        try:
            data = json.loads(done.stdout.decode("utf-8", "replace"))
        except ValueError:
            data = None
        return (data if isinstance(data, dict) else None), done.returncode, (err[0] if err else "")

    def _refused(self, scan_argv: list[str], err: str) -> list[dict[str, Any]]:
        """sudo will not run smartctl: find the drives without privilege (``--scan`` opens
        nothing) and say once which sudoers line allows exactly the reads dltui runs."""
        assert self._smartctl is not None
        plain, _, _ = self._json([self._smartctl, "--scan", "-j"])
        commands = [scan_argv] + [
            as_root([self._smartctl, "-j", "-a", "-n", "standby", *args], False)
            for _, args in scanned_devices(plain or {})
        ]
        # Not asked again on this connection: every refusal is a line in the node's auth log
        # (and a mail to root on some sites); the next connection tries once more.
        self.given_up = True
        self.note = (
            "drive health is not read: sudo refused smartctl (%s). dltui never types a password; "
            "to allow exactly its SMART reads (from the next connection), add with visudo: %s"
            % (err.replace("sudo: ", ""), sudoers_line(current_user(), commands))
        )
        return []

    def _give_up(self, note: str) -> list[dict[str, Any]]:
        self.given_up = True
        self.note = note
        return []


def run_process(*args: Any, **kwargs: Any) -> Any:
    """``subprocess.run``, imported when first run: ~3.5 ms of a cold start otherwise."""
    import subprocess

    return subprocess.run(*args, **kwargs)


def as_root(argv: Sequence[str], root: bool) -> list[str]:
    """``argv`` (binary by full path first) as it runs: directly as root, else ``sudo -n``."""
    return list(argv) if root else [SUDO, "-n", *argv]


def current_user() -> str:
    """This account's name for a sudoers line; ``#UID`` (sudoers' own syntax) when it has none."""
    uid = os.geteuid()
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return "#%d" % uid


def find_tool(name: str) -> str | None:
    """``name`` on PATH, or in the sbin folders a non-root PATH leaves out."""
    import shutil  # (and the archive modules under it) in the reader's thread, not at start

    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    return shutil.which(name, path=os.pathsep.join(dirs + [d for d in SBIN_DIRS if d not in dirs]))


def _ata_raw(data: dict[str, Any]) -> dict[int, int | None]:
    table = _dict(data.get("ata_smart_attributes")).get("table") or ()
    out: dict[int, int | None] = {}
    for attr in table:
        if isinstance(attr, dict) and isinstance(attr.get("id"), int):
            out[attr["id"]] = _int(_dict(attr.get("raw")).get("value"))
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sum(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def printable(value: Any) -> str | None:
    """A string from the drive or smartctl (or a Prometheus label), printable characters only,
    cut to TEXT_LIMIT."""
    if value is None:
        return None
    text = "".join(ch for ch in str(value) if ch.isprintable()).strip()
    return text[:TEXT_LIMIT] or None
