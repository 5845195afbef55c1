"""Following a unit's journal while its pane is open: ``journalctl -u UNIT -o json -n N``
once, then ``--after-cursor`` from the last entry's ``__CURSOR``. Pure: a runner does the I/O."""

from __future__ import annotations

from collections import deque

from dltui.transport.command import Runner

from .commands import journal_argv
from .service import journal_denied, journal_entries, journal_line

KEEP = 200


class JournalFollower:
    def __init__(
        self, runner: Runner, node: str, unit: str, first_lines: int = 30, timeout_s: float = 10.0
    ):
        self.runner = runner
        self.node = node
        self.unit = unit
        self.first_lines = first_lines
        self.timeout_s = timeout_s
        self.cursor: str | None = None
        self.lines: deque[str] = deque(maxlen=KEEP)
        self.problem: str | None = None  # why the journal cannot be read, in plain words

    async def poll(self) -> list[str]:
        """The lines that arrived since the last poll (also appended to ``lines``)."""
        argv = journal_argv(self.unit, self.first_lines, cursor=self.cursor)
        res = await self.runner.run_command(self.node, argv, self.timeout_s)
        if not res.ok:
            self.problem = f"journal: {res.first_error_line()}"
            return []
        entries = journal_entries(res.stdout)
        if (
            not entries
            and self.cursor is None
            and "insufficient permissions" in res.stderr + res.stdout
        ):
            self.problem = journal_denied(self.unit)
            return []
        self.problem = None
        if entries and isinstance(entries[-1].get("__CURSOR"), str):
            self.cursor = entries[-1]["__CURSOR"]
        new = [journal_line(e) for e in entries]
        self.lines.extend(new)
        return new
