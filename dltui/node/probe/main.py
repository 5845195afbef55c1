"""The probe's main loop: a ``hello`` line, then a ``sample`` line per interval, with ``event``
and ``error`` lines as things happen. One JSON object per line on stdout.

Run on a node as shipped by ``bundle.py``; locally as ``python -m dltui.node.probe.main``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any

from ..schema import MAX_INTERVAL_S, MIN_INTERVAL_S, PROTOCOL, interval_event
from ..wire import Encoder
from . import __version__
from .collect import Collector
from .problems import Problems

if TYPE_CHECKING:
    import argparse  # imported when needed: argparse and gettext cost every start ~3 ms


class Args:
    """The parsed options: what argparse's Namespace would hold."""

    def __init__(
        self,
        interval: float = 1.0,
        count: int = 0,
        stdin_watchdog: float = 0.0,
        unit: list[str] | None = None,
        checkpoint: str | None = None,
        sysfs: str = "/sys",
        container: list[str] | None = None,
    ) -> None:
        self.interval = interval
        self.container: list[str] = container if container is not None else []
        self.count = count
        self.stdin_watchdog = stdin_watchdog
        self.unit: list[str] = unit if unit is not None else []
        self.checkpoint = checkpoint
        self.sysfs = sysfs


_PLAIN_OPTIONS = {
    "--interval": ("interval", float),
    "--count": ("count", int),
    "--stdin-watchdog": ("stdin_watchdog", float),
    "--checkpoint": ("checkpoint", str),
    "--sysfs": ("sysfs", str),
}


def parse_args(argv: list[str]) -> Args | argparse.Namespace:
    """The forms dltui itself passes (``--option value`` pairs with good values) are read
    directly: argparse, with gettext under it, costs every probe start ~3 ms of CPU. Anything
    else (``--help``, a typo, a bad value) goes to argparse for its usual message."""
    return _parse_plain(argv) or _parse_with_argparse(argv)


def _parse_plain(argv: list[str]) -> Args | None:
    if len(argv) % 2:
        return None
    args = Args()
    for flag, text in zip(argv[::2], argv[1::2]):
        if flag == "--unit":
            args.unit.append(text)
            continue
        if flag == "--container":
            args.container.append(text)
            continue
        if flag not in _PLAIN_OPTIONS:
            return None
        name, kind = _PLAIN_OPTIONS[flag]
        try:
            setattr(args, name, kind(text))
        except ValueError:
            return None
    return args if args.interval > 0 else None


def _parse_with_argparse(argv: list[str]) -> argparse.Namespace:
    import argparse

    parser = argparse.ArgumentParser(prog="dltui-probe", description=__doc__)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--count", type=int, default=0, help="stop after N samples (0 = never)")
    parser.add_argument(
        "--stdin-watchdog",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="exit when stdin closes or stays silent this long (0 = ignore stdin); the "
        "operator side pings, so a probe whose SSH session died silently does not linger",
    )
    parser.add_argument("--unit", action="append", default=[], help="systemd unit to report (repeatable)")
    parser.add_argument(
        "--container", action="append", default=[], help="training container to report: NAME or label=K=V (repeatable)"
    )
    parser.add_argument("--checkpoint", metavar="GLOB", help="report the newest mtime of files matching GLOB")
    parser.add_argument(
        "--sysfs",
        default="/sys",
        metavar="PATH",
        help="where the node's sysfs is mounted (a probe in a container: the host's /sys)",
    )
    args = parser.parse_args(argv)
    if not args.interval > 0:
        parser.error("--interval must be positive")
    return args


class Output:
    """Writes JSON lines; a closed pipe means the operator is gone."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.closed = False

    def emit(self, obj: dict[str, Any]) -> None:
        try:
            self.stream.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self.stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.closed = True


class StdinWatchdog:
    """Sets ``stop`` when stdin reaches EOF or nothing arrived for ``timeout_s``.

    Stdin is also the operator's channel to the running probe: a bare newline is a ping, and
    ``interval SECONDS`` changes the sampling interval from the next tick on (the dashboard's
    ``+`` / ``-``), so the probe is told rather than restarted."""

    def __init__(self, stop: threading.Event, timeout_s: float) -> None:
        self.stop = stop
        self.timeout_s = timeout_s
        self.last_input = time.monotonic()
        self.interval: float | None = None  # the newest interval asked for, read by the main loop
        self._partial = b""
        threading.Thread(target=self._read, name="stdin-watchdog", daemon=True).start()

    def _read(self) -> None:
        # Raw reads on fd 0: a daemon thread blocked inside the buffered reader holds its lock,
        # and the interpreter aborts at exit when it cannot take that lock.
        while True:
            try:
                chunk = os.read(0, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                self.stop.set()
                return
            self.last_input = time.monotonic()
            self._commands(chunk)

    def _commands(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._partial = self._partial[-256:]  # a command is short; anything longer is noise
        for line in lines:
            words = line.split()
            if len(words) == 2 and words[0] == b"interval":
                try:
                    value = float(words[1])
                except ValueError:
                    continue
                if MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
                    self.interval = value

    def expired(self) -> bool:
        return time.monotonic() - self.last_input > self.timeout_s


def until_next_tick(now: float, interval: float, last_start: float) -> float:
    """Seconds to the next multiple of ``interval`` in wall-clock time, at least half an
    interval after the last sample started (the first sample goes out at once, unaligned).

    Every node of an NTP-synced fleet samples at the same instants, so a fleet view compares
    one moment across nodes, and the operator's side gets the fleet's samples in one burst
    (one wake-up, warm caches) instead of scattered over the second. A slow sample skips the
    ticks it missed rather than bursting; a clock step costs at most one odd interval."""
    delay = interval - now % interval
    if now + delay - last_start < interval / 2:
        delay += interval
    return delay


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = Output(sys.stdout)
    stop = threading.Event()
    watchdog = StdinWatchdog(stop, args.stdin_watchdog) if args.stdin_watchdog > 0 else None
    problems = Problems()
    collector = Collector(
        args.interval, problems, sys_dir=args.sysfs, units=args.unit, checkpoint=args.checkpoint,
        containers=args.container,
    )
    try:
        out.emit(
            {
                "type": "hello",
                "protocol": PROTOCOL,
                "probe_version": __version__,
                "time": round(time.time(), 3),
                "interval_s": args.interval,
                "facts": collector.facts(),
            }
        )
        encoder = Encoder()
        count = 0
        while not stop.is_set() and not out.closed:
            started = time.time()
            out.emit(encoder.encode(collector.sample()))
            for event in collector.events():
                event = dict(event, type="event")
                out.emit(event)
            for source, message in problems.drain():
                out.emit(
                    {
                        "type": "error",
                        "time": round(time.time(), 3),
                        "source": source,
                        "message": message,
                    }
                )
            count += 1
            if args.count and count >= args.count:
                break
            if watchdog is not None and watchdog.expired():
                break
            asked = watchdog.interval if watchdog is not None else None
            if asked is not None and asked != args.interval:
                args.interval = asked
                collector.set_interval(asked)
                out.emit(dict(interval_event(time.time(), args.interval), type="event"))
            stop.wait(until_next_tick(time.time(), args.interval, started))
    finally:
        collector.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
