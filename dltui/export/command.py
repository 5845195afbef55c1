"""``dltui export [HOST ...] [--listen 127.0.0.1:9400]``: serve the fleet as Prometheus metrics.

The same transports as the dashboard (SSH, local; no HOST = this machine) feed a
``FleetState`` with the rule engine; ``/metrics`` renders it at scrape time, once per change.
Loopback by default: another address is served only when ``--listen`` names it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dltui.core.state import FleetState
    from dltui.transport.base import Transport

TICK_S = 1.0  # time-driven rules (stale nodes) between samples


def add_parser(sub, common: Callable[[argparse.ArgumentParser], None], host_help: str) -> None:
    from .server import DEFAULT_LISTEN

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
    common(exp)


def run(args: argparse.Namespace, cfg, ssh, inventory) -> int:
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState
    from dltui.transport.factory import build_transports, node_names

    from .server import ListenError, is_loopback, parse_listen

    try:
        host, port = parse_listen(args.listen)
    except ListenError as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return 2
    if not is_loopback(host):
        print(
            f"dltui: serving on {host}, beyond this machine, without authentication",
            file=sys.stderr,
        )
    transports = build_transports(args.hosts, cfg.interval_s, ssh)
    fleet = FleetState(node_names(transports), engine=build_engine(cfg, inventory=inventory))
    try:
        asyncio.run(_serve(fleet, transports, host, port))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # the address is taken or not ours
        print(f"dltui: cannot listen on {args.listen}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


async def _serve(fleet: FleetState, transports: Sequence[Transport], host: str, port: int) -> None:
    from .metrics import CachedPage
    from .server import serve

    server = await serve(CachedPage(fleet), host, port)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"dltui: serving http://{shown}:{port}/metrics for {len(fleet)} node(s)",
        file=sys.stderr,
        flush=True,
    )
    tasks = [asyncio.create_task(t.run(fleet)) for t in transports]
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
