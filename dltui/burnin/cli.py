"""``dltui burn-in HOST...``, ``dltui burn-in attach RUN HOST...``, ``dltui burn-in stop RUN
HOST...``. Exit 0 pass, 1 warnings, 2 a failure, 3 could not run or judge (a usage error is 3
too: the caller is a script that must not read it as "a GPU failed")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dltui import private_files, stopping
from dltui.config import Config
from dltui.transport.hostspec import expand_ranges
from dltui.transport.ssh.options import SshOptions

from . import progress, verdict
from .arguments import USAGE_ERROR
from .remote import NodeShell, new_run_id
from .session import BurnIn, Plan


def run(mode: str, args: argparse.Namespace, cfg: Config, ssh: SshOptions) -> int:
    """Start, attach or stop; ``cfg`` has the command line over the file (read-only, interval)."""
    hosts = list(dict.fromkeys(expand_ranges(args.hosts)))
    if mode != "stop" and args.report and not Path(args.report).is_dir():
        print(f"dltui: --report {args.report}: not a directory", file=sys.stderr)
        return USAGE_ERROR
    if mode != "stop" and args.run_id and (why := _report_refused(args)):
        print(f"dltui: {why}", file=sys.stderr)  # said now, not after hours of load
        return USAGE_ERROR
    if mode in ("start", "stop") and cfg.read_only:
        why = "burn-in changes the nodes (it loads them); refused under --read-only"
        run_id = getattr(args, "run_id", None) or "-"
        BurnIn(NodeShell(ssh), hosts, run_id).refused(f"burnin-{mode}", why)
        print(f"dltui: {why}", file=sys.stderr)
        return USAGE_ERROR
    try:
        args.read_only = cfg.read_only  # the flag or the config file's read_only
        return stopping.run(_main(mode, args, hosts, ssh, cfg))
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: this side lets go, the run goes on
        run_id = getattr(args, "run_id", None) or "RUN"
        print(
            f"\ndetached; the run goes on on the nodes. Come back with: dltui burn-in attach "
            f"{run_id} {' '.join(hosts)}",
            file=sys.stderr,
        )
        return USAGE_ERROR


async def _main(
    mode: str, args: argparse.Namespace, hosts: list[str], ssh: SshOptions, cfg: Config
) -> int:
    shell = NodeShell(ssh)
    thresholds = cfg.burnin
    try:
        if mode == "stop":
            return await _stop(shell, args.run_id, hosts)
        run_id = args.run_id or new_run_id()
        args.run_id = run_id
        session = BurnIn(shell, hosts, run_id, thresholds=thresholds)
        if mode == "start":
            plan = Plan.from_config(
                cfg,
                duration_s=args.duration,
                gpu=args.gpu,
                cpu=args.cpu,
                memory=args.memory,
                disk=args.disk,
                disk_size=args.disk_size,
                net=args.net,
                net_port=args.net_port,
                expected_gpus=args.expected_gpus,
                preflight_s=args.preflight,
                post_s=args.post,
                launcher=args.launcher,
            )
            await session.start(plan)
            for host, why in session.failed.items():
                print(f"{host}: not started: {why}", file=sys.stderr)
            print(
                f"burn-in {run_id} on {', '.join(h for h in hosts if h not in session.failed)}; "
                "Ctrl-C detaches (the run goes on)",
                file=sys.stderr,
            )
        following = [h for h in hosts if h not in session.failed]
        display = progress.for_stream(sys.stderr, following, verdict.settings(thresholds))
        try:
            await session.follow(display)
        finally:
            display.close()
        code = await session.judge()
        paths = _write_report(session, args)
        if paths is not None and not args.read_only:  # attaching read-only writes nothing on the nodes
            await session.leave_report_on_nodes(paths)
        for v in session.verdicts:
            print(f"{v.node}: {v.headline()}")
            for item in v.problems():
                where = f"GPU {item.gpu} " if item.gpu is not None else ""
                step = f" -> {item.next_step}" if item.next_step else ""
                print(f"  {where}{item.check}: {item.status}: {item.evidence}{step}")
        if paths is None:
            code = USAGE_ERROR  # judged, but the report it promised is not there
        else:
            print(
                f"report: {paths['md']} {paths['html']} {paths['json']} (replay: dltui replay "
                f"{paths['recording']})"
            )
        for host, why in session.recording_errors.items():
            print(f"{host}: {why}", file=sys.stderr)
        for notice in session.notices:
            print(notice, file=sys.stderr)
        return code
    finally:
        await shell.close()


def _report_folder(args: argparse.Namespace) -> Path:
    return Path(args.report) / f"burnin-{args.run_id}"


def _report_refused(args: argparse.Namespace) -> str | None:
    """Why the report folder of a run named in advance (attach, --run-id) cannot be written,
    as one line; None when it can (it may be made then, or is the operator's own)."""
    try:
        private_files.check_own_folder(_report_folder(args))
    except private_files.UnsafePath as exc:
        return str(exc)
    except OSError:
        pass  # unreadable now: said when the report is written
    return None


def _write_report(session: BurnIn, args: argparse.Namespace) -> dict[str, Path] | None:
    """The report's paths; None, said in one line, when it could not be written (a link or
    another user's folder planted at its name, a full disk)."""
    try:
        return session.write_report(_report_folder(args))
    except private_files.UnsafePath as exc:
        why = str(exc)
    except OSError as exc:
        why = f"{_report_folder(args)}: {exc.strerror or exc}"
    print(f"dltui: {why}; the report was not written", file=sys.stderr)
    return None


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
