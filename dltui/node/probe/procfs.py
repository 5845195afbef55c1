"""Parsers for the text of /proc files. Pure functions: text in, numbers out, no file I/O.

Counters are returned raw (jiffies, sectors, bytes since boot); turning them into rates is the
collector's job (``host.py``). Formats follow proc(5) and Documentation/ABI of the kernel.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Collection, Container, NamedTuple, TypeVar


# /proc/stat columns we use, in kernel order. guest and guest_nice are left out on purpose:
# the kernel already counts them inside user and nice, adding them would count them twice.
class CpuTimes(NamedTuple):
    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int


class DiskCounters(NamedTuple):
    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    io_ticks_ms: int
    time_in_queue_ms: int


class NetCounters(NamedTuple):
    rx_bytes: int
    rx_packets: int
    rx_errors: int
    rx_drops: int
    tx_bytes: int
    tx_packets: int
    tx_errors: int
    tx_drops: int


class Mount(NamedTuple):
    device: str
    mountpoint: str
    fstype: str
    options: str


Text = TypeVar("Text", str, bytes)

SECTOR_BYTES = 512  # diskstats counts 512-byte sectors whatever the device's block size

# The columns each record takes, in its fields' order: net/dev after the name (rx bytes,
# packets, errs, drop, then tx from the ninth), diskstats from the line's start.
_NET_COLUMNS = operator.itemgetter(0, 1, 2, 3, 8, 9, 10, 11)
_DISK_COLUMNS = operator.itemgetter(3, 5, 6, 7, 9, 10, 12, 13)
# A record from an iterable of its fields without the namedtuple's Python-level __new__:
# a sample builds some twenty of them.
_new = tuple.__new__


def parse_stat(text: str) -> dict[str, Any]:
    """/proc/stat -> {"cpu": CpuTimes, "cores": {index: CpuTimes}, "procs_running",
    "procs_blocked", "btime"}; keys whose line is absent are missing."""
    result: dict[str, Any] = {"cores": {}}
    for line in text.splitlines():
        # Test the prefix before splitting: the intr line alone can hold thousands of numbers.
        if line.startswith("cpu"):
            parts = line.split()
            times = _new(CpuTimes, map(int, parts[1:9]))
            if parts[0] == "cpu":
                result["cpu"] = times
            else:
                result["cores"][int(parts[0][3:])] = times
        elif line.startswith(("procs_", "btime")):
            key, value = line.split()
            result[key] = int(value)
    return result


def parse_loadavg(text: str) -> tuple[float, float, float]:
    """/proc/loadavg -> (load_1, load_5, load_15)."""
    parts = text.split()
    return float(parts[0]), float(parts[1]), float(parts[2])


def parse_meminfo(text: str, names: Collection[str] | None = None) -> dict[str, int]:
    """/proc/meminfo -> {name: value}; ``kB`` values in bytes, unitless counts (HugePages_*)
    as they are. With ``names``, only those lines are found and converted (a tenth of the
    file's lines, looked up by name rather than by walking all of them)."""
    if names is None:
        lines = text.splitlines()
    else:
        text = "\n" + text
        lines = []
        for name in names:
            start = text.find("\n" + name + ":")
            if start >= 0:
                end = text.find("\n", start + 1)
                lines.append(text[start + 1 : end if end >= 0 else len(text)])
    result = {}
    for line in lines:
        name, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        value = int(parts[0])
        if len(parts) > 1 and parts[1] == "kB":
            value *= 1024
        result[name] = value
    return result


def parse_diskstats(text: str, names: Container[str] | None = None) -> dict[str, DiskCounters]:
    """/proc/diskstats -> {device name: DiskCounters}, for ``names`` only when given.

    Rows have 14 columns (kernel < 4.18), 18 (discard counters added) or 20 (flush counters
    added); the first 14 mean the same in all three. Shorter rows (partitions on 2.6 kernels)
    are skipped.
    """
    result = {}
    for line in text.splitlines():
        if names is not None:  # the name first: most rows are partitions and loop devices
            head = line.split(None, 3)
            if len(head) < 3 or head[2] not in names:
                continue
        parts = line.split()
        if len(parts) < 14:
            continue
        result[parts[2]] = _new(DiskCounters, map(int, _DISK_COLUMNS(parts)))
    return result


def parse_net_dev(
    text: str, keep: Callable[[str], bool] | None = None
) -> dict[str, NetCounters]:
    """/proc/net/dev -> {interface: NetCounters}, for the interfaces ``keep(name)`` accepts
    when given (a container host lists hundreds it would parse for nothing).

    Two header lines, then ``name: 16 counters``. The kernel pads names to 6 characters, so a
    longer name touches its first counter (``podman0:7170041319``); interface names cannot
    contain ``:``, so splitting at the first one is safe.
    """
    result = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        name = name.strip()
        if keep is not None and not keep(name):
            continue
        result[name] = _new(NetCounters, map(int, _NET_COLUMNS(rest.split())))
    return result


def parse_pressure(text: str) -> dict[str, dict[str, float]]:
    """/proc/pressure/{cpu,io,memory} -> {"some": {"avg10", "avg60", "avg300", "total"},
    "full": {...}}. avg* are percentages, total is µs stalled since boot. The cpu file of
    older kernels has no ``full`` line: that key is then absent."""
    result = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        values = {}
        for item in parts[1:]:
            name, _, value = item.partition("=")
            values[name] = int(value) if name == "total" else float(value)
        result[parts[0]] = values
    return result


def parse_mounts(text: str) -> list[Mount]:
    """/proc/self/mounts -> [Mount] in mount order, with the kernel's octal escapes
    (``\\040`` for a space, also tab, newline and backslash) decoded."""
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        mounts.append(
            Mount(
                device=unescape_octal(parts[0]),
                mountpoint=unescape_octal(parts[1]),
                fstype=parts[2],
                options=parts[3],
            )
        )
    return mounts


def unescape_octal(field: str) -> str:
    """Decode ``\\ooo`` escapes as written by the kernel's seq_escape (mounts, swaps)."""
    if "\\" not in field:
        return field
    out = []
    i = 0
    while i < len(field):
        chunk = field[i : i + 4]
        if chunk[0] == "\\" and len(chunk) == 4 and all(c in "01234567" for c in chunk[1:]):
            out.append(chr(int(chunk[1:], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_pid_state(text: Text) -> Text:
    """/proc/<pid>/stat -> the one-letter state (``R``, ``S``, ``D``, ``Z``, ...).

    The command name in parentheses may itself hold spaces and parentheses, so the state is
    found after the *last* ``)``. Works on ``str`` and ``bytes`` alike and returns the same
    type (the D-state scan reads bytes to skip decoding).
    """
    end = text.rindex(b")" if isinstance(text, bytes) else ")")
    return text[end + 2 : end + 3]
