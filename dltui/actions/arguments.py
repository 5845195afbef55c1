"""The command line of ``dltui unit`` and ``dltui signal``: their parsers, apart from running
them (``cli.py``), so building ``dltui --help`` or a completion stays quick."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

UNIT_VERBS = ("status", "logs", "restart", "stop", "start")
SUBCOMMANDS = ("unit", "signal")


EXITS = (
    "Exit 0 all ok; 1 some failed or were refused; 2 a usage or config error; 3 none failed but "
    "a node was unreachable; 128 + the signal when stopped (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."
)


@dataclass(frozen=True)
class UnitOptions:
    """``dltui unit VERB UNIT HOST... [--yes] [--lines N]``."""

    verb: str  # one of UNIT_VERBS
    unit: str
    hosts: tuple[str, ...]
    yes: bool = False
    lines: int = 50


@dataclass(frozen=True)
class SignalOptions:
    """``dltui signal PID HOST [--kill] [--yes]``."""

    pid: str  # as typed: the action checks it, and says why it refuses it
    host: str
    kill: bool = False
    yes: bool = False


ActionOptions = UnitOptions | SignalOptions


def unit_options_from(args: argparse.Namespace) -> UnitOptions:
    return UnitOptions(args.verb, args.unit, tuple(args.hosts), args.yes, args.lines)


def signal_options_from(args: argparse.Namespace) -> SignalOptions:
    return SignalOptions(args.pid, args.hosts[0], args.kill, args.yes)


def add_parsers(
    sub,
    common: Callable[[argparse.ArgumentParser], None],
    number: Callable[..., None],
) -> None:
    """``number(parser, flag, attr, help)`` adds a numeric option declared in dltui.config."""
    unit = sub.add_parser(
        "unit",
        help="the training unit without the dashboard: status, logs, restart, stop, start",
        description="Read or change a systemd unit on nodes. Changes need --yes.",
        epilog=EXITS,
    )
    unit.add_argument("verb", choices=UNIT_VERBS, metavar="{" + ",".join(UNIT_VERBS) + "}")
    unit.add_argument("unit", metavar="UNIT", help="systemd unit, e.g. dl_train.service")
    unit.add_argument("hosts", nargs="+", metavar="HOST", help="nodes, as ssh(1) takes them")
    unit.add_argument("--yes", action="store_true", help="confirm a change (restart, stop, start)")
    number(unit, "--lines", "lines", "journal lines for 'logs', 1 to 10000 (default 50)")
    common(unit)
    sig = sub.add_parser(
        "signal",
        help="TERM (or KILL) a GPU process or a process of the node's unit",
        description="Send TERM (--kill: KILL) to PID on HOST; "
        "it must be a GPU process or a process of "
        "the node's configured unit at that moment.",
        epilog=EXITS,
    )
    sig.add_argument("pid", metavar="PID")
    sig.add_argument("hosts", nargs=1, metavar="HOST")
    sig.add_argument("--kill", action="store_true", help="send KILL instead of TERM")
    sig.add_argument("--yes", action="store_true", help="confirm")
    common(sig)
