"""Running a read as root from a non-root account: ``sudo -n`` with the binary's full path,
never a password prompt, and on refusal the sudoers line that allows exactly that command.

sudoers matches the whole command line (``sudo -l`` semantics), so the line names the binary
by its full path and every argument as run; characters special to sudoers are escaped. Shared
by the probe (SMART reads) and the actions (unit restarts). Stdlib only, Python 3.8.
"""

from __future__ import annotations

import os
from typing import Sequence

SUDO = "sudo"
# What sudo -n prints when it will not run the command without a password, by sudo version.
_REFUSALS = (
    "a password is required",
    "is not allowed to execute",
    "not in the sudoers file",
    "a terminal is required",
)


def as_root(argv: Sequence[str], root: bool) -> list[str]:
    """``argv`` (binary by full path first) as it runs: directly as root, else ``sudo -n``."""
    return list(argv) if root else [SUDO, "-n", *argv]


def sudo_refused(argv: Sequence[str], stderr: str) -> bool:
    """Whether this run of ``argv`` was stopped by sudo itself (not by the command)."""
    return bool(argv) and argv[0] == SUDO and any(words in stderr for words in _REFUSALS)


def sudoers_line(user: str, argv: Sequence[str]) -> str:
    """The sudoers line that lets ``user`` run exactly ``argv`` (``sudo -n`` dropped) as root,
    and nothing else. Several commands may share one line: see ``sudoers_line_for``."""
    return sudoers_line_for(user, [argv])


def sudoers_line_for(user: str, commands: Sequence[Sequence[str]]) -> str:
    """One sudoers line allowing each of ``commands`` (comma-separated, as sudoers lists them)."""
    specs = []
    for argv in commands:
        command = list(argv)
        if command[:2] == [SUDO, "-n"]:
            command = command[2:]
        specs.append(" ".join([command[0], *(_escape(a) for a in command[1:])]))
    return "%s ALL=(root) NOPASSWD: %s" % (user, ", ".join(specs))


def current_user() -> str:
    """This account's name for a sudoers line; ``#UID`` (sudoers' own syntax) when it has none."""
    uid = os.geteuid()
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return "#%d" % uid


def _escape(arg: str) -> str:
    for ch in "\\,:=":
        arg = arg.replace(ch, "\\" + ch)
    return arg
