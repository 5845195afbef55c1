"""``dltui export [HOST ...] [--listen 127.0.0.1:9400]``: serve the fleet as Prometheus metrics.

The same fleet as the dashboard (built by ``dltui.wiring``: SSH or local transports with each
node's units and checkpoint, the rule engine) feeds ``/metrics``, rendered at scrape time,
once per change.
Loopback by default: another address is served only when ``--listen`` names it. On loopback
only a loopback ``Host`` (or one named by ``--listen`` / ``--allow-host``) is answered: a
DNS-rebinding web page cannot read the fleet through the operator's browser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dltui.core.state import FleetState
    from dltui.transport.base import Sink, Transport

TICK_S = 1.0  # time-driven rules (stale nodes) between samples
DEFAULT_LISTEN = "127.0.0.1:9400"


def add_parser(sub, common: Callable[[argparse.ArgumentParser], None], host_help: str) -> None:
    exp = sub.add_parser(
        "export",
        help="serve the nodes' metrics and alerts for Prometheus to scrape",
        description="Serve, over HTTP at /metrics, the Prometheus text format of what dltui reads "
        "from the nodes: GPU, host, status, facts (_info) and open alerts (dltui_alert).",
    )
    exp.add_argument("hosts", nargs="*", metavar="HOST", help=host_help)
    exp.add_argument(
        "--listen",
        metavar="ADDR:PORT",
        default=DEFAULT_LISTEN,
        help=f"address to serve on (default {DEFAULT_LISTEN}, loopback only); another address, "
        "e.g. 0.0.0.0:9400, is served only when named here — there is no authentication",
    )
    exp.add_argument(
        "--allow-host",
        metavar="NAME",
        action="append",
        default=[],
        help="also answer requests made to this name (Host header), e.g. the name Prometheus scrapes "
        "it by (repeatable; '*' answers any). On loopback only loopback names and the --listen "
        "host are answered without it, against DNS rebinding; beyond loopback any name is "
        "answered unless this is given",
    )
    common(exp)


@dataclass(frozen=True)
class ExportOptions:
    """``dltui export [HOST ...] [--listen ADDR:PORT] [--allow-host NAME ...]``."""

    hosts: tuple[str, ...] = ()
    listen: str = DEFAULT_LISTEN
    allow_hosts: tuple[str, ...] = ()  # --allow-host: Host names answered beyond loopback's own


def options_from(args: argparse.Namespace) -> ExportOptions:
    return ExportOptions(tuple(args.hosts), args.listen, tuple(args.allow_host))


def serve(
    fleet: FleetState,
    transports: Sequence[Transport],
    listen: str,
    sink: Sink | None = None,
    allow_hosts: Sequence[str] = (),
) -> int:
    """Serve ``/metrics`` until interrupted (Ctrl-C, SIGTERM, SIGHUP: a clean stop, exit 0);
    2 when ``listen`` is not an address this machine can serve on or an ``allow_hosts`` name
    is no host name. ``sink``: what the transports write into (a recorder in front of
    ``fleet``), else the fleet. ``allow_hosts``: ``--allow-host``."""
    from dltui import stopping

    from .server import ListenError, allowed_hosts, is_loopback, parse_listen

    try:
        host, port = parse_listen(listen)
        allowed = allowed_hosts(host, allow_hosts)
    except ListenError as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return 2
    if not is_loopback(host):
        names = "for the --allow-host names" if allowed is not None else "for any Host name"
        print(
            f"dltui: serving on {host}, beyond this machine, without authentication, {names}",
            file=sys.stderr,
        )
    try:
        stopping.run(_serve(fleet, transports, host, port, sink or fleet, allowed))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # the address is taken or not ours
        print(f"dltui: cannot listen on {listen}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


async def _serve(
    fleet: FleetState,
    transports: Sequence[Transport],
    host: str,
    port: int,
    sink: Sink,
    allowed: frozenset[str] | None,
) -> None:
    import asyncio
    import contextlib

    from .metrics import CachedPage
    from .server import serve

    server = await serve(CachedPage(fleet), host, port, allowed)
    port = server.sockets[0].getsockname()[1]  # the one bound: --listen ADDR:0 takes a free one
    shown = f"[{host}]" if ":" in host else host
    print(
        f"dltui: serving http://{shown}:{port}/metrics for {len(fleet)} node(s)",
        file=sys.stderr,
        flush=True,
    )
    tasks = [asyncio.create_task(t.run(sink)) for t in transports]
    try:
        while True:
            await asyncio.sleep(TICK_S)
            fleet.tick()
            for task in tasks:  # a transport bug must surface, not leave a silent exporter
                if task.done() and not task.cancelled() and task.exception():
                    raise task.exception()  # type: ignore[misc]
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
