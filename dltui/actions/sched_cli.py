"""``dltui drain HOST... --reason TEXT``, ``dltui resume HOST... [--force]``, ``dltui cordon|uncordon
HOST...``: the scheduler actions without the dashboard (``scheduler.py`` does the work). One
result line per node; exits as ``dltui unit`` (0 all ok, 1 some failed or refused, 3 a node
unreachable, 2 usage). Changes need ``--yes``; without it each node's exact command is printed
and nothing is sent. ``--read-only`` refuses them."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .arguments import EXITS

if TYPE_CHECKING:
    from dltui.config import Config
    from dltui.transport.command import HostCommands, Runner

    from .policy import ActionResult, ActionSettings

SUBCOMMANDS = ("drain", "resume", "cordon", "uncordon")


@dataclass(frozen=True)
class DrainOptions:
    """``dltui drain HOST... --reason TEXT [--yes]``."""

    hosts: tuple[str, ...]
    reason: str
    yes: bool = False


@dataclass(frozen=True)
class ResumeOptions:
    """``dltui resume HOST... [--force] [--yes]``."""

    hosts: tuple[str, ...]
    force: bool = False
    yes: bool = False


@dataclass(frozen=True)
class CordonOptions:
    """``dltui cordon|uncordon HOST... [--yes]``."""

    verb: str  # "cordon" or "uncordon"
    hosts: tuple[str, ...]
    yes: bool = False


SchedOptions = DrainOptions | ResumeOptions | CordonOptions


def add_parsers(sub, common: Callable[[argparse.ArgumentParser], None]) -> None:
    drain = sub.add_parser(
        "drain",
        help="drain nodes in Slurm (no new jobs; running ones finish), with a reason",
        description="Drain HOSTs in Slurm: scontrol update State=DRAIN with Reason='dltui: TEXT "
        "[you]', run on each node over SSH, then read back. Needs --yes.",
        epilog=EXITS,
    )
    drain.add_argument("hosts", nargs="+", metavar="HOST", help="nodes, as ssh(1) takes them")
    drain.add_argument("--reason", required=True, metavar="TEXT", help="why: what the next person reads")
    drain.add_argument("--yes", action="store_true", help="confirm")
    common(drain)
    resume = sub.add_parser(
        "resume",
        help="resume nodes dltui drained in Slurm",
        description="Resume HOSTs in Slurm (State=RESUME). Only a drain whose reason starts "
        "'dltui:' is undone; another's drain needs --force. Needs --yes.",
        epilog=EXITS,
    )
    resume.add_argument("hosts", nargs="+", metavar="HOST", help="nodes, as ssh(1) takes them")
    resume.add_argument("--force", action="store_true", help="also resume a drain someone else set")
    resume.add_argument("--yes", action="store_true", help="confirm")
    common(resume)
    for verb, what in (("cordon", "mark"), ("uncordon", "unmark")):
        p = sub.add_parser(
            verb,
            help=f"{what} nodes unschedulable in Kubernetes (kubectl {verb}, on this machine)",
            description=f"kubectl {verb} the Kubernetes node of each HOST ([groups.NAME] "
            "kubernetes_node, default the short host name), with this machine's kubectl and "
            "kubeconfig. Needs --yes.",
            epilog=EXITS,
        )
        p.add_argument("hosts", nargs="+", metavar="HOST", help="nodes, as ssh(1) takes them")
        p.add_argument("--yes", action="store_true", help="confirm")
        common(p)


def options_from(args: argparse.Namespace) -> SchedOptions:
    if args.command == "drain":
        return DrainOptions(tuple(args.hosts), args.reason, args.yes)
    if args.command == "resume":
        return ResumeOptions(tuple(args.hosts), args.force, args.yes)
    return CordonOptions(args.command, tuple(args.hosts), args.yes)


def run(options: SchedOptions, cfg: Config | None, runner: HostCommands, local: Runner, print_fn=print) -> int:
    """``runner``: each node's commands; ``local``: this machine's (kubectl)."""
    from dltui import stopping
    from dltui.transport.hostspec import expand_ranges

    from .cli import format_result
    from .policy import ActionSettings, exit_code

    settings = ActionSettings.from_config(cfg)
    hosts = list(dict.fromkeys(expand_ranges(list(options.hosts))))
    try:
        results = stopping.run(_run(options, settings, cfg, hosts, runner, local))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"dltui: {signal.Signals(signum).name}: stopped; an action already sent is logged "
              "as interrupted in the audit log", file=sys.stderr)
        return 128 + signum
    for r in results:
        print_fn(format_result(r))
    return exit_code(results)


async def _run(
    options: SchedOptions, settings: ActionSettings, cfg: Config | None, hosts: list[str], runner: HostCommands,
    local: Runner,
) -> list[ActionResult]:
    from dltui.transport.scheduler import targets_from_config

    from .scheduler import SchedulerActions
    from .service import ActionService

    actions = SchedulerActions(ActionService(runner, settings), local)
    targets = targets_from_config(cfg, hosts)
    try:
        if isinstance(options, DrainOptions):
            jobs = [actions.slurm(h, "drain", options.reason, confirmed=options.yes,
                                  slurm_node=targets[h].slurm_node) for h in hosts]
        elif isinstance(options, ResumeOptions):
            jobs = [actions.slurm(h, "resume", force=options.force, confirmed=options.yes,
                                  slurm_node=targets[h].slurm_node) for h in hosts]
        else:
            jobs = [actions.kube(h, options.verb, targets[h].kube_name(h), confirmed=options.yes) for h in hosts]
        return list(await asyncio.gather(*jobs))
    finally:
        await runner.close()
