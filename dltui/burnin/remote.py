"""The operator's side of a burn-in over SSH: start the node-side driver, follow its samples
from an offset (reattaching after any drop without losing one), fetch its outputs, stop it.

Connections come from dltui's SSH code (``transport.ssh``: the SSH config, checked host keys,
shared jump connections, never a password prompt). ``NodeShell`` is this module's own small
seam: one command per SSH session on a node's connection, reopened when it died.
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
from dltui.transport.command import read_at_most, read_tail
from dltui.transport.protocol import ProbeReader, capped_lines
from dltui.transport.ssh.connector import Hop, backoff_s
from dltui.transport.ssh.errors import Failure, describe
from dltui.transport.ssh.library import asyncssh
from dltui.transport.ssh.options import SshOptions
from dltui.transport.ssh.sessions import SessionRunner

if TYPE_CHECKING:
    from .verdict import NodeVerdict

from . import ship
from .fold import RunFold
from .spool import Spool

COMMAND_TIMEOUT_S = 120.0


@dataclass
class Result:
    exit_status: int | None
    stdout: bytes
    stderr: bytes

    def json_line(self) -> dict[str, Any]:
        """The last JSON line the driver printed, or a reason built from what it said."""
        for line in reversed(self.stdout.decode(errors="replace").splitlines()):
            if line.startswith("{"):
                try:
                    return dict(clean_value(json.loads(line)))
                except (ValueError, TypeError, RecursionError):
                    break
        said = (self.stderr or self.stdout).decode(errors="replace").strip().splitlines()
        return {
            "ok": False,
            "reason": clean(f"exit {self.exit_status}: {said[-1] if said else 'no output'}"),
        }


class NodeShell:
    """Commands on nodes, one SSH connection per node (reused, reopened after a drop): the SSH
    layer's session runner, with the whole output of a command and its failures raised."""

    def __init__(self, options: SshOptions):
        self.options = options
        self.sessions = SessionRunner(options)

    async def connection(self, name: str) -> Hop:
        return await self.sessions.connection(name)

    def hostname(self, name: str) -> str:
        """The address the SSH config gives a node (for a peer to reach it)."""
        return self.sessions.hostname(name)

    async def run(
        self,
        name: str,
        command: str,
        stdin: bytes | None = None,
        timeout_s: float = COMMAND_TIMEOUT_S,
        limit: int | None = None,
    ) -> Result:
        """``command`` in a new session on the node's connection. Its output is capped while
        it is read: the last ``OUTPUT_KEPT`` bytes of each stream are kept, or, with ``limit``,
        stdout is whole or the command is refused (``Failure``) once it passes ``limit``."""
        hop = await self.connection(name)
        try:
            return await asyncio.wait_for(self._run(hop, name, command, stdin, limit), timeout_s)
        except (asyncssh.Error, OSError) as exc:
            raise describe(exc, hop.settings, None) from None
        except asyncio.TimeoutError:  # noqa: UP041 - not the builtin before Python 3.11
            raise Failure(st.TIMEOUT, f"{name}: no answer in {timeout_s:g} s") from None

    async def _run(
        self, hop: Hop, name: str, command: str, stdin: bytes | None, limit: int | None
    ) -> Result:
        proc: asyncssh.SSHClientProcess[Any] = await hop.conn.create_process(
            command, encoding=None
        )
        errors = asyncio.ensure_future(read_tail(proc.stderr))
        try:
            if stdin:
                proc.stdin.write(stdin)
            proc.stdin.write_eof()
            if limit is None:
                stdout = await read_tail(proc.stdout)
            else:
                stdout = await read_at_most(proc.stdout, limit)
                if stdout is None:  # not a byte more: the session is closed below
                    raise Failure(
                        st.PROBE_FAILED, f"{name} answered with more than {limit} bytes: refused"
                    )
            stderr = await errors
            ended = await proc.wait(check=False)
        finally:
            errors.cancel()
            proc.close()
        return Result(ended.exit_status, _bytes(stdout), _bytes(stderr))

    async def drop(self, name: str) -> None:
        await self.sessions.drop(name)

    async def close(self) -> None:
        await self.sessions.close()


def _bytes(data: bytes | str | None) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data or b"")


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


async def start(shell: NodeShell, node: str, args: list[str]) -> dict[str, Any]:
    """Sends the driver and starts the run; {"ok": True, "dir", "launcher"} or a reason."""
    python = shell.options.python
    res = await shell.run(node, ship.start_command(args, python), ship.driver_script().encode())
    return res.json_line()


async def stop(shell: NodeShell, node: str, run_id: str, wait_s: float = 60.0) -> dict[str, Any]:
    res = await shell.run(
        node, ship.stop_command(run_id, wait_s, shell.options.python), timeout_s=wait_s + 30
    )
    return res.json_line()


FETCH_FILE_MAX = 8 << 20  # of a stressor's log: a day of gpu_burn is a few MB


@dataclass
class Fetched:
    """The run's files as fetched: each whole, or its last ``file_max`` bytes (``cut``: the
    size of each file that was longer, by name)."""

    files: dict[str, bytes]
    cut: dict[str, int]


async def fetch(
    shell: NodeShell, node: str, run_id: str, names: list[str], file_max: int = FETCH_FILE_MAX
) -> Fetched:
    """The named files of the run directory (missing ones left out), read at most
    ``file_max`` bytes each, the tail of a longer one: a node that sends more than it may
    (or not in the form asked) is refused with ``Failure``."""
    most = len(names) * (file_max + 64 + max((len(n) for n in names), default=0))
    res = await shell.run(node, ship.fetch_command(run_id, names, file_max), limit=most)
    try:
        return _fetched(res.stdout, names, file_max)
    except ValueError as exc:
        raise Failure(st.PROBE_FAILED, f"{node}: unreadable answer for the run's files ({exc})") from None


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


async def put(shell: NodeShell, node: str, run_id: str, name: str, data: bytes) -> None:
    await shell.run(node, ship.put_command(run_id, name), data)


async def follow_once(
    shell: NodeShell, view: NodeRunView, on_status: Callable[[NodeRunView], None] | None = None
) -> bool:
    """Follows from ``view.offset`` until the run ended (True) or the stream broke (False).

    The offset advances only past whole sample-file lines that reached the reader, so a
    resumed follow starts exactly at the first line this side has not seen."""
    hop = await shell.connection(view.node)
    command = ship.follow_command(view.run_id, view.offset, shell.options.python)
    try:
        proc: asyncssh.SSHClientProcess[Any] = await hop.conn.create_process(command, encoding=None)
    except (asyncssh.Error, OSError) as exc:
        raise describe(exc, hop.settings, None) from None
    proc.stdin.write_eof()  # nothing to say to it (close() would close the whole channel)
    try:
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
    except (asyncssh.Error, OSError) as exc:
        raise describe(exc, hop.settings, None) from None
    finally:
        proc.close()
    if proc.exit_status == 5:  # no such run on the node
        raise Failure(st.PROBE_FAILED, (await _said(proc)) or f"no burn-in run {view.run_id}")
    return False


async def _said(proc: asyncssh.SSHClientProcess) -> str:
    try:
        return (await asyncio.wait_for(proc.stderr.read(), 1.0)).decode(errors="replace").strip()
    except (asyncio.TimeoutError, asyncssh.Error, OSError):  # noqa: UP041 - 3.10
        return ""


async def follow(
    shell: NodeShell,
    view: NodeRunView,
    on_status: Callable[[NodeRunView], None] | None = None,
    sink_status: Callable[[str, str, str | None], None] | None = None,
) -> None:
    """Follows to the end, reconnecting with backoff after any drop (the run goes on there).
    The backoff starts over after a follow that read something: that connection worked."""
    attempt = 0
    while not view.ended:
        offset = view.offset
        try:
            if await follow_once(shell, view, on_status):
                return
            failure = Failure(st.RECONNECTING, "the follow stream ended early")
        except Failure as exc:
            if exc.status == st.PROBE_FAILED:
                view.reason = exc.reason
                raise
            failure = exc
        attempt = 1 if view.offset > offset else attempt + 1
        view.reattached += 1
        view.reason = failure.reason
        await shell.drop(view.node)
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


def iperf_server_started(stdout: bytes, port: int, seconds: float) -> IperfServer | None:
    """The server ``iperf_server_command`` started, from what it printed (None: it did not)."""
    for line in stdout.decode(errors="replace").splitlines():
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
