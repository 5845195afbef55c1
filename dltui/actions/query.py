"""What the actions read from a node, without privilege and without changing anything: who
the connection is there, a unit's state, its journal, the GPU processes, a process's owner and
cgroup. Never audited: none of it changes the node."""

from __future__ import annotations

import asyncio
import time

from dltui.core.models import UnitSample
from dltui.core.text import clean_value
from dltui.node.schema import parse_show, unit_record
from dltui.transport.command import CommandResult, Runner

from . import commands as cmd
from .journal import journal_denied, journal_entries, journal_line
from .policy import ActionSettings

JOURNAL_LINES = 20
JOURNAL_SCAN = 200  # the unit's newest entries looked through for one run's
JOURNAL_TRIES, JOURNAL_RETRY_S = 4, 0.5  # an invocation's journal read again while empty


class NodeQueries:
    def __init__(self, runner: Runner, settings: ActionSettings):
        self.runner = runner
        self.settings = settings
        self._who: dict[str, cmd.Identity] = {}

    async def run(self, node: str, argv: list[str] | tuple[str, ...]) -> CommandResult:
        return await self.runner.run_command(node, argv, self.settings.query_timeout_s)

    async def identity(self, node: str) -> cmd.Identity | CommandResult:
        """Who the actions run as on ``node`` (asked once per node), or why it is not known."""
        who = self._who.get(node)
        if who is not None:
            return who
        res = await self.run(node, cmd.IDENTITY_ARGV)
        if not res.ok:
            return res
        try:
            who = self._who[node] = cmd.Identity.parse(res.stdout)
        except ValueError:
            return CommandResult(
                res.argv, 1, res.stdout, f"could not tell who we are on {node}: {res.stdout[:80]!r}"
            )
        return who

    async def show(self, node: str, unit: str) -> UnitSample | CommandResult:
        res = await self.run(node, cmd.show_argv([unit]))
        if not res.ok:
            return res
        blocks = parse_show(res.stdout)
        state = clean_value(blocks[0]) if blocks else {"LoadState": "not-found"}
        return UnitSample(**unit_record(unit, state))

    async def clock_us(self, node: str) -> int | None:
        """The node's wall clock in µs (its journal's clock): where "since this action" begins
        there. None where ``date`` cannot say."""
        res = await self.run(node, ["date", "+%s%6N"])
        text = res.stdout.strip()
        return int(text) if res.ok and text.isdigit() else None

    async def run_journal(
        self, node: str, unit: str, invocation: str | None, since_us: int | None
    ) -> list[str]:
        """The journal of the run an action started, a line saying what it is first.

        ``invocation`` is that run's InvocationID (None: no new run started); ``since_us``
        the node's clock when the action began. Lines tagged with another run's InvocationID
        are left out; lines journald did not tag (a process that dies at once is often gone
        before journald can look it up) count only from ``since_us``, and without it not at
        all: never an earlier run's lines as this one's. journald stores a dying unit's last
        words a moment after systemd reports the failure: an answer without them is asked
        again."""
        tagged: list[dict] = []
        for attempt in range(JOURNAL_TRIES):
            if attempt:
                await asyncio.sleep(JOURNAL_RETRY_S)
            res = await self.run(node, cmd.journal_argv(unit, JOURNAL_SCAN, since_us=since_us))
            if not res.ok:
                return [f"(journal not read: {res.first_error_line()})"]
            entries = journal_entries(res.stdout)
            if not entries and "insufficient permissions" in res.stderr + res.stdout:
                return [f"({journal_denied(unit)})"]
            tagged = [e for e in entries if _of_run(e, invocation, since_us)]
            if invocation is None or any(str(e.get("_PID")) != "1" for e in tagged):
                break  # the run's own words are in (not only systemd's about it)
        shown = [journal_line(e) for e in tagged[-JOURNAL_LINES:]]
        return [_journal_label(invocation, since_us, tagged)] + shown

    async def gpu_pids(self, node: str) -> set[int] | None:
        """The node's GPU processes now; None when nvidia-smi cannot answer."""
        res = await self.run(
            node, ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader,nounits"]
        )
        if not res.ok:
            return None
        return {
            int(line) for line in (x.strip() for x in res.stdout.splitlines()) if line.isdigit()
        }

    async def process(self, node: str, pid: int) -> CommandResult:
        """The owner's uid on the first line, then /proc/PID/cgroup (exit 1: no such PID)."""
        return await self.run(
            node, ["sh", "-c", 'stat -c %u "$1" && cat "$1/cgroup"', "dltui", f"/proc/{pid}"]
        )

    async def exists(self, node: str, pid: int) -> CommandResult:
        return await self.run(node, ["test", "-e", f"/proc/{pid}"])


def _invocation(entry: dict) -> str | None:
    """The run an entry belongs to: the process's tag, or systemd's own about the unit."""
    value = entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID")
    return value if isinstance(value, str) and value else None


def _realtime_us(entry: dict) -> int | None:
    value = str(entry.get("__REALTIME_TIMESTAMP") or "")
    return int(value) if value.isdigit() else None


def _of_run(entry: dict, invocation: str | None, since_us: int | None) -> bool:
    """Whether ``entry`` belongs to the run (or, with no new run, to the time since the
    action began): tagged with its InvocationID, or untagged and not earlier than the action."""
    tag = _invocation(entry)
    if invocation is not None and tag is not None:
        return tag == invocation
    when = _realtime_us(entry)
    return since_us is not None and when is not None and when >= since_us


def _journal_label(invocation: str | None, since_us: int | None, entries: list[dict]) -> str:
    since = time.strftime("%H:%M:%S", time.localtime(since_us / 1e6)) if since_us else None
    if invocation is None:
        return f"(no new run started: the unit's journal since this action began at {since})" if since \
            else "(no new run started, and the node's clock unknown: no journal lines to show)"
    run = f"this run's journal (InvocationID {invocation[:8]}…)"
    if any(_invocation(e) is None for e in entries):
        return f"({run}, with the unit's untagged lines since this action began at {since})"
    if since is None:
        return f"({run}; lines journald did not tag are left out: the node's clock is unknown)"
    return f"({run})"
