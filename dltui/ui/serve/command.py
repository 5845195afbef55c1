"""``dltui serve [HOST ...] [--listen 127.0.0.1:8765]``: the dashboard in a browser.

Prints one URL carrying a random token in its fragment (``--token-file`` for a fixed one).
Each browser tab runs ``dltui watch`` with the same hosts and options (``dltui demo`` with
``--demo``), read-only unless ``--allow-actions``. Loopback by default: another address is
served only when ``--listen`` names it.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_LISTEN = "127.0.0.1:8765"
# serve's own options: everything else on its command line goes to each tab's dashboard
OWN_VALUED = ("--listen", "--token-file")
OWN_FLAGS = ("--allow-actions", "--demo")


@dataclass(frozen=True)
class ServeOptions:
    """``dltui serve``: its own options, and the command line each tab's dashboard runs."""

    tab_argv: tuple[str, ...]  # serve's command line after the word 'serve' (see child_argv)
    hosts: tuple[str, ...] = ()
    listen: str = DEFAULT_LISTEN
    token_file: str | None = None
    allow_actions: bool = False
    demo: bool = False
    prometheus: str | None = None
    debug: bool = False
    # the node-reaching options given, as typed (-J/--jump ...): what --demo cannot go with
    reaching_nodes: tuple[str, ...] = ()


def options_from(args: argparse.Namespace, argv: list[str]) -> ServeOptions:
    """``argv``: serve's command line after the word ``serve``."""
    given = (
        (args.jump, "-J/--jump"),
        (args.ssh_config, "-F/--ssh-config"),
        (args.identity, "-i/--identity"),
        (args.known_hosts, "--known-hosts"),
        (args.accept_new_host_keys, "--accept-new-host-keys"),
        (args.prometheus, "--prometheus"),
        (args.match, "--match"),
    )
    return ServeOptions(
        tab_argv=tuple(argv),
        hosts=tuple(args.hosts),
        listen=args.listen,
        token_file=args.token_file,
        allow_actions=args.allow_actions,
        demo=args.demo,
        prometheus=args.prometheus,
        debug=args.debug,
        reaching_nodes=tuple(flag for value, flag in given if value),
    )


def add_parser(
    sub,
    common: Callable[[argparse.ArgumentParser], None],
    add_prometheus: Callable[[argparse.ArgumentParser], None],
    add_hosts: Callable[[argparse.ArgumentParser], None],
) -> None:
    serve = sub.add_parser(
        "serve",
        help="the dashboard in a browser (one URL with a token; read-only by default)",
        description="Serve the dashboard to a browser: each tab runs the same dashboard as "
        "'dltui watch' on these nodes ('dltui demo' with --demo). Prints one URL whose "
        "#token=... part is the access secret; a tab without it gets no dashboard. Read-only "
        "unless --allow-actions; actions are audited with the browser's address.",
        epilog="Exit 0 when stopped (Ctrl-C, SIGTERM); 2 a usage or config error, or an address "
        "that cannot be served.",
        allow_abbrev=False,  # its own options are taken out by exact name (child_argv)
    )
    add_hosts(serve)
    serve.add_argument(
        "--listen",
        metavar="ADDR:PORT",
        default=DEFAULT_LISTEN,
        help=f"address to serve on (default {DEFAULT_LISTEN}, loopback only); another address "
        "is served only when named here",
    )
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help="read the token from FILE (a fixed URL, e.g. behind a reverse proxy) instead of "
        "a random one",
    )
    serve.add_argument(
        "--allow-actions",
        action="store_true",
        help="allow restart/stop/start, signals and burn-ins from the browser (audited with "
        "its address)",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="serve the simulated demo fleet (as 'dltui demo') instead of nodes",
    )
    add_prometheus(serve)
    common(serve)


def child_argv(argv: list[str], allow_actions: bool, demo: bool = False) -> list[str]:
    """``dltui watch`` (``dltui demo``) with serve's command line minus serve's own options;
    ``--read-only`` unless actions are allowed."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in OWN_VALUED:
            skip = True
        elif arg in OWN_FLAGS or arg.startswith(tuple(f"{o}=" for o in OWN_VALUED)):
            continue
        else:
            out.append(arg)
    if not allow_actions and "--read-only" not in out:
        out.append("--read-only")
    return ["demo" if demo else "watch", *out]


def demo_refusal(options: ServeOptions) -> str | None:
    """Why ``--demo`` cannot be served with these options, in one line; None when it can."""
    if not options.demo:
        return None
    if options.hosts:
        return f"serve --demo serves the simulated fleet, not nodes: drop {' '.join(options.hosts)} or --demo"
    if options.reaching_nodes:
        return f"serve --demo reaches no node: {', '.join(options.reaching_nodes)} cannot go with it"
    return None


def what_is_served(options: ServeOptions) -> str:
    """One line on stderr: what the tabs show, and how the URL is to be used."""
    mode = "actions allowed, audited" if options.allow_actions else "read-only"
    if options.demo:
        fleet = "the simulated demo fleet"
    elif options.prometheus:
        fleet = f"the fleet of {options.prometheus}"
    else:
        fleet = ", ".join(options.hosts) if options.hosts else "this machine"
    return (
        f"dltui: serving the dashboard of {fleet} ({mode}); open the URL above: its #token= part "
        "is the secret, kept by the browser tab; Ctrl-C stops"
    )


def run(options: ServeOptions) -> int:
    """Serve until Ctrl-C or SIGTERM (exit 0); 2 for what cannot be served, said in one line."""
    from dltui.export.server import ListenError, is_loopback, parse_listen

    from .auth import TokenCheck, TokenError, new_token, page_url, read_token_file
    from .page import PageError
    from .server import DashboardServer

    refusal = demo_refusal(options)
    if refusal:
        print(f"dltui: {refusal}", file=sys.stderr)
        return 2
    try:
        host, port = parse_listen(options.listen)
        token = read_token_file(options.token_file) if options.token_file else new_token()
        tab = child_argv(list(options.tab_argv), options.allow_actions, options.demo)
        command = shlex.join([sys.executable, "-m", "dltui", *tab])
        server = DashboardServer(command, TokenCheck(token))
    except (ListenError, TokenError, PageError) as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return 2
    try:
        sock = _bind(host, port)
    except OSError as exc:
        print(f"dltui: cannot listen on {options.listen}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not is_loopback(host):
        print(
            f"dltui: serving on {host}, beyond this machine: anyone with the URL sees the fleet"
            + (" and can act on it" if options.allow_actions else ""),
            file=sys.stderr,
        )
    if "demo" in options.hosts:  # 'dltui demo' is the simulated fleet; here it is a host's name
        print("dltui: serving the SSH host 'demo'; the simulated fleet is: dltui serve --demo", file=sys.stderr)
    print(page_url(host, sock.getsockname()[1], token), flush=True)
    print(what_is_served(options), file=sys.stderr, flush=True)
    try:
        asyncio.run(_serve(server, sock, options.debug))
    except KeyboardInterrupt:
        pass
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """Bound before anything is printed, so the URL names the real port (``--listen 127.0.0.1:0``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _serve(server, sock: socket.socket, debug: bool) -> None:
    from .server import quiet_logging, serve

    quiet_logging(debug)
    runner = await serve(server, sock)
    stop = asyncio.Event()
    # SIGTERM (a service manager's stop) ends it as Ctrl-C does: every tab's dashboard is told
    # to quit and waited for
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
