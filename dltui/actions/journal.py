"""A unit's journal as the actions read it: ``journalctl -o json`` lines made into one text
line each, and the follower of a unit's pane (``journalctl -u UNIT -o json -n N`` once, then
``--after-cursor`` from the last entry's ``__CURSOR``). Pure: a runner does the I/O."""

from __future__ import annotations

import json
import time
from collections import deque
from typing import Any

from dltui.core.text import clean
from dltui.transport.command import Runner

from .commands import journal_argv

KEEP = 200


def journal_entries(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def journal_line(entry: dict[str, Any]) -> str:
    message = entry.get("MESSAGE")
    if isinstance(message, list):  # journald's byte-array form for non-UTF-8 messages
        message = bytes(b for b in message if isinstance(b, int)).decode("utf-8", "replace")
    if message is None:
        message = "(message too long for the journal's JSON; read it with journalctl --all)"
    when = entry.get("__REALTIME_TIMESTAMP")
    stamp = (
        time.strftime("%H:%M:%S", time.localtime(int(str(when)) / 1e6))
        if str(when or "").isdigit()
        else "--:--:--"
    )
    return clean(f"{stamp} {message}")


def journal_denied(unit: str) -> str:
    return (
        f"the journal of {unit} is not readable by this user: "
        "add it to group systemd-journal or adm"
    )


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
