"""The operator's side of a burn-in on its nodes: start the node-side driver, follow its samples
from an offset (reattaching after any drop without losing one), fetch its outputs, stop it.

Every command goes through the node-command contract (``transport.command.NodeCommands``):
over SSH, on the node's one connection — the dashboard's fleet's, or ``SshCommands``' without
a dashboard — its trouble as the contract's one error, ``CommandError``. ``ship`` builds the
shell lines; each is sent as ``sh -c LINE``.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dltui.core import status as st
from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.status import Status
from dltui.core.text import clean, clean_value
from dltui.transport.base import Sink
from dltui.transport.command import REFUSED, UNREACHABLE, CommandError, CommandResult, NodeCommands
from dltui.transport.protocol import ProbeReader, capped_lines
from dltui.transport.ssh.connector import backoff_s

if TYPE_CHECKING:
    from .verdict import NodeVerdict

from . import ship
from .fold import RunFold
from .spool import Spool

COMMAND_TIMEOUT_S = 120.0


def sh(line: str) -> list[str]:
    """A shell line of ``ship`` as the argv that runs it (the runner quotes it)."""
    return ["sh", "-c", line]


@dataclass(frozen=True)
class Answer:
    """The driver's last word on a start or a stop (the last JSON line it printed), typed; or
    why there is none (the node unreachable, no such run, a driver that said nothing)."""

    ok: bool
    reason: str = ""
    scratch_left: bool = False  # a stop that could not remove the run's scratch files
    audit: str | None = None  # the audit outcome line that could not be written, said with it

    @classmethod
    def of(cls, result: CommandResult) -> Answer:
        if result.problem is not None:
            return cls(False, result.reason or result.problem)
        for line in reversed(result.stdout.splitlines()):
            if line.startswith("{"):
                try:
                    said = clean_value(json.loads(line))
                except (ValueError, TypeError, RecursionError):
                    break
                if isinstance(said, dict):
                    ok = said.get("ok") is True
                    reason = "" if ok else str(said.get("reason") or "the driver gave no reason")
                    return cls(ok, reason, said.get("scratch_left") is True)
                break
        words = (result.stderr or result.stdout).strip().splitlines()
        return cls(False, clean(f"exit {result.exit_status}: {words[-1] if words else 'no output'}"))


# --- what a node's run looks like from here ------------------------------------------------


class RunCollector:
    """A ``Sink`` that folds a node's run as it arrives (``fold``: bounded, whatever the
    run's length), appends the raw samples to a local spool file when given one, keeps the
    facts and events, and passes everything on."""

    def __init__(
        self,
        then: Sink | None = None,
        ramp_s: float = 60.0,
        spool: Spool | None = None,
        interval_s: float = 1.0,
    ):
        self.then = then
        self.facts: NodeFacts | None = None
        self.fold = RunFold(ramp_s, interval_s)
        self.spool = spool
        self.events: list[NodeEvent] = []

    @property
    def count(self) -> int:
        """Samples received."""
        return self.fold.count

    def on_run_status(self, status: dict[str, Any]) -> None:
        """The driver's status.json as followed: its phases classify the samples so far."""
        self.fold.on_status(status)

    def on_status(self, name: str, status: Status, reason: str | None = None) -> None:
        if self.then is not None:
            self.then.on_status(name, status, reason)

    def on_hello(self, name: str, facts: NodeFacts, interval_s: float | None = None) -> None:
        self.facts = facts
        if self.spool is not None:
            self.spool.hello(facts, interval_s)
        if self.then is not None:
            self.then.on_hello(name, facts, interval_s)

    def on_sample(self, name: str, sample: Sample) -> None:
        self.fold.add(sample)
        if self.spool is not None:
            self.spool.sample(sample)
        if self.then is not None:
            self.then.on_sample(name, sample)

    def on_event(self, name: str, event: NodeEvent) -> None:
        self.events.append(event)
        if self.spool is not None:
            self.spool.event(event)
        if self.then is not None:
            self.then.on_event(name, event)


@dataclass
class NodeRunView:
    """One node's run as followed: where we are in its samples file, its last status."""

    node: str
    run_id: str
    collector: RunCollector
    offset: int = 0
    status: dict[str, Any] = field(default_factory=dict)
    ended: bool = False
    lost: bool = False  # the driver ended without an exit code (node rebooted, killed, OOM)
    reattached: int = 0  # how many times the follow was resumed after a drop
    reason: str | None = None  # the last connection trouble, in words
    reader: ProbeReader | None = None
    verdict: NodeVerdict | None = None  # the run's verdict, once judged from its outputs

    def __post_init__(self) -> None:
        self.reader = ProbeReader(self.node, self.collector)


async def start(runner: NodeCommands, node: str, args: list[str], python: str) -> Answer:
    """Sends the driver and starts the run."""
    res = await runner.run_command(
        node, sh(ship.start_command(args, python)), COMMAND_TIMEOUT_S, stdin=ship.driver_script().encode()
    )
    return Answer.of(res)


async def stop(runner: NodeCommands, node: str, run_id: str, python: str, wait_s: float = 60.0) -> Answer:
    res = await runner.run_command(node, sh(ship.stop_command(run_id, wait_s, python)), wait_s + 30)
    return Answer.of(res)


FETCH_FILE_MAX = 8 << 20  # of a stressor's log: a day of gpu_burn is a few MB


@dataclass
class Fetched:
    """The run's files as fetched: each whole, or its last ``file_max`` bytes (``cut``: the
    size of each file that was longer, by name)."""

    files: dict[str, bytes]
    cut: dict[str, int]


async def fetch(
    runner: NodeCommands, node: str, run_id: str, names: list[str], file_max: int = FETCH_FILE_MAX
) -> Fetched:
    """The named files of the run directory (missing ones left out), read at most
    ``file_max`` bytes each, the tail of a longer one: a node that sends more than it may
    (or not in the form asked) is refused with ``CommandError``."""
    most = len(names) * (file_max + 64 + max((len(n) for n in names), default=0))
    argv = sh(ship.fetch_command(run_id, names, file_max))
    res = await runner.run_command(node, argv, COMMAND_TIMEOUT_S, limit=most, binary=True)
    if res.problem == REFUSED:
        raise CommandError(REFUSED, f"{node} {res.reason}")
    try:
        return _fetched(res.check().data, names, file_max)
    except ValueError as exc:
        raise CommandError(REFUSED, f"{node}: unreadable answer for the run's files ({exc})") from None


def _fetched(data: bytes, names: list[str], file_max: int) -> Fetched:
    """Parses what ``ship.fetch_command`` prints; ValueError for anything else."""
    got = Fetched({}, {})
    pos = 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        name, sent_text, size_text = data[pos:end].decode("ascii").split(" ")
        sent, size = int(sent_text), int(size_text)
        if name not in names or name in got.files or not -1 <= sent <= min(file_max, max(size, 0)):
            raise ValueError(f"not the files asked for: {data[pos:end][:80]!r}")
        pos = end + 1
        if sent < 0:
            continue
        got.files[name] = data[pos : pos + sent]
        if len(got.files[name]) != sent:
            raise ValueError(f"{name} cut short")
        pos += sent
        if size > sent:
            got.cut[name] = size
    return got


async def put(runner: NodeCommands, node: str, run_id: str, name: str, data: bytes) -> None:
    (await runner.run_command(node, sh(ship.put_command(run_id, name)), COMMAND_TIMEOUT_S, stdin=data)).check()


async def follow_once(
    runner: NodeCommands,
    view: NodeRunView,
    python: str,
    on_status: Callable[[NodeRunView], None] | None = None,
) -> bool:
    """Follows from ``view.offset`` until the run ended (True) or the stream broke (False).

    The offset advances only past whole sample-file lines that reached the reader, so a
    resumed follow starts exactly at the first line this side has not seen."""
    argv = sh(ship.follow_command(view.run_id, view.offset, python))
    async with runner.stream(view.node, argv) as proc:
        # whole lines only (one cut off by a drop is read again from its start next time); a
        # line over the cap is never held whole, and counts as one malformed sample line
        async for line, size in capped_lines(proc.stdout):
            if line.startswith(b'{"type":"burnin-'):
                if not line.endswith(b"\n"):
                    continue  # the driver's own line, too long to be one: not a sample's bytes
                try:
                    msg = clean_value(json.loads(line))
                    kind, status = msg["type"], msg.get("status")
                except (ValueError, RecursionError, TypeError, KeyError, AttributeError):
                    break  # garbled by the drop: the next follow reads the status again
                if kind == "burnin-status" and isinstance(status, dict):
                    view.status = status
                    view.collector.on_run_status(view.status)
                    if on_status is not None:
                        on_status(view)
                elif kind == "burnin-end":
                    view.ended = True
                    view.lost = bool(msg.get("lost"))
                    return True
                continue
            assert view.reader is not None
            view.reader.feed(line)
            view.offset += size
    if proc.exit_status == 5:  # no such run on the node
        raise CommandError(REFUSED, (await proc.said()) or f"no burn-in run {view.run_id}")
    return False


async def follow(
    runner: NodeCommands,
    view: NodeRunView,
    python: str,
    on_status: Callable[[NodeRunView], None] | None = None,
    sink_status: Callable[[str, str, str | None], None] | None = None,
) -> None:
    """Follows to the end, reconnecting with backoff after any drop (the run goes on there).
    The backoff starts over after a follow that read something: that connection worked."""
    attempt = 0
    while not view.ended:
        offset = view.offset
        try:
            if await follow_once(runner, view, python, on_status):
                return
            failure = CommandError(UNREACHABLE, "the follow stream ended early")
        except CommandError as exc:
            if exc.problem == REFUSED:  # no such run, or an answer no reader takes: not a drop
                view.reason = exc.reason
                raise
            failure = exc
        attempt = 1 if view.offset > offset else attempt + 1
        view.reattached += 1
        view.reason = failure.reason
        await runner.reconnect(view.node)
        if sink_status is not None:
            sink_status(view.node, st.RECONNECTING, failure.reason)
        await asyncio.sleep(min(backoff_s(attempt), 5.0))


def new_run_id() -> str:
    """The start time, for the reader, and a random part: the id names the report folder
    (``burnin-RUN``) dltui, maybe as root, writes into a folder others may write into too; an
    id they could guess is a name they could plant first. ``RUN_ID`` accepts it."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def start_args(
    run_id: str,
    duration_s: int,
    gpu: str,
    cpu: bool,
    memory: bool,
    disk: str | None,
    disk_size: str,
    net_address: str | None,
    expected_gpus: int | None,
    preflight_s: float,
    post_s: float,
    launcher: str,
    interval_s: float = 1.0,
    smoke: str | None = None,
    smoke_s: float = 300.0,
    smoke_ramp_s: float = 60.0,
    sysfs: str = "/sys",
) -> list[str]:
    args = [
        "--run-id",
        run_id,
        "--interval",
        repr(float(interval_s)),
        "--duration",
        str(int(duration_s)),
        "--gpu",
        gpu,
        "--preflight",
        repr(float(preflight_s)),
        "--post",
        repr(float(post_s)),
        "--launcher",
        launcher,
        "--disk-size",
        disk_size,
    ]
    if cpu:
        args.append("--cpu")
    if memory:
        args.append("--memory")
    if disk:
        args += ["--disk", disk]
    if net_address:
        args += ["--net", net_address]
    if expected_gpus is not None:
        args += ["--expected-gpus", str(expected_gpus)]
    if sysfs != "/sys":  # [probe] sysfs: the run's samples read the node's sysfs there
        args += ["--sysfs", sysfs]
    if smoke:  # the operator's own command, from [burnin] smoke; quoted like every argument
        args += ["--smoke", smoke, "--smoke-s", repr(float(smoke_s)),
                 "--smoke-ramp", repr(float(smoke_ramp_s))]
    return args


# The peer's iperf3 server and its pid live in a folder of its own made by mktemp -d (0700, a
# name no one can guess): a predictable file in /tmp could be pre-created by any user there, as
# a symlink our write follows or as a pid our kill trusts.
IPERF_DIR = re.compile(r"/[A-Za-z0-9._/-]*/dltui-iperf3\.[A-Za-z0-9]+")


@dataclass(frozen=True)
class IperfServer:
    """What stopping the peer's server needs: its private folder and what it runs as."""

    folder: str
    port: int
    seconds: int

    @property
    def cmdline(self) -> str:
        """/proc/PID/cmdline of the server as started (NULs as spaces)."""
        return f"timeout {self.seconds} iperf3 -s -p {self.port} "


def iperf_server_command(port: int, seconds: float) -> str:
    """The peer's iperf3 server, bounded in time (timeout(1) passes our TERM on to it),
    detached so our session can close; its pid kept in a private folder, which it prints."""
    inner = f'echo $$ >"$1/pid"; exec timeout {int(seconds)} iperf3 -s -p {int(port)}'
    return (
        'd=$(mktemp -d "${TMPDIR:-/tmp}/dltui-iperf3.XXXXXX") || exit 1; '
        f'setsid sh -c {shlex.quote(inner)} sh "$d" </dev/null >/dev/null 2>&1 & echo "started $d"'
    )


def iperf_server_started(stdout: str | bytes, port: int, seconds: float) -> IperfServer | None:
    """The server ``iperf_server_command`` started, from what it printed (None: it did not)."""
    text = stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout
    for line in text.splitlines():
        word, _, folder = line.partition(" ")
        if word == "started" and IPERF_DIR.fullmatch(folder):
            return IperfServer(folder, int(port), int(seconds))
    return None


def iperf_server_stop_command(server: IperfServer) -> str:
    """TERM to the server, only when its folder is still ours (a directory, not a link, owned
    by this user) and its pid is still our process running exactly what we started."""
    d = shlex.quote(server.folder)
    expected = shlex.quote(server.cmdline)
    return (
        f"d={d}; [ -d \"$d\" ] && [ ! -L \"$d\" ] && [ -O \"$d\" ] || exit 0; "
        'p=$(cat "$d/pid" 2>/dev/null); case "$p" in ""|*[!0-9]*) ;; *) '
        f'if [ -O "/proc/$p" ] && [ "$(tr \'\\0\' \' \' <"/proc/$p/cmdline")" = {expected} ]; '
        'then kill "$p"; fi;; esac; rm -rf "$d"'
    )
