"""``dltui burn-in HOST...``, ``dltui burn-in attach RUN HOST...``, ``dltui burn-in stop RUN
HOST...``. Exit 0 pass, 1 warnings, 2 a failure, 3 could not run or judge (a usage error is 3
too: the caller is a script that must not read it as "a GPU failed")."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from dltui.config import Config
from dltui.transport.hostspec import expand_ranges
from dltui.transport.ssh.options import SshOptions

from .remote import NodeRunView, NodeShell, new_run_id
from .session import BurnIn, Plan
from .ship import check_run_id

USAGE_ERROR = 3
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")


def duration(text: str) -> int:
    m = _DURATION.match(text.strip().lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: give a duration like 30s, 90m, 2h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if seconds < 1:
        raise argparse.ArgumentTypeError("the duration must be at least 1 s")
    return int(seconds)


def _run_id(text: str) -> str:
    try:
        return check_run_id(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class EntryLayer(NamedTuple):
    """What this command borrows from dltui's own command line, handed in by it (this package
    sits below the entry layer and must not import it)."""

    host_help: str
    common: Callable[[argparse.ArgumentParser], None]  # the options every command takes
    settings: Callable[[argparse.Namespace], tuple[Config, SshOptions]]


def build_parser(mode: str, entry: EntryLayer) -> argparse.ArgumentParser:
    HOST_HELP, _common = entry.host_help, entry.common
    if mode == "start":
        p = argparse.ArgumentParser(
            prog="dltui burn-in",
            description="Start a burn-in on the nodes (it runs there, "
            "detached), follow it to the end, judge it and write the report. Ctrl-C detaches; "
            "'dltui burn-in attach RUN HOST...' comes back to it.",
        )
        p.add_argument("hosts", nargs="+", metavar="HOST", help=HOST_HELP)
        p.add_argument("--duration", type=duration, default=7200, help="load phase (default 2h)")
        p.add_argument(
            "--gpu",
            choices=("auto", "dcgm", "gpu-burn", "torch", "none"),
            default="auto",
            help="GPU stressor (default auto: gpu_burn, else dcgmi, else torch)",
        )
        p.add_argument("--cpu", action="store_true", help="stress-ng --cpu with --verify")
        p.add_argument("--memory", action="store_true", help="stress-ng --vm with --verify")
        p.add_argument(
            "--disk",
            metavar="PATH",
            help="fio in a fresh scratch directory under PATH "
            "(a directory on a mounted file system; never a device)",
        )
        p.add_argument("--disk-size", default="4G", help="fio file size per job (default 4G)")
        p.add_argument(
            "--net",
            metavar="PEER",
            help="a node of the run that serves iperf3; the other nodes test against it",
        )
        p.add_argument("--net-port", type=int, default=5201, help="iperf3 port (default 5201)")
        p.add_argument("--expected-gpus", type=int, metavar="N", help="GPUs each node must have")
        p.add_argument(
            "--preflight", type=duration, default=10, help="baseline seconds (default 10s)"
        )
        p.add_argument(
            "--post", type=duration, default=10, help="seconds after the load (default 10s)"
        )
        p.add_argument(
            "--launcher",
            choices=("auto", "setsid", "systemd"),
            default="auto",
            help="how the node runs it detached (auto: systemd-run as root on systemd)",
        )
        p.add_argument(
            "--run-id", type=_run_id, help="name of the run (default: the start time)"
        )
    else:
        verb = {
            "stop": "Stop a running burn-in (its scratch files are deleted)",
            "attach": "Follow a running burn-in from where it is, then judge and report",
        }[mode]
        p = argparse.ArgumentParser(prog=f"dltui burn-in {mode}", description=verb)
        p.add_argument("run_id", metavar="RUN", type=_run_id)
        p.add_argument("hosts", nargs="+", metavar="HOST", help=HOST_HELP)
    if mode != "stop":
        p.add_argument(
            "--report",
            metavar="DIR",
            default=".",
            help="where the report folder goes (default: the current directory)",
        )
    _common(p)
    return p


def main(argv: list[str], entry: EntryLayer) -> int:
    mode = argv[0] if argv[:1] and argv[0] in ("stop", "attach") else "start"
    rest = argv[1:] if mode != "start" else argv
    try:
        args = build_parser(mode, entry).parse_args(rest)
    except SystemExit as exc:
        return USAGE_ERROR if exc.code == 2 else int(exc.code or 0)
    from dltui.config import ConfigError
    from dltui.transport.hostspec import HostSpecError

    try:
        cfg, ssh = entry.settings(args)
        hosts = list(dict.fromkeys(expand_ranges(args.hosts)))
    except (ConfigError, HostSpecError) as exc:
        print(f"dltui: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if mode != "stop" and args.report and not Path(args.report).is_dir():
        print(f"dltui: --report {args.report}: not a directory", file=sys.stderr)
        return USAGE_ERROR
    if mode in ("start", "stop") and cfg.read_only:
        why = "burn-in changes the nodes (it loads them); refused under --read-only"
        run_id = getattr(args, "run_id", None) or "-"
        BurnIn(NodeShell(ssh), hosts, run_id).refused(f"burnin-{mode}", why)
        print(f"dltui: {why}", file=sys.stderr)
        return USAGE_ERROR
    try:
        args.interval_s = cfg.interval_s
        args.read_only = cfg.read_only  # the flag or the config file's read_only
        return asyncio.run(_main(mode, args, hosts, ssh, cfg.burnin))
    except ValueError as exc:  # [burnin] settings
        print(f"dltui: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        run_id = getattr(args, "run_id", None) or "RUN"
        print(
            f"\ndetached; the run goes on on the nodes. Come back with: dltui burn-in attach "
            f"{run_id} {' '.join(hosts)}",
            file=sys.stderr,
        )
        return USAGE_ERROR


async def _main(mode: str, args: argparse.Namespace, hosts: list[str], ssh, thresholds) -> int:
    shell = NodeShell(ssh)
    try:
        if mode == "stop":
            return await _stop(shell, args.run_id, hosts)
        run_id = args.run_id or new_run_id()
        args.run_id = run_id
        session = BurnIn(shell, hosts, run_id, thresholds=thresholds)
        if mode == "start":
            plan = Plan(
                args.duration,
                args.gpu,
                args.cpu,
                args.memory,
                args.disk,
                args.disk_size,
                args.net,
                args.net_port,
                args.expected_gpus,
                args.preflight,
                args.post,
                args.launcher,
                args.interval_s,
            )
            await session.start(plan)
            for host, why in session.failed.items():
                print(f"{host}: not started: {why}", file=sys.stderr)
            print(
                f"burn-in {run_id} on {', '.join(h for h in hosts if h not in session.failed)}; "
                "Ctrl-C detaches (the run goes on)",
                file=sys.stderr,
            )
        await session.follow(_progress_printer())
        code = await session.judge()
        paths = session.write_report(Path(args.report) / f"burnin-{run_id}")
        if not args.read_only:  # attaching read-only writes nothing on the nodes
            await session.leave_report_on_nodes(paths)
        for v in session.verdicts:
            print(f"{v.node}: {v.headline()}")
            for item in v.problems():
                where = f"GPU {item.gpu} " if item.gpu is not None else ""
                step = f" -> {item.next_step}" if item.next_step else ""
                print(f"  {where}{item.check}: {item.status}: {item.evidence}{step}")
        print(
            f"report: {paths['md']} {paths['html']} {paths['json']} (replay: dltui replay "
            f"{paths['recording']})"
        )
        for host, why in session.recording_errors.items():
            print(f"{host}: {why}", file=sys.stderr)
        return code
    finally:
        await shell.close()


async def _stop(shell: NodeShell, run_id: str, hosts: list[str]) -> int:
    answers = await BurnIn(shell, hosts, run_id).stop()
    code = 0
    for host, answer in answers.items():
        if answer.get("ok"):
            left = (
                " (scratch files LEFT: remove them by hand)" if answer.get("scratch_left") else ""
            )
            print(f"{host}: stopped{left}")
        else:
            print(f"{host}: not stopped: {answer.get('reason')}", file=sys.stderr)
            code = USAGE_ERROR
    return code


def _progress_printer():
    last: dict[str, float] = {}

    def show(view: NodeRunView) -> None:
        now = time.monotonic()
        if now - last.get(view.node, 0.0) < 10 and view.status.get("state") == "running":
            return
        last[view.node] = now
        s = view.status
        left = ""
        if s.get("load_ends"):
            left = f", {max(0, int(s['load_ends'] - s.get('time', 0)))} s of load left"
        print(
            f"{view.node}: {s.get('phase')} ({s.get('state')}){left}, {s.get('samples')} samples",
            file=sys.stderr,
        )

    return show
