"""What the actions read from a node, without privilege and without changing anything: who
the connection is there, a unit's state, its journal, the GPU processes, a process's owner and
cgroup. Never audited: none of it changes the node."""

from __future__ import annotations

import asyncio

from dltui.core.models import UnitSample
from dltui.core.text import clean_value
from dltui.node.schema import parse_show, unit_record
from dltui.transport.command import CommandResult, Runner

from . import commands as cmd
from .journal import journal_denied, journal_entries, journal_line
from .policy import ActionSettings

JOURNAL_LINES = 20
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

    async def journal(self, node: str, unit: str, invocation: str | None) -> list[str]:
        """The last lines of that invocation; journald stores a dying unit's last words a
        moment after systemd reports the failure, so an empty answer is asked again, then the
        unit's own last lines stand in."""
        for attempt in range(JOURNAL_TRIES):
            if attempt:
                await asyncio.sleep(JOURNAL_RETRY_S)
            res = await self.run(node, cmd.journal_argv(unit, JOURNAL_LINES, invocation))
            if not res.ok:
                return [f"(journal not read: {res.first_error_line()})"]
            entries = journal_entries(res.stdout)[-JOURNAL_LINES:]
            if entries:
                return [journal_line(e) for e in entries]
            if "insufficient permissions" in res.stderr + res.stdout:
                return [f"({journal_denied(unit)})"]
        return await self.journal(node, unit, None) if invocation else []

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
