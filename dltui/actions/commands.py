"""The exact commands an action sends, built as argv lists and quoted with ``shlex.quote``.

Privilege: as root a command runs as is; otherwise under
``sudo -n`` (fails at once instead of prompting) with the full path of the binary, so the
sudoers line dltui suggests matches the command it runs exactly. ``--no-ask-password`` is
only for the polkit path (no sudo): sudoers matches the whole command line, and under sudo
polkit is not asked anyway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from dltui.node import schema
from dltui.node.schema import SHOW_PROPERTIES  # the probe's list: one parser reads both
from dltui.transport.command import shell_line  # noqa: F401 - the actions' one quoting

SUDO = schema.SUDO
POLKIT = "polkit"
PRIVILEGES = (SUDO, POLKIT)

# One call reads who we are on the node and where its tools live; no input goes into it.
# (``kill`` is a shell builtin: sudo needs the binary, so look for it by path.)
IDENTITY_ARGV = (
    "sh",
    "-c",
    "id -u; id -un; command -v systemctl || echo; "
    "for k in /usr/bin/kill /bin/kill; do [ -x $k ] && echo $k && break; done",
)

UNIT_VERBS = ("restart", "stop", "start")
SIGNALS = ("TERM", "KILL")


@dataclass(frozen=True)
class Identity:
    """Who the actions run as on a node, and where its binaries are."""

    uid: int
    user: str
    systemctl: str | None  # full path; None: no systemctl on the node
    kill: str | None

    @property
    def root(self) -> bool:
        return self.uid == 0

    @classmethod
    def parse(cls, text: str) -> Identity:
        lines = [line.strip() for line in text.splitlines()] + ["", "", "", ""]
        uid = int(lines[0])  # ValueError: not what `id -u` prints
        if not all(line.isprintable() for line in lines[1:4]):  # these reach argv and dialogs
            raise ValueError("a user name or path with control characters")
        return cls(uid, lines[1] or str(uid), lines[2] or None, lines[3] or None)


def show_argv(units: Sequence[str]) -> list[str]:
    """State without privilege: Key=Value blocks, one per unit, blank-line separated."""
    return ["systemctl", "show", *units, "-p", ",".join(SHOW_PROPERTIES), "--no-pager"]


def privileged(argv: Sequence[str], who: Identity, privilege: str = SUDO) -> list[str]:
    """``argv`` (a command and its arguments, command by bare name) as it must run to change
    the node: directly as root, else under ``sudo -n`` with the binary's full path, or for
    polkit with ``--no-ask-password`` (systemctl only)."""
    argv = list(argv)
    if who.root:
        return argv
    if privilege == POLKIT and argv[0] == "systemctl":
        return [argv[0], "--no-ask-password", *argv[1:]]
    path = _full_path(argv[0], who)
    return [SUDO, "-n", path, *argv[1:]]


def _full_path(command: str, who: Identity) -> str:
    path = {"systemctl": who.systemctl, "kill": who.kill}.get(command)
    return path or command


def unit_argv(verb: str, unit: str) -> list[str]:
    if verb not in UNIT_VERBS:
        raise ValueError(f"unknown unit action {verb!r}")
    return ["systemctl", verb, unit]


def kill_argv(pid: int, signal: str) -> list[str]:
    if signal not in SIGNALS:
        raise ValueError(f"unknown signal {signal!r}")
    return ["kill", "-s", signal, str(pid)]


def journal_argv(
    unit: str, lines: int = 20, cursor: str | None = None, since_us: int | None = None
) -> list[str]:
    """The unit's journal as JSON lines: its newest ``lines``, those after ``cursor``, or
    those since ``since_us`` (the node's clock, µs) at most ``lines`` of them."""
    argv = ["journalctl", "--no-pager", "-o", "json", "-u", unit]
    if cursor:
        return argv + ["--after-cursor", cursor]
    if since_us is not None:
        argv += ["--since", f"@{since_us // 1_000_000}"]
    return argv + ["-n", str(int(lines))]


def with_timeout(argv: Sequence[str], seconds: float) -> list[str]:
    """Also cut the command off on the node (coreutils ``timeout``; KILL 2 s after TERM), so a
    hung remote command does not outlive its session; the sudo line inside is unchanged."""
    return ["timeout", "-k", "2", f"{seconds:g}", *argv]


def sudoers_line(who: Identity, argv: Sequence[str]) -> str:
    """The sudoers line that allows exactly ``argv`` (as run: ``sudo -n PATH ARGS…``) for this
    user and nothing else (the contract's rule: the probe's SMART reads print theirs by it)."""
    return schema.sudoers_line(who.user, [argv])


def polkit_rule(who: Identity, verb: str, unit: str) -> str:
    """The polkit alternative: allow this user this verb on this unit (systemd ≥ 226). The
    values are JavaScript string literals (JSON's are): a unit's ``\\x2d`` stays itself."""
    unit_js, verb_js, user_js = (json.dumps(v) for v in (unit, verb, who.user))
    return (
        'polkit.addRule(function(a, s) { if (a.id == "org.freedesktop.systemd1.manage-units" && '
        f'a.lookup("unit") == {unit_js} && a.lookup("verb") == {verb_js} && s.user == {user_js}) '
        "return polkit.Result.YES; });"
    )
