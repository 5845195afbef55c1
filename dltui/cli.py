"""Command line: ``dltui [HOST ...]`` and its subcommands. See ``dltui --help``.

argparse only: parse, then hand the settings to ``dltui.wiring``, which builds and runs.
Each subcommand takes only the options that mean something there, and its help ends with
its exit codes. Numbers are checked against their declared ranges (``dltui.config``).
"""

# PYTHON_ARGCOMPLETE_OK  (argcomplete: this entry point completes itself)

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, TypeVar

from dltui import __version__
from dltui.config import CommandLine, Config, ConfigError, theme_dirs
from dltui.config_schema import default, option
from dltui.node.schema import MAX_INTERVAL_S, MIN_INTERVAL_S

if TYPE_CHECKING:
    from dltui.wiring import Settings, SnapshotOptions, Source

SUBCOMMANDS = (
    "watch", "snapshot", "demo", "replay", "export", "serve", "burn-in", "unit", "signal",
    "drain", "resume", "cordon", "uncordon", "completion",
)
HOST_HELP = (
    "nodes as ssh(1) takes them: a Host alias from the SSH config, user@host, host:port, "
    "user@host:port; ranges as pdsh writes them, gpu[01-16]; none or 'localhost' = this machine"
)
DASHBOARD_EXITS = "Exit 0 when you quit (q, Ctrl-C, SIGTERM); 1 when the dashboard stopped on an " \
    "error (one line here, the traceback in the log file); 2 a usage or config error."
SNAPSHOT_EXITS = "Exit 0 ok, 1 warning, 2 critical, 3 unknown (a node unreachable or silent, a " \
    "usage or config error, or interrupted) -- the Nagios plugin convention."

# A usage or config error: 2 as Unix tools do; but 'snapshot' runs under monitoring, where 2
# means CRITICAL, so there it is 3 (UNKNOWN) -- a typo in a config file must not page anyone.
USAGE_ERROR = 2
SNAPSHOT_USAGE_ERROR = 3


@dataclass(frozen=True)
class CommonOptions:
    """The shared options, typed: what settings and dltui's log are made from. An option the
    subcommand does not take keeps its default here."""

    config: str | None = None
    log_file: str | None = None
    debug: bool = False
    interval_s: float | None = None
    theme: str | None = None
    read_only: bool = False
    record: str | None = None
    jump: str | None = None
    ssh_config: str | None = None
    identity: tuple[str, ...] = ()
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    history_from: str | None = None  # --history-from URL: [prometheus] url


@dataclass(frozen=True)
class Shared:
    """Which shared options a subcommand takes: ``add`` puts them on its parser, ``read`` takes
    them off the parsed line, one spec for both so they cannot disagree."""

    ssh: bool = True
    interval: bool = True
    theme: bool = False
    read_only: bool = False
    record: bool = False
    history: bool = False  # --history-from URL

    def add(self, parser: argparse.ArgumentParser) -> None:
        if self.ssh:
            group = parser.add_argument_group("reaching nodes (as ssh does)")
            group.add_argument("-J", "--jump", metavar="DEST", help="jump host(s), like ssh -J (comma-separated chain)")
            group.add_argument("-F", "--ssh-config", metavar="FILE", help="SSH config file (default ~/.ssh/config)")
            group.add_argument(
                "-i", "--identity", metavar="FILE", action="append", default=[], help="private key file (repeatable)"
            )
            group.add_argument(
                "--known-hosts",
                metavar="FILE",
                help="known_hosts file (default: the SSH config's, else ~/.ssh/known_hosts)",
            )
            group.add_argument(
                "--accept-new-host-keys",
                action="store_true",
                help="add unknown host keys to known_hosts (like StrictHostKeyChecking=accept-new); "
                "changed keys are still refused",
            )
        gen = parser.add_argument_group("general")
        if self.interval:
            gen.add_argument(
                "--interval",
                type=option(Config, "interval_s"),
                metavar="SECONDS",
                help=f"seconds between samples, {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} (default 1)",
            )
        gen.add_argument("--config", metavar="FILE", help="config file (default ~/.config/dltui/config.toml)")
        if self.theme:
            themes = gen.add_argument("--theme", metavar="NAME", help="colour theme (the list: docs/dashboard.md)")
            themes.completer = _theme_names  # type: ignore[attr-defined]
        if self.read_only:
            gen.add_argument("--read-only", action="store_true", help="disable every action that changes a node")
        if self.record:
            gen.add_argument(
                "--record",
                metavar="FILE",
                help="also write every sample and event to FILE for 'dltui replay' (.gz compresses)",
            )
        if self.history:
            gen.add_argument(
                "--history-from",
                metavar="URL",
                help="the Prometheus that keeps the nodes' past: charts reach back 6 h / 24 h / 7 d "
                "(default: [prometheus] url of the config)",
            )
        gen.add_argument("--log-file", metavar="FILE", help="dltui's log (default ~/.local/state/dltui/dltui.log)")
        gen.add_argument("--debug", action="store_true", help="log debug records too (connections, commands)")

    def read(self, args: argparse.Namespace) -> CommonOptions:
        common = CommonOptions(config=args.config, log_file=args.log_file, debug=args.debug)
        if self.ssh:
            common = replace(
                common,
                jump=args.jump,
                ssh_config=args.ssh_config,
                identity=tuple(args.identity),
                known_hosts=args.known_hosts,
                accept_new_host_keys=args.accept_new_host_keys,
            )
        if self.interval:
            common = replace(common, interval_s=args.interval)
        if self.theme:
            common = replace(common, theme=args.theme)
        if self.read_only:
            common = replace(common, read_only=args.read_only)
        if self.record:
            common = replace(common, record=args.record)
        if self.history:
            common = replace(common, history_from=args.history_from)
        return common


# what each subcommand takes of the shared options
WATCH = Shared(theme=True, read_only=True, record=True, history=True)
SNAPSHOT = Shared(record=True, history=True)
DEMO = Shared(ssh=False, theme=True, read_only=True, record=True, history=True)
REPLAY = Shared(ssh=False, interval=False, theme=True, read_only=True)
EXPORT = Shared(record=True)
SERVE = Shared(theme=True, read_only=True, history=True)
ACTIONS = Shared(interval=False, read_only=True)
BURN_IN = Shared(read_only=True)


def add_prometheus(parser: argparse.ArgumentParser) -> None:
    """``--prometheus URL`` and ``--match SELECTOR`` (dltui.transport.prometheus reads them)."""
    group = parser.add_argument_group("reading nodes from Prometheus instead of SSH")
    group.add_argument(
        "--prometheus",
        metavar="URL",
        help="build the fleet from this Prometheus (node_exporter + dcgm-exporter series)",
    )
    group.add_argument(
        "--match", metavar="SELECTOR", help="only series matching these label matchers, e.g. '{job=~\"gpu.*\"}'"
    )


def _number(parser: argparse.ArgumentParser, flag: str, attr: str, help_: str, **kw) -> None:
    """A numeric option declared in ``config.CommandLine``: its range is a usage error."""
    parser.add_argument(flag, type=option(CommandLine, attr), default=default(CommandLine, attr), help=help_, **kw)


def _hosts(parser: argparse.ArgumentParser, nargs: str = "*") -> None:
    hosts = parser.add_argument("hosts", nargs=nargs, metavar="HOST", help=HOST_HELP)
    hosts.completer = _host_names  # type: ignore[attr-defined]


def build_parser() -> argparse.ArgumentParser:
    from dltui.actions.arguments import add_parsers as add_actions
    from dltui.actions.sched_cli import add_parsers as add_scheduler
    from dltui.burnin.arguments import add_start_arguments
    from dltui.export.command import add_parser as add_export
    from dltui.ui.serve.command import add_parser as add_serve  # argparse only: no Textual

    parser = argparse.ArgumentParser(
        prog="dltui",
        description="Terminal dashboard for deep-learning GPU servers. "
        "With no subcommand: the live dashboard ('watch') on the given nodes.",
        epilog="Exit codes of 'snapshot': 0 ok, 1 warning, 2 critical, 3 unknown (a node unreachable). "
        "Each command's --help lists its own.",
    )
    parser.add_argument("--version", action="version", version=f"dltui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.completer = _first_word  # type: ignore[attr-defined]

    def command(name: str, help_: str, description: str, epilog: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=description, epilog=epilog)

    watch = command("watch", "live dashboard (the default command)", "Live dashboard on the given nodes.",
                    DASHBOARD_EXITS)
    _hosts(watch)
    add_prometheus(watch)
    WATCH.add(watch)

    snap = command(
        "snapshot",
        "watch for a few seconds, print a triage report, exit 0/1/2/3",
        "Watch the nodes for --seconds, then print one report.",
        SNAPSHOT_EXITS,
    )
    _hosts(snap)
    snap.add_argument("--json", action="store_true", help="print one JSON document (schema: docs/json-schema.md)")
    _number(snap, "--seconds", "seconds", "how long to watch before reporting, 0.1 to 86400 (default 3)")
    snap.add_argument(
        "--since",
        metavar="DURATION",
        type=_since,
        help="also report the alerts the rules find in the nodes' past from Prometheus (--history-from "
        "or [prometheus] url) over this window, e.g. 7d, 24h (at most 30d)",
    )
    add_prometheus(snap)
    SNAPSHOT.add(snap)

    demo = command("demo", "dashboard on a seeded simulated fleet", "Dashboard on a simulated fleet.",
                   DASHBOARD_EXITS)
    _number(demo, "--nodes", "nodes", "number of simulated nodes, 1 to 4096 (default 12)")
    _number(demo, "--gpus", "gpus", "GPUs per node, 1 to 64 (default 8)")
    _number(demo, "--seed", "seed", "random seed (default 7)")
    DEMO.add(demo)

    rep = command("replay", "dashboard on a recording made with --record", "Play a recording made with --record.",
                  DASHBOARD_EXITS)
    rep.add_argument("file", metavar="FILE", help="the recording")
    _number(rep, "--speed", "speed", "2 = twice as fast, 0 = all at once (default 1)")
    REPLAY.add(rep)

    add_export(sub, EXPORT.add, HOST_HELP)
    add_serve(sub, SERVE.add, add_prometheus, _hosts)
    add_actions(sub, ACTIONS.add, _number)
    add_scheduler(sub, ACTIONS.add)
    burn = sub.add_parser(
        "burn-in",
        help="start, attach to or stop a burn-in (dltui burn-in --help)",
        description="Start a burn-in (dltui burn-in HOST...), follow one (attach RUN HOST...) or "
        "stop one (stop RUN HOST...).",
    )
    add_start_arguments(burn, BURN_IN.add, HOST_HELP)
    comp = command(
        "completion",
        "print the shell completion script: bash, zsh or fish",
        "Print a completion script for your shell, e.g. in ~/.bashrc: "
        'eval "$(dltui completion bash)"; in ~/.zshrc: eval "$(dltui completion zsh)"; '
        "fish: dltui completion fish > ~/.config/fish/completions/dltui.fish",
        "Exit 0; 2 for an unknown shell.",
    )
    comp.add_argument("shell", choices=("bash", "zsh", "fish"))
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    # "dltui gpu01 gpu02" means "dltui watch gpu01 gpu02".
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        _refuse_a_mistyped_command(argv)
        argv = ["watch", *argv]
    return build_parser().parse_args(argv)


def _refuse_a_mistyped_command(argv: list[str]) -> None:
    """``dltui snapshott`` is a typo, not a host named "snapshott": a first word close to a
    subcommand that is not a Host of the SSH config is a usage error with the suggestion."""
    word = argv[0] if argv else ""
    if not word or word.startswith("-") or any(c in word for c in ".@:[/"):
        return
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.75)
    if not close:
        return
    from dltui.transport.ssh.aliases import host_aliases

    config = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-F", "--ssh-config")), None)
    if word.lower() in {h.lower() for h in host_aliases(config)}:
        return
    print(
        f"dltui: {word!r} is not a command (did you mean {close[0]!r}?); "
        f"to watch a host of that name: dltui watch {word}",
        file=sys.stderr,
    )
    raise SystemExit(2)


# -- from the parsed line to a run: one shape for every subcommand ---------------------------

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class Command(Generic[OptionsT]):
    """A subcommand: the shared options it takes, the converter from its parsed line to its
    typed options (the Namespace goes no further than this), and the run that takes them."""

    shared: Shared
    options: Callable[[argparse.Namespace], OptionsT]
    run: Callable[[Settings, OptionsT], int]

    def prepare(self, args: argparse.Namespace) -> tuple[CommonOptions, Callable[[Settings], int]]:
        options = self.options(args)
        return self.shared.read(args), lambda settings: self.run(settings, options)


def _prepared(args: argparse.Namespace, argv: list[str]) -> tuple[CommonOptions, Callable[[Settings], int]]:
    """``args`` parsed from ``dltui COMMAND argv``, as its command's shared and typed options."""
    from dltui import wiring
    from dltui.actions import arguments as actions
    from dltui.export import command as export
    from dltui.ui.serve import command as serve

    name = args.command
    if name == "snapshot":
        return Command(SNAPSHOT, _snapshot_options, wiring.snapshot).prepare(args)
    if name == "demo":
        return Command(DEMO, _demo_source, wiring.dashboard).prepare(args)
    if name == "replay":
        return Command(REPLAY, _replay_source, wiring.dashboard).prepare(args)
    if name == "export":
        return Command(EXPORT, export.options_from, wiring.export).prepare(args)
    if name == "serve":  # each browser tab runs 'watch' with serve's command line
        return Command(SERVE, lambda a: serve.options_from(a, argv), wiring.serve).prepare(args)
    if name == "unit":
        return Command(ACTIONS, actions.unit_options_from, wiring.unit_actions).prepare(args)
    if name == "signal":
        return Command(ACTIONS, actions.signal_options_from, wiring.unit_actions).prepare(args)
    if name in ("drain", "resume", "cordon", "uncordon"):
        from dltui.actions import sched_cli

        return Command(ACTIONS, sched_cli.options_from, wiring.scheduler_actions).prepare(args)
    return Command(WATCH, _hosts_source, wiring.dashboard).prepare(args)


def _hosts_source(args: argparse.Namespace) -> Source:
    """watch's and snapshot's nodes: over SSH, or what a Prometheus sees."""
    from dltui import wiring

    if args.prometheus or args.match:
        return wiring.Prometheus(args.prometheus, args.match, args.interval, tuple(args.hosts))
    return wiring.Hosts(tuple(args.hosts))


def _snapshot_options(args: argparse.Namespace) -> SnapshotOptions:
    from dltui import wiring

    return wiring.SnapshotOptions(_hosts_source(args), args.seconds, args.json, since_s=args.since)


def _since(text: str) -> float:
    """``--since``: a duration (``7d``, ``24h``, ``90m``) of at most 30 days."""
    from dltui.history.plan import duration_s

    seconds = duration_s(text)
    if seconds is None or not 60 <= seconds <= 30 * 86400:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a duration from 1m to 30d, such as 7d or 24h")
    return seconds


def _demo_source(args: argparse.Namespace) -> Source:
    from dltui import wiring

    return wiring.Demo(args.nodes, args.gpus, args.seed)


def _replay_source(args: argparse.Namespace) -> Source:
    from dltui import wiring

    return wiring.Replay(args.file, args.speed)


def settings(common: CommonOptions) -> Settings:
    """The command line's settings over the environment's and the config file's."""
    from dltui import wiring

    return wiring.load_settings(
        common.config,
        interval_s=common.interval_s,
        theme=common.theme,
        read_only=common.read_only,
        record=common.record,
        jump=common.jump,
        ssh_config=common.ssh_config,
        identity=common.identity,
        known_hosts=common.known_hosts,
        accept_new_host_keys=common.accept_new_host_keys,
        history_from=common.history_from,
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _complete_if_asked()
    if argv[:1] == ["burn-in"]:  # its own parsers: start, attach RUN, stop RUN
        return _burn_in(argv[1:])
    error_code = SNAPSHOT_USAGE_ERROR if argv[:1] == ["snapshot"] else USAGE_ERROR
    try:
        args = parse(argv)
    except SystemExit as exc:  # argparse has printed the usage error
        return error_code if exc.code == 2 else int(exc.code or 0)
    if args.command is None:
        return USAGE_ERROR
    if args.command == "completion":
        return _completion(args.shell)
    return _start(*_prepared(args, argv[1:]), error_code)


def _start(common: CommonOptions, run: Callable[[Settings], int], error_code: int) -> int:
    """dltui's log, the settings, then the command: a usage or config mistake is one line and
    ``error_code``, never a traceback."""
    if not _setup_log(common):
        return error_code
    return _guarded(lambda: run(settings(common)), error_code)


def _setup_log(common: CommonOptions) -> bool:
    """dltui's log set up; False, said in one line, when its path is refused (a link or another
    user's file planted there)."""
    from dltui import logs

    try:
        logs.setup(common.log_file, common.debug)
    except logs.LogFileError as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return False
    return True


def _guarded(run: Callable[[], int], error_code: int) -> int:
    """A usage or config mistake is one line and ``error_code``, never a traceback."""
    from dltui.transport.hostspec import HostSpecError
    from dltui.transport.recording.recorder import RecordError
    from dltui.transport.recording.replay import ReplayError

    try:
        return run()
    except (ConfigError, HostSpecError, RecordError, ReplayError) as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return error_code


def _burn_in(argv: list[str]) -> int:
    from dltui.burnin.arguments import USAGE_ERROR as BURN_IN_USAGE_ERROR
    from dltui.burnin.arguments import build_parser as burn_in_parser
    from dltui.burnin.arguments import options_from

    mode = argv[0] if argv[:1] and argv[0] in ("stop", "attach") else "start"
    try:
        args = burn_in_parser(mode, BURN_IN.add, HOST_HELP).parse_args(argv[1:] if mode != "start" else argv)
    except SystemExit as exc:
        return BURN_IN_USAGE_ERROR if exc.code == 2 else int(exc.code or 0)
    from dltui import wiring

    command = Command(BURN_IN, lambda a: options_from(mode, a), wiring.burn_in)
    return _start(*command.prepare(args), BURN_IN_USAGE_ERROR)


# -- completion (argcomplete) -----------------------------------------------------------------


def _complete_if_asked() -> None:
    """Under the shell's completion hook (argcomplete's _ARGCOMPLETE), print the completions
    and exit; otherwise return at once."""
    import os

    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(build_parser(), always_complete_options=False)


def _completion(shell: str) -> int:
    import argcomplete

    print(argcomplete.shellcode(["dltui"], shell=shell))
    return 0


def _host_names(prefix: str, parsed_args: argparse.Namespace | None = None, **_: object) -> list[str]:
    from dltui.transport.ssh.aliases import host_aliases

    hosts = host_aliases(getattr(parsed_args, "ssh_config", None))
    return [h for h in ["localhost", *hosts] if h.startswith(prefix)]


def _first_word(prefix: str, parsed_args: argparse.Namespace | None = None, **_: object) -> list[str]:
    """A subcommand or, for the dashboard, a host ("dltui gp<TAB>")."""
    return [c for c in SUBCOMMANDS if c.startswith(prefix)] + _host_names(prefix, parsed_args)


def _theme_names(prefix: str, **_: object) -> list[str]:
    names = {p.stem for folder in theme_dirs() for p in _tomls(folder)}
    return sorted(n for n in names if n.startswith(prefix))


def _tomls(folder):
    try:
        return list(folder.glob("*.toml"))
    except OSError:
        return []
