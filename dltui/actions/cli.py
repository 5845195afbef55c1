"""``dltui unit status|logs|restart|stop|start UNIT HOST...`` and ``dltui signal PID HOST``
(parsers in ``arguments.py``):
the actions without the dashboard, for scripts. One result line per node (details indented
below it); exit 0 all ok, 1 some failed or were refused, 3 none failed but a node was
unreachable; 2 for a usage error. Changes need ``--yes``; ``--read-only`` refuses them."""

from __future__ import annotations

import asyncio
import signal
import sys

from dltui import stopping
from dltui.config import Config
from dltui.transport.command import HostCommands

from . import policy
from .arguments import ActionOptions, SignalOptions
from .policy import ActionResult, ActionSettings, exit_code
from .unit_config import UnitConfig


def run(options: ActionOptions, cfg: Config, runner: HostCommands, print_fn=print) -> int:
    """``runner``: this machine and the SSH nodes (built by ``dltui.wiring``), closed at the end."""
    from dltui.transport.hostspec import expand_ranges

    settings = ActionSettings.from_config(cfg)
    units = UnitConfig(cfg)
    named = [options.host] if isinstance(options, SignalOptions) else list(options.hosts)
    hosts = list(dict.fromkeys(expand_ranges(named)))
    try:
        # Ctrl-C, SIGTERM and SIGHUP cancel the actions in flight: each writes its outcome,
        # interrupted, before the command exits (a restart half-verified is never left
        # without a record).
        results = stopping.run(_run(options, settings, units, hosts, runner))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(
            f"dltui: {signal.Signals(signum).name}: stopped; an action already sent is logged "
            "as interrupted in the audit log",
            file=sys.stderr,
        )
        return 128 + signum
    for r in results:
        print_fn(format_result(r))
    return exit_code(results)


async def _run(
    options: ActionOptions, settings: ActionSettings, units: UnitConfig, hosts: list[str], runner: HostCommands
) -> list[ActionResult]:
    from .service import ActionService  # not for building the parser: `dltui --help` stays quick

    service = ActionService(runner, settings)
    try:
        if isinstance(options, SignalOptions):
            node = hosts[0]
            sig = "KILL" if options.kill else "TERM"
            return [
                await service.signal(
                    node, options.pid, sig, units.for_node(node)[0], confirmed=options.yes
                )
            ]
        if options.verb == "status":
            jobs = [service.status(h, options.unit) for h in hosts]
        elif options.verb == "logs":
            jobs = [service.logs(h, options.unit, options.lines) for h in hosts]
        else:
            jobs = [service.unit_change(h, options.verb, options.unit, confirmed=options.yes) for h in hosts]
        return list(await asyncio.gather(*jobs))
    finally:
        await runner.close()


def format_result(r: ActionResult) -> str:
    head = f"{r.node}: {r.outcome}: {r.message}"
    if r.outcome == policy.OK and not r.details:
        return head
    return "\n".join([head, *("    " + line for line in r.details)])
