"""One burn-in across nodes, from the operator's side: start (or attach), follow every node to
the end through drops, then judge, report, and leave the report on each node as well.

Used by the CLI and by the dashboard's burn-in screen; no Textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dltui import private_files
from dltui.actions.audit import AuditError, AuditLog, Pending
from dltui.config import BurninSection, Config
from dltui.core.text import clean, clean_value
from dltui.transport.command import CommandError, NodeCommands
from dltui.transport.scheduler import targets_from_config

from . import disk_speed, remote, report, scheduler_gate, ship, spool, verdict
from .remote import Answer, NodeRunView, RunCollector

if TYPE_CHECKING:
    from dltui.history import HistorySource

OUTPUTS = [
    "plan.json",
    "result.json",
    "gpu_burn.log",
    "dcgm.json",
    "matmul.jsonl",
    "rvs.log",
    "stress-ng.log",
    "fio.json",
    "iperf3.json",
    "iperf3-R.json",
    "kernel.log",
    "nccl.log",
    "bmc_sel.log",
]
_DRIVER_FILES = {"plan.json", "result.json"}


@dataclass
class Plan:
    duration_s: int = 7200
    gpu: str = "auto"
    cpu: bool = False
    memory: bool = False
    disk: str | None = None
    disk_size: str = "4G"
    net: str | None = None  # a node of the run that serves iperf3 to the others
    net_port: int = 5201
    expected_gpus: int | None = None
    preflight_s: float = 10.0
    post_s: float = 10.0
    launcher: str = "auto"
    interval_s: float = 1.0  # the node-side sample rate
    sysfs: str = "/sys"  # where the nodes' sysfs is mounted ([probe] sysfs)

    @classmethod
    def from_config(cls, cfg: Config, **choices: Any) -> Plan:
        """The plan of a run: the operator's choices for it (duration, stressors, …) over the
        defaults above, and what the config sets for every run: the sampling interval
        (``interval``, or ``--interval``) and the nodes' sysfs (``[probe] sysfs``). The CLI and
        the dashboard both build their plan here: a run started from either samples at the
        configured interval and reads the configured sysfs."""
        return cls(**choices, interval_s=cfg.interval_s, sysfs=cfg.probe.sysfs)


class BurnIn:
    """A run on ``hosts``: every command through ``runner`` (the node-command contract: the
    dashboard's fleet connections, or ``SshCommands`` for the CLI)."""

    def __init__(
        self,
        runner: NodeCommands,
        hosts: list[str],
        run_id: str,
        sink: Any = None,
        thresholds: BurninSection | dict[str, Any] | None = None,  # [burnin] or overrides of it
        audit: AuditLog | None = None,
        history: HistorySource | None = None,  # [prometheus] url: the report's "before the run"
    ):
        self.runner = runner
        self.python = runner.python
        self.audit = audit if audit is not None else AuditLog()  # starts and stops go there
        self.hosts = list(hosts)
        self.run_id = run_id
        self.thresholds = verdict.settings(thresholds)
        spools = spool.default_dir(run_id)
        self.views = {
            h: NodeRunView(
                h,
                run_id,
                RunCollector(
                    sink,
                    self.thresholds.ramp_s,
                    spool.Spool(spools / f"{_file_name(h)}.{os.getpid()}.jsonl", h),
                ),
            )
            for h in self.hosts
        }
        self.failed: dict[str, str] = {}  # node -> why it could not run or be followed
        self.iperf_peer: str | None = None  # where this session started an iperf3 server
        self.iperf_server: remote.IperfServer | None = None  # and how to stop it
        self.runs: list[verdict.NodeRun] = []
        self.verdicts: list[verdict.NodeVerdict] = []
        self.recording_errors: dict[str, str] = {}  # node -> why its local copy is incomplete
        self.notices: list[str] = []  # what else the operator must be told, one line each
        self.history = history
        self.before: dict[str, dict[str, Any]] = {}  # node -> its past alerts (history.past.NodePast)

    async def start(self, plan: Plan) -> None:
        """Starts every node at once; a refusal or an unreachable node is said on that node."""
        address = None
        if plan.net:
            address = f"{self.runner.address(plan.net)}:{plan.net_port}"
            await self._start_iperf_server(plan.net, plan)

        async def one(host: str) -> None:
            net = address if plan.net and host != plan.net else None
            args = remote.start_args(
                self.run_id,
                plan.duration_s,
                plan.gpu,
                plan.cpu,
                plan.memory,
                plan.disk,
                plan.disk_size,
                net,
                plan.expected_gpus,
                plan.preflight_s,
                plan.post_s,
                plan.launcher,
                plan.interval_s,
                smoke=self.thresholds.smoke or None,
                smoke_s=self.thresholds.smoke_s,
                smoke_ramp_s=self.thresholds.smoke_ramp_s,
                sysfs=plan.sysfs,
            )
            argv = [ship.DRIVER_NAME, "start", *args]
            try:
                pending = self.audit.begin(host, "burnin-start", argv, run_id=self.run_id)
            except AuditError as exc:
                self.failed[host] = f"{exc}; nothing was sent"
                return
            with pending:
                pending.sent = True
                answer = await remote.start(self.runner, host, args, self.python)
                if not answer.ok:
                    self.failed[host] = answer.reason
                _finish(pending, answer)

        await asyncio.gather(*(one(h) for h in self.hosts))

    async def _start_iperf_server(self, peer: str, plan: Plan) -> None:
        """The peer's iperf3 server for the others' network test (audited first, as a start)."""
        argv = ["iperf3", "-s", "-p", str(plan.net_port)]
        try:
            pending = self.audit.begin(peer, "burnin-iperf-server", argv, run_id=self.run_id)
        except AuditError as exc:
            self.failed[peer] = f"cannot start the iperf3 server: {exc}; nothing was sent"
            return
        with pending:
            pending.sent = True
            seconds = plan.preflight_s + plan.duration_s + 600
            argv = remote.sh(remote.iperf_server_command(plan.net_port, seconds))
            try:
                res = (await self.runner.run_command(peer, argv, remote.COMMAND_TIMEOUT_S)).check()
            except CommandError as exc:
                self.failed[peer] = f"cannot start the iperf3 server: {exc.reason}"
                pending.finish("failed", exc.reason)
                return
            self.iperf_server = remote.iperf_server_started(res.stdout, plan.net_port, seconds)
            if self.iperf_server is None:
                said = clean((res.stderr or res.stdout).strip())
                self.failed[peer] = f"cannot start the iperf3 server: {said}"
                pending.finish("failed", said)
                return
            self.iperf_peer = peer
            pending.finish("ok", "")

    async def _stop_iperf_server(self) -> None:
        """Every client is done: the peer's server goes, audited first like its start (the
        exact shell line sent). Unaudited, nothing is sent and its timeout(1) ends it."""
        peer, server = self.iperf_peer, self.iperf_server
        if peer is None or server is None:
            return
        self.iperf_peer = self.iperf_server = None
        line = remote.iperf_server_stop_command(server)
        try:
            pending = self.audit.begin(peer, "burnin-iperf-server-stop", ["sh", "-c", line], run_id=self.run_id)
        except AuditError as exc:
            self.notices.append(
                f"{peer}: the iperf3 server was left to end at its time limit: {exc}; nothing was sent"
            )
            return
        with pending:
            pending.sent = True
            try:
                res = (await self.runner.run_command(peer, remote.sh(line), remote.COMMAND_TIMEOUT_S)).check()
            except CommandError as exc:
                pending.finish("failed", exc.reason)
                return
            pending.finish("ok" if res.exit_status == 0 else "failed", f"exit {res.exit_status}")

    def refused(self, action: str, reason: str) -> None:
        """A start or stop refused before anything reached a node (--read-only): audited
        where the log can be written (the refusal stands either way)."""
        for host in self.hosts:
            with contextlib.suppress(AuditError):
                self.audit.record(host, action, None, "refused", reason, 0.0, run_id=self.run_id)

    async def follow(self, on_status: Callable[[NodeRunView], None] | None = None) -> None:
        spool.remove_stale(spool.default_dir(self.run_id))
        async def one(host: str) -> None:
            if host in self.failed:
                return
            try:
                await remote.follow(self.runner, self.views[host], self.python, on_status)
            except CommandError as exc:
                self.failed[host] = exc.reason

        await asyncio.gather(*(one(h) for h in self.hosts))

    async def stop(self) -> dict[str, Answer]:
        async def one(host: str) -> Answer:
            argv = [ship.DRIVER_NAME, "stop", "--wait", repr(60.0)]  # remote.stop's default
            try:
                pending = self.audit.begin(host, "burnin-stop", argv, run_id=self.run_id)
            except AuditError as exc:
                return Answer(False, f"{exc}; nothing was sent")
            with pending:
                pending.sent = True
                answer = _finish(pending, await remote.stop(self.runner, host, self.run_id, self.python))
            return answer

        answers = await asyncio.gather(*(one(h) for h in self.hosts))
        return dict(zip(self.hosts, answers, strict=True))

    async def judge(self) -> int:
        """Fetches the outputs, judges every node; returns the exit code."""
        self.runs, self.verdicts = [], []
        await self._stop_iperf_server()
        for host in self.hosts:
            view = self.views[host]
            if view.lost and host not in self.failed:
                # Under full load, a driver gone without a word is the node failing the test
                # far more often than anyone killing it: judged FAIL, with where to look.
                item = verdict.Item(
                    "run",
                    verdict.FAIL,
                    "the burn-in driver ended without an exit code "
                    f"after {view.collector.count} samples: the node rebooted, lost "
                    "power, or the driver was killed (the OOM killer under --memory load)",
                    "read the node's kernel log and BMC event log for that time (a reboot or "
                    "power event under load fails the burn-in), then start it again",
                )
                self.failed[host] = item.evidence
            elif host in self.failed:
                item = verdict.Item(
                    "run",
                    verdict.NOT_RUN,
                    self.failed[host],
                    "fix that, then start the burn-in again",
                )
            if host in self.failed:
                v = verdict.NodeVerdict(host, items=[item])
                self.runs.append(verdict.NodeRun(host, {}, {}))
                self.verdicts.append(v)
                continue
            try:
                fetched = await remote.fetch(self.runner, host, self.run_id, OUTPUTS)
            except CommandError as exc:
                fetched = remote.Fetched({}, {})
                self.failed[host] = f"cannot fetch the run's files: {exc.reason}"
            files = fetched.files
            result = _json(files.get("result.json"))
            view.collector.fold.close(result.get("phases"))
            run = verdict.NodeRun(
                host,
                _json(files.get("plan.json")),
                result,
                [],
                view.collector.events,
                view.collector.facts,
                {k: v.decode(errors="replace") for k, v in files.items() if k not in _DRIVER_FILES},
                fold=view.collector.fold,
            )
            self.runs.append(run)
            judged = verdict.judge(run, self.thresholds)
            judged.items += [_cut_short(name, size) for name, size in fetched.cut.items()]
            self.verdicts.append(judged)
        disk_speed.compare_disks(self.runs, self.verdicts, self.thresholds)
        for host, judged in zip(self.hosts, self.verdicts, strict=True):
            self.views[host].verdict = judged  # the burn-in screen shows it, the tools' words too
        if self.history is not None:
            self.before = await self._before_the_run(self.history)
        return verdict.exit_code(self.verdicts)

    async def _before_the_run(self, history: HistorySource) -> dict[str, dict[str, Any]]:
        """What the rules find in each node's week before its run began, from Prometheus: a
        re-burn-in of a production node starts from what it did in production."""
        from dltui.history.past import BEFORE_THE_RUN_S, pasts

        found = {}
        for run in self.runs:
            began = run.fold.first_time if run.fold is not None else None
            hostname = run.facts.hostname if run.facts else None
            for past in await pasts(history, [(run.node, hostname)], BEFORE_THE_RUN_S, began):
                found[past.name] = past.to_dict()
        return found

    def write_report(self, folder: Path) -> dict[str, Path]:
        """report.json, report.md, report.html and the run's recording (for dltui replay) in
        ``folder``: made 0700 for this run, or this run's own from an earlier attach; a link
        or another user's folder or file there is refused (``UnsafePath``, an OSError), never
        written through (``dltui.private_files``). Each file takes its place whole, 0600."""
        doc = report.document(self.run_id, self.runs, self.verdicts, self.thresholds, before=self.before)
        texts = {"json": report.to_json(doc), "md": report.markdown(doc),
                 "html": report.page(doc, self.runs)}
        paths = {key: folder / f"report.{key}" for key in texts}
        paths["recording"] = folder / "recording.jsonl"
        fd = private_files.own_folder(folder)
        try:
            for key, text in texts.items():
                with private_files.replacing(fd, paths[key].name) as out:
                    out.write(text.encode("utf-8"))
            with private_files.replacing(fd, paths["recording"].name) as out:
                spool.merge(out, self._recording_sources())
        finally:
            os.close(fd)
        for view in self.views.values():  # the recording has every sample now
            if view.collector.spool is not None:
                view.collector.spool.remove()
        return paths

    def _recording_sources(self) -> list[tuple[str, Any]]:
        """Each node's recording lines: its spool, or the run held in memory."""
        sources = []
        for run in self.runs:
            sp = self.views[run.node].collector.spool if run.node in self.views else None
            if sp is not None and run.fold is not None:
                sp.close()
                if sp.error:
                    self.recording_errors[run.node] = (
                        f"the recording misses samples ({sp.error}); all of them are in "
                        "samples.jsonl on the node"
                    )
                sources.append((run.node, spool.spool_lines(sp.path)))
            else:
                sources.append((run.node, spool.object_lines(run.node, run.facts, run.samples,
                                                             run.events)))
        return sources

    async def leave_report_on_nodes(self, paths: dict[str, Path]) -> None:
        async def one(host: str) -> None:
            if host in self.failed:
                return
            for key in ("json", "md", "html"):
                try:
                    await remote.put(
                        self.runner, host, self.run_id, paths[key].name, paths[key].read_bytes()
                    )
                except CommandError:
                    return  # the local copy is what counts; the node may be gone

        await asyncio.gather(*(one(h) for h in self.hosts))


@dataclass(frozen=True)
class Finished:
    """How a followed run ended: its exit code (0 pass, 1 warnings, 2 a failure, 3 not judged),
    the report's paths, or why the report was not written (one line)."""

    code: int
    paths: dict[str, Path] | None = None
    unwritten: str | None = None


async def see_through(
    session: BurnIn,
    folder: Path | None,
    *,
    on_status: Callable[[NodeRunView], None] | None = None,
    after_judge: Callable[[], Awaitable[None]] | None = None,
    leave_on_nodes: bool = True,
) -> Finished:
    """A started (or attached) run to its end, the one sequence the CLI and the dashboard share:
    follow, judge, ``after_judge`` (the CLI's ``--drain-on-fail``), then the report in ``folder``
    (None: none, as a read-only dashboard writes nothing) and, with ``leave_on_nodes``, a copy on
    each node."""
    await session.follow(on_status)
    code = await session.judge()
    if after_judge is not None:
        await after_judge()
    if folder is None:
        return Finished(code)
    try:
        paths = session.write_report(folder)
    except private_files.UnsafePath as exc:  # a planted link or another user's folder
        return Finished(code, None, str(exc))
    except OSError as exc:  # a full disk
        return Finished(code, None, f"{folder}: {exc.strerror or exc}")
    if leave_on_nodes:
        await session.leave_report_on_nodes(paths)
    return Finished(code, paths)


@dataclass(frozen=True)
class BurnInLauncher:
    """The one burn-in service, for the dashboard and the CLI alike (built by ``dltui.wiring``
    and ``burnin.cli``; the UI builds no SSH pool of its own): the runner its commands go
    through (the dashboard's: its fleet's connections), the SSH nodes a run may act on, the
    audit log (the dashboard's knows who acts: a browser tab's address under dltui serve), the
    config (``[burnin]``, the sampling interval, ``read_only``)."""

    runner: NodeCommands
    hosts: tuple[str, ...]
    audit: AuditLog
    cfg: Config
    history: HistorySource | None = None  # [prometheus] url: the report's "before the run"

    def session(self, hosts: list[str], run_id: str, sink: Any = None) -> BurnIn:
        """A session on ``hosts`` (each one of ``self.hosts``), on the launcher's runner."""
        return BurnIn(
            self.runner, hosts, run_id, sink, thresholds=self.cfg.burnin, audit=self.audit, history=self.history
        )

    def plan(self, **choices: Any) -> Plan:
        """The run's ``Plan`` (``Plan.from_config``): the operator's choices over what the config
        sets for every run."""
        return Plan.from_config(self.cfg, **choices)

    def slurm_nodes(self, hosts: Sequence[str]) -> dict[str, str | None]:
        """Each host's Slurm node name where its ``[groups.NAME]`` sets one (else its own)."""
        return {h: t.slurm_node for h, t in targets_from_config(self.cfg, hosts).items()}

    async def refusals(self, hosts: Sequence[str]) -> dict[str, str]:
        """Each of ``hosts`` running someone's work now (Slurm alloc / mix, another user's GPU
        process), with why: a start leaves it out unless forced, from the CLI or the dashboard."""
        return await scheduler_gate.refusals(self.runner, hosts, self.slurm_nodes(hosts))


def _finish(pending: Pending, answer: Answer) -> Answer:
    """The driver's answer as the audited outcome (a lost outcome line is said with it)."""
    lost = pending.finish("ok" if answer.ok else "failed", "" if answer.ok else answer.reason)
    return dataclasses.replace(answer, audit=lost) if lost else answer


def _cut_short(name: str, size: int) -> verdict.Item:
    """A stressor's output longer than dltui reads: judged on its tail, and said so."""
    return verdict.Item(
        "outputs",
        verdict.WARN,
        f"{name} is {size / 2**20:.0f} MiB, more than the {remote.FETCH_FILE_MAX >> 20} MiB "
        "dltui reads: judged on its end only (a tool that wrote this much was likely "
        "repeating an error)",
        f"read {name} in the run's folder on the node",
    )


def _json(data: bytes | None) -> dict[str, Any]:
    try:
        return dict(clean_value(json.loads(data or b"{}")))
    except (ValueError, TypeError, RecursionError):
        return {}


def write_recording(path: Path, runs: list[verdict.NodeRun]) -> None:
    """Runs held in memory as a ``dltui replay`` recording, timed by the samples' own clock (a
    catch-up after a drop arrives in a burst; replay must still show it as it happened)."""
    with open(private_files.create_new(path), "wb") as out:
        spool.merge(out, [(r.node, spool.object_lines(r.node, r.facts, r.samples, r.events))
                          for r in runs])


def _file_name(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@-]", "_", host)
