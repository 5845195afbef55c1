"""InfiniBand and RoCE ports from sysfs, without root: ``<sysfs>/class/infiniband/<hca>/ports/<n>/``.

Per port: ``state`` (``4: ACTIVE``), ``phys_state`` (``5: LinkUp``), ``rate`` (``400 Gb/sec (4X
NDR)``), ``link_layer`` (``InfiniBand`` or ``Ethernet``: RoCE), the netdev beside it
(``<hca>/device/net/``), and the error counters operators watch, plus the data counters, which
count 4-byte words.

Cadence. The port's ``state`` is read every sample (a port going down shows within a second),
its physical state and rate again when the state changed, else every ``LINK_REFRESH_S``; the
counters every ``COUNTER_REFRESH_S``; in between the port's last record is repeated. Each counter file read is
a management query answered by the HCA's firmware (a PMA MAD), not a memory read, and nine per
port per second on an eight-port node would be the probe's busiest source. Errors are judged
over minutes, and the data rates are the average over the refresh. The HCA and port listing
(and each port's link layer, HCA type and netdev, which change only with the hardware) is read
again every ``LISTING_REFRESH_S``.

Counters that cannot be read (``N/A (no PMA)`` on some RoCE and iWARP ports, EINVAL) are None,
never 0. Older HCAs keep the 32-bit data counters in ``counters/`` and the 64-bit ones in
``counters_ext/*_64`` (kernels before 4.5): the 64-bit ones are preferred.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

COUNTER_REFRESH_S = 10.0  # as the probe's other slow counters (ECC, PCIe replays: nvml.py)
LISTING_REFRESH_S = 60.0
# A port's physical state and rate without a change of its state: a link that retrains to
# fewer lanes or a lower speed stays ACTIVE (the counters' cadence would read them 6x as often)
LINK_REFRESH_S = 60.0
WORD_BYTES = 4  # port_rcv_data / port_xmit_data count 4-byte words (per lane group, as shown)

# Record field -> counters/ file. The ones the rules and the burn-in judge.
ERROR_COUNTERS = (
    ("symbol_errors_total", "symbol_error"),
    ("link_downed_total", "link_downed"),
    ("link_error_recovery_total", "link_error_recovery"),
    ("rcv_errors_total", "port_rcv_errors"),
    ("xmit_discards_total", "port_xmit_discards"),
    ("excessive_buffer_overrun_errors_total", "excessive_buffer_overrun_errors"),
    ("local_link_integrity_errors_total", "local_link_integrity_errors"),
)
DATA_COUNTERS = (("rx_bytes_per_s", "port_rcv_data"), ("tx_bytes_per_s", "port_xmit_data"))


def parse_state(text: str | None) -> str | None:
    """``4: ACTIVE`` -> ``ACTIVE``; ``5: LinkUp`` -> ``LinkUp``; a bare word stays itself."""
    if not text:
        return None
    word = text.split(":", 1)[1] if ":" in text else text
    return word.strip() or None


def parse_rate(text: str | None) -> tuple[float | None, str | None]:
    """``400 Gb/sec (4X NDR)`` -> (400.0, ``4X NDR``); ``10 Gb/sec (4X)`` -> (10.0, ``4X``)."""
    if not text:
        return None, None
    head, _, tail = text.partition("(")
    detail = tail.rstrip(")").strip() or None
    try:
        return float(head.split()[0]), detail
    except (ValueError, IndexError):
        return None, detail


def parse_counter(text: str | None) -> int | None:
    """A counter file's value; None for ``N/A (no PMA)`` and anything else not a number."""
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def parse_counter_bytes(raw: bytes | None) -> int | None:
    """A counter file's bytes as read (``b"12345\\n"``: ``int`` takes them, whitespace and
    all, without a decode); None for ``N/A (no PMA)`` and anything else not a number."""
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return parse_counter(raw.decode("utf-8", "replace"))


def read_attribute(path: str) -> str | None:
    """One sysfs attribute, stripped; None where it is absent or refuses to be read (EINVAL,
    EIO: a counter the HCA does not implement)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 256).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


class Attributes:
    """The sysfs attributes read again and again, each kept open and re-read with ``pread`` at
    offset 0 (sysfs produces the value afresh on every read from the start): an open and a
    close per read cost ten times the read itself. A file that cannot be read is dropped and
    opened again at its next read (the HCA's driver was reloaded, the counter refuses)."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}

    def read(self, path: str) -> str | None:
        raw = self.raw(path)
        return None if raw is None else raw.decode("utf-8", "replace").strip()

    def raw(self, path: str) -> bytes | None:
        """The file's bytes as read (a caller that only compares them decodes nothing)."""
        fd = self.fds.get(path)
        if fd is None:
            try:
                fd = self.fds[path] = os.open(path, os.O_RDONLY)
            except OSError:
                return None
        try:
            return os.pread(fd, 256, 0)
        except OSError:
            os.close(self.fds.pop(path))
            return None

    def forget(self, prefix: str) -> None:
        """Close the files under ``prefix`` (a port gone)."""
        for path in [p for p in self.fds if p.startswith(prefix)]:
            os.close(self.fds.pop(path))

    def close(self) -> None:
        self.forget("")


class _Port:
    """One port's static facts and the state kept between counter refreshes."""

    __slots__ = (
        "name",
        "device",
        "number",
        "path",
        "hca_type",
        "link_layer",
        "netdev",
        "counters",
        "rates",
        "words",
        "words_at",
        "state_path",
        "state_raw",
        "last",
        "link",
        "link_at",
        "wide",
        "files",
    )

    def __init__(
        self, device_path: str, device: str, number: int, netdev: str | None, files: Attributes
    ) -> None:
        self.files = files
        self.device = device
        self.number = number
        self.name = "%s:%d" % (device, number)  # as NCCL_IB_HCA spells a port
        self.path = "%s/ports/%d" % (device_path, number)
        self.hca_type = read_attribute(device_path + "/hca_type")
        self.link_layer = read_attribute(self.path + "/link_layer")
        self.netdev = netdev
        self.counters: dict[str, int | None] = {}
        self.rates: dict[str, float | None] = {}
        self.words: dict[str, int | None] = {}
        self.words_at: float | None = None
        self.state_path = self.path + "/state"
        self.state_raw: bytes | None = None  # the state file's bytes behind the last record
        self.last: dict[str, Any] | None = None  # the record returned last
        self.link: tuple[str | None, float | None, str | None] = (None, None, None)  # phys_state, rate
        self.link_at: float | None = None
        self.wide = os.path.isdir(self.path + "/counters_ext")  # kernels before 4.5

    def read_counters(self, now: float) -> None:
        base, raw = self.path + "/counters/", self.files.raw
        self.counters = {field: parse_counter_bytes(raw(base + name)) for field, name in ERROR_COUNTERS}
        words = {field: self._data_words(name) for field, name in DATA_COUNTERS}
        elapsed = now - self.words_at if self.words_at is not None else None
        for field, value in words.items():
            before = self.words.get(field)
            if value is None or before is None or not elapsed or value < before:
                self.rates[field] = None  # the first reading, or a reset: no rate yet
            else:
                self.rates[field] = round((value - before) * WORD_BYTES / elapsed, 1)
        self.words, self.words_at = words, now

    def _data_words(self, name: str) -> int | None:
        if self.wide:
            wide = parse_counter_bytes(self.files.raw("%s/counters_ext/%s_64" % (self.path, name)))
            if wide is not None:
                return wide
        return parse_counter_bytes(self.files.raw("%s/counters/%s" % (self.path, name)))

    def record(self, refreshed: bool, now: float) -> dict[str, Any]:
        """The port's record. Only ``state`` is read every sample; the physical state and the
        rate when it changed, else every ``LINK_REFRESH_S``. The record is built again when
        the state changed or the counters were ``refreshed``, else the last one is returned
        as it was (records are never changed once returned)."""
        state_raw = self.files.raw(self.state_path)  # compared as bytes: decoded on a change only
        changed = state_raw != self.state_raw
        if not refreshed and self.last is not None and not changed:
            return self.last
        self.state_raw = state_raw
        state_text = None if state_raw is None else state_raw.decode("utf-8", "replace").strip()
        if changed or self.link_at is None or now - self.link_at >= LINK_REFRESH_S:
            read = self.files.read
            self.link = (parse_state(read(self.path + "/phys_state")), *parse_rate(read(self.path + "/rate")))
            self.link_at = now
        phys_state, rate, detail = self.link
        record: dict[str, Any] = {
            "name": self.name,
            "device": self.device,
            "port": self.number,
            "state": parse_state(state_text),
            "phys_state": phys_state,
            "rate_gbps": rate,
            "rate_detail": detail,
            "link_layer": self.link_layer,
            "hca_type": self.hca_type,
            "netdev": self.netdev,
            "error": None,
        }
        record.update(self.counters)
        record.update(self.rates)
        if record["state"] is None and record["phys_state"] is None:
            record["error"] = "%s/state cannot be read" % self.path
        self.last = record
        return record


class InfinibandCollector:
    """Every HCA port under ``<sys_root>/class/infiniband``; [] on a node without one."""

    def __init__(
        self,
        sys_root: str = "/sys",
        counter_refresh_s: float = COUNTER_REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = sys_root.rstrip("/") + "/class/infiniband"
        self.counter_refresh_s = counter_refresh_s
        self.clock = clock
        self.files = Attributes()
        self.ports: list[_Port] = []
        self.listed_at: float | None = None
        self.counters_at: float | None = None
        self.latest: list[dict[str, Any]] = []  # returned again, the same list, while no port changed

    def sample(self) -> list[dict[str, Any]]:
        now = self.clock()
        if self.listed_at is None or now - self.listed_at >= LISTING_REFRESH_S:
            self._list(now)
        if not self.ports:
            return []
        refresh = self.counters_at is None or now - self.counters_at >= self.counter_refresh_s
        if refresh:
            for port in self.ports:
                port.read_counters(now)
            self.counters_at = now
        records = [port.record(refresh, now) for port in self.ports]
        if records == self.latest:  # the same records (compared by identity first, in C)
            return self.latest
        self.latest = records
        return records

    def _list(self, now: float) -> None:
        self.listed_at = now
        try:
            devices = sorted(os.listdir(self.root))
        except OSError:  # no InfiniBand/RDMA driver loaded: nothing to report
            self.ports = []
            self.files.close()
            return
        known = {(p.device, p.number): p for p in self.ports}
        ports = []
        for device in devices:
            device_path = "%s/%s" % (self.root, device)
            try:
                numbers = sorted(int(n) for n in os.listdir(device_path + "/ports") if n.isdigit())
            except OSError:
                continue
            netdevs = _netdevs(device_path)
            for number in numbers:
                port = known.get((device, number))
                if port is None:
                    netdev = _netdev_of(netdevs, number)
                    port = _Port(device_path, device, number, netdev, self.files)
                ports.append(port)
        if [p.name for p in ports] != [p.name for p in self.ports]:
            self.counters_at = None  # a port came or went: read every port's counters now
            for gone in set(self.ports) - set(ports):
                self.files.forget(gone.path + "/")
        self.ports = ports

    def close(self) -> None:
        self.files.close()


def _netdevs(device_path: str) -> dict[str, str | None]:
    """The network interfaces of the HCA's PCI function (RoCE, or IPoIB) -> their ``dev_port``."""
    base = device_path + "/device/net"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return {}
    return {name: read_attribute("%s/%s/dev_port" % (base, name)) for name in names}


def _netdev_of(netdevs: dict[str, str | None], number: int) -> str | None:
    """The interface of port ``number``: the one whose ``dev_port`` (0-based) matches, else the
    only one there is."""
    for name, dev_port in netdevs.items():
        if dev_port is not None and dev_port.isdigit() and int(dev_port) == number - 1:
            return name
    return next(iter(netdevs)) if len(netdevs) == 1 else None
