"""Parsers for the text of /proc files. Pure functions: text in, numbers out, no file I/O.

Counters are returned raw (jiffies, sectors, bytes since boot); turning them into rates is the
collector's job (``host.py``). Formats follow proc(5) and Documentation/ABI of the kernel.
"""

import collections

# /proc/stat columns we use, in kernel order. guest and guest_nice are left out on purpose:
# the kernel already counts them inside user and nice, adding them would count them twice.
CpuTimes = collections.namedtuple(
    "CpuTimes", "user nice system idle iowait irq softirq steal"
)

DiskCounters = collections.namedtuple(
    "DiskCounters",
    "reads read_sectors read_ms writes write_sectors write_ms io_ticks_ms time_in_queue_ms",
)

NetCounters = collections.namedtuple(
    "NetCounters",
    "rx_bytes rx_packets rx_errors rx_drops tx_bytes tx_packets tx_errors tx_drops",
)

Mount = collections.namedtuple("Mount", "device mountpoint fstype options")

SECTOR_BYTES = 512  # diskstats counts 512-byte sectors whatever the device's block size


def parse_stat(text):
    """/proc/stat -> {"cpu": CpuTimes, "cores": {index: CpuTimes}, "procs_running",
    "procs_blocked", "btime"}; keys whose line is absent are missing."""
    result = {"cores": {}}
    for line in text.splitlines():
        # Test the prefix before splitting: the intr line alone can hold thousands of numbers.
        if line.startswith("cpu"):
            parts = line.split()
            times = CpuTimes(*[int(v) for v in parts[1:9]])
            if parts[0] == "cpu":
                result["cpu"] = times
            else:
                result["cores"][int(parts[0][3:])] = times
        elif line.startswith(("procs_", "btime")):
            key, value = line.split()
            result[key] = int(value)
    return result


def parse_loadavg(text):
    """/proc/loadavg -> (load_1, load_5, load_15)."""
    parts = text.split()
    return float(parts[0]), float(parts[1]), float(parts[2])


def parse_meminfo(text, names=None):
    """/proc/meminfo -> {name: value}; ``kB`` values in bytes, unitless counts (HugePages_*)
    as they are. With ``names``, only those lines are converted (half the cost per tick)."""
    result = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if names is not None and name not in names:
            continue
        parts = rest.split()
        if not parts:
            continue
        value = int(parts[0])
        if len(parts) > 1 and parts[1] == "kB":
            value *= 1024
        result[name] = value
    return result


def parse_diskstats(text, names=None):
    """/proc/diskstats -> {device name: DiskCounters}, for ``names`` only when given.

    Rows have 14 columns (kernel < 4.18), 18 (discard counters added) or 20 (flush counters
    added); the first 14 mean the same in all three. Shorter rows (partitions on 2.6 kernels)
    are skipped.
    """
    result = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14 or (names is not None and parts[2] not in names):
            continue
        result[parts[2]] = DiskCounters(
            reads=int(parts[3]),
            read_sectors=int(parts[5]),
            read_ms=int(parts[6]),
            writes=int(parts[7]),
            write_sectors=int(parts[9]),
            write_ms=int(parts[10]),
            io_ticks_ms=int(parts[12]),
            time_in_queue_ms=int(parts[13]),
        )
    return result


def parse_net_dev(text):
    """/proc/net/dev -> {interface: NetCounters}.

    Two header lines, then ``name: 16 counters``. The kernel pads names to 6 characters, so a
    longer name touches its first counter (``podman0:7170041319``); interface names cannot
    contain ``:``, so splitting at the first one is safe.
    """
    result = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        v = rest.split()
        result[name.strip()] = NetCounters(
            rx_bytes=int(v[0]),
            rx_packets=int(v[1]),
            rx_errors=int(v[2]),
            rx_drops=int(v[3]),
            tx_bytes=int(v[8]),
            tx_packets=int(v[9]),
            tx_errors=int(v[10]),
            tx_drops=int(v[11]),
        )
    return result


def parse_pressure(text):
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


def parse_mounts(text):
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


def unescape_octal(field):
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


def parse_pid_state(text):
    """/proc/<pid>/stat -> the one-letter state (``R``, ``S``, ``D``, ``Z``, ...).

    The command name in parentheses may itself hold spaces and parentheses, so the state is
    found after the *last* ``)``. Works on ``str`` and ``bytes`` alike and returns the same
    type (the D-state scan reads bytes to skip decoding).
    """
    end = text.rindex(b")" if isinstance(text, bytes) else ")")
    return text[end + 2 : end + 3]
