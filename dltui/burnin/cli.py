"""``dltui burn-in HOST...``, ``dltui burn-in attach RUN HOST...``, ``dltui burn-in stop RUN
HOST...``. Exit 0 pass, 1 warnings, 2 a failure, 3 could not run or judge (a usage error is 3
too: the caller is a script that must not read it as "a GPU failed")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dltui import private_files, stopping
from dltui.actions.audit import AuditLog
from dltui.actions.policy import ActionSettings
from dltui.actions.scheduler import SchedulerActions
from dltui.actions.service import ActionService
from dltui.config import Config
from dltui.transport.hostspec import expand_ranges
from dltui.transport.ssh.commands import SshCommands

from . import progress, scheduler_gate
from .arguments import USAGE_ERROR, BurnInOptions, StartOptions, StopOptions
from .remote import new_run_id
from .session import BurnIn, BurnInLauncher, see_through

if TYPE_CHECKING:
    from dltui.history import HistorySource


def run(options: BurnInOptions, cfg: Config, runner: SshCommands, history: HistorySource | None = None) -> int:
    """Start, attach or stop; ``cfg`` has the command line over the file (read-only, interval).
    Every command goes through ``runner`` (built by ``dltui.wiring``: a connection per node,
    reused), closed at the end; the same ``BurnInLauncher`` the dashboard uses makes the session
    and its plan."""
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
        session = _launcher(runner, hosts, cfg).session(hosts, options.run_id or "-")
        session.refused(f"burnin-{mode}", why)  # audited; nothing is sent, no connection opened
        print(f"dltui: {why}", file=sys.stderr)
        return USAGE_ERROR
    # named now, not inside the run: Ctrl-C's "come back with" line must name a new run too
    run_id = options.run_id or new_run_id()
    try:
        return stopping.run(_main(options, run_id, hosts, runner, cfg, history))
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: this side lets go, the run goes on
        print(
            f"\ndetached; the run goes on on the nodes. Come back with: dltui burn-in attach "
            f"{run_id} {' '.join(hosts)}",
            file=sys.stderr,
        )
        return USAGE_ERROR


async def _main(
    options: BurnInOptions,
    run_id: str,
    hosts: list[str],
    runner: SshCommands,
    cfg: Config,
    history: HistorySource | None = None,  # the report's "before the run" ([prometheus] url)
) -> int:
    launcher = _launcher(runner, hosts, cfg, history)
    thresholds = cfg.burnin
    try:
        if isinstance(options, StartOptions) and not options.force:  # never load someone's work
            refused = await launcher.refusals(hosts)
            for host, why in refused.items():
                print(f"{host}: not started: {why}", file=sys.stderr)
            hosts = [h for h in hosts if h not in refused]
            if not hosts:
                return USAGE_ERROR
        session = launcher.session(hosts, run_id)
        if isinstance(options, StopOptions):
            return await _stop(session)
        if isinstance(options, StartOptions):
            plan = launcher.plan(
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
        shown = [display]

        def display_closed() -> None:  # once: a terminal's close redraws its lines in place
            while shown:
                shown.pop().close()

        async def drain_failed() -> None:  # --drain-on-fail, between the verdict and the report
            display_closed()
            if isinstance(options, StartOptions) and options.drain_on_fail:
                drains = await scheduler_gate.drain_failed(
                    SchedulerActions(ActionService(runner, ActionSettings.from_config(cfg), session.audit)),
                    session.verdicts, run_id, launcher.slurm_nodes(hosts),
                )
                for r in drains:
                    print(f"{r.node}: drain: {r.outcome}: {r.message}")

        try:
            # attaching read-only writes the report here, nothing on the nodes
            end = await see_through(
                session, _report_folder(options.report, run_id), on_status=display,
                after_judge=drain_failed, leave_on_nodes=not cfg.read_only,
            )
        finally:
            display_closed()
        code, paths = end.code, end.paths
        if end.unwritten is not None:
            print(f"dltui: {end.unwritten}; the report was not written", file=sys.stderr)
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
        await runner.close()


def _launcher(
    runner: SshCommands, hosts: list[str], cfg: Config, history: HistorySource | None = None
) -> BurnInLauncher:
    return BurnInLauncher(runner, tuple(hosts), AuditLog(), cfg, history)


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


async def _stop(session: BurnIn) -> int:
    answers = await session.stop()
    code = 0
    for host, answer in answers.items():
        if answer.ok:
            left = " (scratch files LEFT: remove them by hand)" if answer.scratch_left else ""
            print(f"{host}: stopped{left}")
        else:
            print(f"{host}: not stopped: {answer.reason}", file=sys.stderr)
            code = USAGE_ERROR
    return code
