"""``dltui burn-in HOST...``, ``dltui burn-in attach RUN HOST...``, ``dltui burn-in stop RUN
HOST...``. Exit 0 pass, 1 warnings, 2 a failure, 3 could not run or judge (a usage error is 3
too: the caller is a script that must not read it as "a GPU failed")."""

from __future__ import annotations

import sys
from pathlib import Path

from dltui import private_files, stopping
from dltui.config import Config
from dltui.transport.hostspec import expand_ranges
from dltui.transport.ssh.options import SshOptions

from . import progress
from .arguments import USAGE_ERROR, BurnInOptions, StartOptions, StopOptions
from .remote import NodeShell, new_run_id
from .session import BurnIn, Plan


def run(options: BurnInOptions, cfg: Config, ssh: SshOptions) -> int:
    """Start, attach or stop; ``cfg`` has the command line over the file (read-only, interval)."""
    mode = options.mode
    hosts = list(dict.fromkeys(expand_ranges(list(options.hosts))))
    report = None if isinstance(options, StopOptions) else options.report
    if report and not Path(report).is_dir():
        print(f"dltui: --report {report}: not a directory", file=sys.stderr)
        return USAGE_ERROR
    if report is not None and options.run_id and (why := _report_refused(report, options.run_id)):
        print(f"dltui: {why}", file=sys.stderr)  # said now, not after hours of load
        return USAGE_ERROR
    if mode in ("start", "stop") and cfg.read_only:
        why = "burn-in changes the nodes (it loads them); refused under --read-only"
        BurnIn(NodeShell(ssh), hosts, options.run_id or "-").refused(f"burnin-{mode}", why)
        print(f"dltui: {why}", file=sys.stderr)
        return USAGE_ERROR
    # named now, not inside the run: Ctrl-C's "come back with" line must name a new run too
    run_id = options.run_id or new_run_id()
    try:
        return stopping.run(_main(options, run_id, hosts, ssh, cfg))
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: this side lets go, the run goes on
        print(
            f"\ndetached; the run goes on on the nodes. Come back with: dltui burn-in attach "
            f"{run_id} {' '.join(hosts)}",
            file=sys.stderr,
        )
        return USAGE_ERROR


async def _main(
    options: BurnInOptions, run_id: str, hosts: list[str], ssh: SshOptions, cfg: Config
) -> int:
    shell = NodeShell(ssh)
    thresholds = cfg.burnin
    try:
        if isinstance(options, StopOptions):
            return await _stop(shell, run_id, hosts)
        session = BurnIn(shell, hosts, run_id, thresholds=thresholds)
        if isinstance(options, StartOptions):
            plan = Plan.from_config(
                cfg,
                duration_s=options.duration_s,
                gpu=options.gpu,
                cpu=options.cpu,
                memory=options.memory,
                disk=options.disk,
                disk_size=options.disk_size,
                net=options.net,
                net_port=options.net_port,
                expected_gpus=options.expected_gpus,
                preflight_s=options.preflight_s,
                post_s=options.post_s,
                launcher=options.launcher,
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
        display = progress.for_stream(sys.stderr, following, thresholds)
        try:
            await session.follow(display)
        finally:
            display.close()
        code = await session.judge()
        paths = _write_report(session, _report_folder(options.report, run_id))
        if paths is not None and not cfg.read_only:  # attaching read-only writes nothing on the nodes
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


def _report_folder(report: str, run_id: str) -> Path:
    return Path(report) / f"burnin-{run_id}"


def _report_refused(report: str, run_id: str) -> str | None:
    """Why the report folder of a run named in advance (attach, --run-id) cannot be written,
    as one line; None when it can (it may be made then, or is the operator's own)."""
    try:
        private_files.check_own_folder(_report_folder(report, run_id))
    except private_files.UnsafePath as exc:
        return str(exc)
    except OSError:
        pass  # unreadable now: said when the report is written
    return None


def _write_report(session: BurnIn, folder: Path) -> dict[str, Path] | None:
    """The report's paths; None, said in one line, when it could not be written (a link or
    another user's folder planted at its name, a full disk)."""
    try:
        return session.write_report(folder)
    except private_files.UnsafePath as exc:
        why = str(exc)
    except OSError as exc:
        why = f"{folder}: {exc.strerror or exc}"
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
