"""Command line: ``dltui [HOST ...]`` and its subcommands. See ``dltui --help``."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dltui import __version__
from dltui.actions import cli as actions_cli
from dltui.config import Config, ConfigError, load
from dltui.config_schema import option
from dltui.transport.hostspec import HostSpecError
from dltui.transport.prometheus import add_arguments as add_prometheus
from dltui.transport.ssh.options import SshOptions

if TYPE_CHECKING:
    from dltui.transport.base import Transport

SUBCOMMANDS = ("watch", "snapshot", "demo", "replay", "export", "burn-in", *actions_cli.SUBCOMMANDS)
HOST_HELP = (
    "nodes as ssh(1) takes them: a Host alias from the SSH config, user@host, host:port, "
    "user@host:port; ranges as pdsh writes them, gpu[01-16]; none or 'localhost' = this machine"
)


def _common(parser: argparse.ArgumentParser) -> None:
    ssh = parser.add_argument_group("reaching nodes (as ssh does)")
    ssh.add_argument("-J", "--jump", metavar="DEST", help="jump host(s), like ssh -J (comma-separated chain)")
    ssh.add_argument("-F", "--ssh-config", metavar="FILE", help="SSH config file (default ~/.ssh/config)")
    ssh.add_argument(
        "-i",
        "--identity",
        metavar="FILE",
        action="append",
        default=[],
        help="private key file (repeatable)",
    )
    ssh.add_argument(
        "--known-hosts",
        metavar="FILE",
        help="known_hosts file (default: the SSH config's, else ~/.ssh/known_hosts)",
    )
    ssh.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help= (
            "add unknown host keys to known_hosts (like "
            "StrictHostKeyChecking=accept-new); changed keys are still refused"
        ),
    )
    gen = parser.add_argument_group("general")
    gen.add_argument(
        "--interval",
        type=option(Config, "interval_s"),
        metavar="SECONDS",
        help="seconds between samples, 0.1 to 3600 (default 1)",
    )
    gen.add_argument(
        "--config", metavar="FILE", help="config file (default ~/.config/dltui/config.toml)"
    )
    gen.add_argument("--theme", metavar="NAME", help="colour theme (see the README for the list)")
    gen.add_argument(
        "--read-only", action="store_true", help="disable every action that changes a node"
    )
    gen.add_argument(
        "--record",
        metavar="FILE",
        help="also write every sample and event to FILE for 'dltui replay' (.gz compresses)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui",
        description="Terminal dashboard for deep-learning GPU servers. "
        "With no subcommand: the live dashboard ('watch') on the given nodes.",
        epilog="Exit codes of 'snapshot': 0 ok, 1 warning, 2 critical, 3 unknown (a node unreachable).",
    )
    parser.add_argument("--version", action="version", version=f"dltui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    watch = sub.add_parser(
        "watch",
        help="live dashboard (the default command)",
        description="Live dashboard on the given nodes.",
    )
    watch.add_argument("hosts", nargs="*", metavar="HOST", help=HOST_HELP)
    add_prometheus(watch)
    _common(watch)

    snap = sub.add_parser(
        "snapshot",
        help="watch for a few seconds, print a triage report, exit 0/1/2/3",
        description="Watch the nodes for --seconds, then print one report and exit "
        "0 ok, 1 warning, 2 critical, 3 unknown (a node unreachable).",
    )
    snap.add_argument("hosts", nargs="*", metavar="HOST", help=HOST_HELP)
    snap.add_argument(
        "--json", action="store_true", help="print one JSON document (schema in the README)"
    )
    snap.add_argument(
        "--seconds", type=float, default=3.0, help="how long to watch before reporting (default 3)"
    )
    add_prometheus(snap)
    _common(snap)

    demo = sub.add_parser(
        "demo",
        help="dashboard on a seeded simulated fleet",
        description="Dashboard on a simulated fleet.",
    )
    demo.add_argument(
        "--nodes", type=int, default=12, help="number of simulated nodes (default 12)"
    )
    demo.add_argument("--gpus", type=int, default=8, help="GPUs per node (default 8)")
    demo.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    _common(demo)

    rep = sub.add_parser(
        "replay",
        help="dashboard on a recording made with --record",
        description="Play a recording made with --record.",
    )
    rep.add_argument("file", metavar="FILE", help="the recording")
    rep.add_argument(
        "--speed", type=float, default=1.0, help="2 = twice as fast, 0 = all at once (default 1)"
    )
    _common(rep)

    from dltui.export.command import add_parser as add_export

    add_export(sub, _common, HOST_HELP)
    actions_cli.add_parsers(sub, _common)
    sub.add_parser("burn-in", help="start, attach to or stop a burn-in (dltui burn-in --help)", add_help=False)
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    # "dltui gpu01 gpu02" means "dltui watch gpu01 gpu02".
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["watch", *argv]
    return build_parser().parse_args(argv)


def settings(args: argparse.Namespace) -> tuple[Config, SshOptions]:
    cfg = load(args.config)
    changes: dict = {}
    if args.interval is not None:
        changes["interval_s"] = args.interval
    if getattr(args, "theme", None):
        changes["theme"] = args.theme
    if getattr(args, "read_only", False):
        changes["read_only"] = True
    cfg = dataclasses.replace(cfg, **changes) if changes else cfg
    s = cfg.ssh
    ssh = SshOptions(
        jump=args.jump,
        ssh_config=args.ssh_config or s.config,
        identity=tuple(args.identity or s.identity),
        known_hosts=args.known_hosts or s.known_hosts,
        accept_new_host_keys=args.accept_new_host_keys or s.accept_new_host_keys,
        connect_timeout_s=s.connect_timeout,
        keepalive_interval_s=s.keepalive_interval,
        keepalive_count=s.keepalive_count,
    )
    return cfg, ssh


# A usage or config error: 2 as Unix tools do; but 'snapshot' runs under monitoring, where 2
# means CRITICAL, so there it is 3 (UNKNOWN) — a typo in a config file must not page anyone.
USAGE_ERROR = 2
SNAPSHOT_USAGE_ERROR = 3


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["burn-in"]:  # its own parser and handler (dltui/burnin/cli.py)
        from dltui.burnin.cli import EntryLayer
        from dltui.burnin.cli import main as burn_in

        return burn_in(argv[1:], EntryLayer(HOST_HELP, _common, settings))
    error_code = SNAPSHOT_USAGE_ERROR if argv[:1] == ["snapshot"] else USAGE_ERROR
    try:
        args = parse(argv)
    except SystemExit as exc:  # argparse has printed the usage error
        return error_code if exc.code == 2 else int(exc.code or 0)
    try:
        cfg, ssh = settings(args)
        return _run(args, cfg, ssh, error_code)
    except (
        ConfigError,
        HostSpecError,
    ) as exc:  # the file, the environment, [rules.*]; a bad node range
        print(f"dltui: {exc}", file=sys.stderr)
        return error_code


def _run(args: argparse.Namespace, cfg: Config, ssh: SshOptions, error_code: int) -> int:
    if args.command in actions_cli.SUBCOMMANDS:
        return actions_cli.run(args, cfg, ssh)
    if args.command == "snapshot":
        return _snapshot(args, cfg, ssh, error_code)
    if args.command == "export":
        from dltui.export.command import run as export

        return export(args, cfg, ssh, _inventory(args))
    if args.command == "demo":
        from dltui.actions import simulated
        from dltui.transport.demo import DemoTransport

        demo = DemoTransport(
            nodes=args.nodes, gpus=args.gpus, seed=args.seed, interval_s=cfg.interval_s,
            commands=simulated.answer,
        )
        return _dashboard([demo], cfg, args.record, clock=demo.clock)  # the prefilled past's time
    if args.command == "replay":
        from dltui.transport.recording.replay import ReplayError, ReplayTransport

        try:
            replay = ReplayTransport(args.file, args.speed)
        except (ReplayError, ValueError) as exc:
            print(f"dltui: {exc}", file=sys.stderr)
            return 2
        # The recorded clock: ages, timeline times and rule durations come out as recorded.
        return _dashboard([replay], cfg, args.record, clock=replay.clock)
    return _dashboard(_transports(args, cfg, ssh), cfg, args.record, inventory=_inventory(args))


def _transports(args: argparse.Namespace, cfg: Config, ssh: SshOptions) -> list:
    if args.prometheus or args.match:
        from dltui.transport.prometheus import SelectorError, from_args

        try:
            return from_args(args.hosts, args.prometheus, args.match, args.interval)
        except SelectorError as exc:
            raise ConfigError(str(exc)) from None
    from dltui.transport.factory import build_transports

    # each node's units and checkpoint glob, for its probe
    units = actions_cli.UnitConfig(cfg).for_node
    return build_transports(args.hosts, cfg.interval_s, ssh, units)


def _inventory(args: argparse.Namespace):
    """Real nodes' GPUs across sessions (gpu_missing); a demo or a replay never touches it,
    nor a Prometheus fleet: what it lists is what the selector matches today, and a GPU that a
    narrower --match leaves out is not a GPU gone from the bus."""
    if getattr(args, "prometheus", None):
        return None
    from dltui.core.gpu_inventory import GpuInventory, default_path

    return GpuInventory(default_path())


def _snapshot(args: argparse.Namespace, cfg: Config, ssh: SshOptions, error_code: int) -> int:
    from dltui import report_text, snapshot
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState
    from dltui.transport.factory import node_names
    from dltui.transport.recording.recorder import Recorder, RecordError

    transports = _transports(args, cfg, ssh)
    names = node_names(transports)
    fleet = FleetState(
        names,
        engine=build_engine(cfg, snapshot_window_s=args.seconds, inventory=_inventory(args)),
    )
    try:
        recorder = Recorder.create(fleet, args.record, names) if args.record else None
    except RecordError as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return error_code
    try:
        asyncio.run(snapshot.watch(fleet, transports, args.seconds, sink=recorder))
    except KeyboardInterrupt:
        return snapshot.EXIT_UNKNOWN
    finally:
        if recorder is not None:
            recorder.close()
    print(
        snapshot.to_json(fleet) if args.json else report_text.render(fleet),
        end="" if not args.json else "\n",
    )
    return snapshot.exit_code(fleet)


def _dashboard(
    transports: Sequence[Transport], cfg: Config, record: str | None, clock=None, inventory=None
) -> int:
    from dltui.transport.recording.recorder import RecordError
    from dltui.ui.app import run_dashboard

    try:
        return run_dashboard(transports, cfg, record=record, clock=clock, inventory=inventory)
    except RecordError as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return 2
