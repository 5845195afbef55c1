"""Validate: what an action is asked, checked before anything is built or sent. Unit names
must match systemd's grammar, PIDs are digits, verbs and signals come from fixed lists; a
change is refused outright under --read-only."""

from __future__ import annotations

from collections.abc import Iterable

from . import commands as cmd
from . import names

READ_ONLY = "read-only: actions that change a node are disabled"
Invalid = (names.InvalidName, ValueError)  # what the checks raise, with the reason in words


def unit(name: str) -> str:
    """The unit's full name (a name without a type gets ``.service``)."""
    return names.unit_name(name)


def journal_lines(count: int) -> int:
    """A count of journal lines to read (1..names.JOURNAL_LINES_MAX)."""
    return names.journal_lines(count)


def unit_change(verb: str, unit: str) -> tuple[str, list[str]]:
    """(the unit's full name, the bare ``systemctl VERB UNIT``)."""
    unit = names.unit_name(unit)
    return unit, cmd.unit_argv(verb, unit)


def signal(pid_text: str | int, signal: str, units: Iterable[str]) -> tuple[int, list[str], list[str]]:
    """(the PID, the bare ``kill -s SIGNAL PID``, the units whose processes may be signalled)."""
    pid = names.pid(pid_text)
    return pid, cmd.kill_argv(pid, signal), [names.unit_name(u) for u in units]
