"""The composition root: what every command is built from, built in one place.

``load_settings`` reads the config file and the environment, puts the command line over them
and checks all of it (rules and unit names included) before anything starts. ``build`` turns
settings and a source of nodes into a ``Fleet``: its transports (with each node's probe
extras — units and checkpoint glob — from the group config), the fleet state with its rule
engine, the GPU inventory of real nodes and the recorder. The dashboard, ``snapshot``,
``export``, ``serve`` and the burn-in all start here; ``dltui.cli`` only parses.

Every command ends on SIGTERM and SIGHUP as on Ctrl-C (``dltui.stopping``); the dashboard
quits as on ``q``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dltui.config import Config, load
from dltui.transport.hostspec import parse_jumps
from dltui.transport.ssh.options import SshOptions

if TYPE_CHECKING:
    from dltui.actions.arguments import ActionOptions
    from dltui.actions.policy import ActionSettings
    from dltui.actions.sched_cli import SchedOptions
    from dltui.burnin.arguments import BurnInOptions
    from dltui.core.gpu_inventory import GpuInventory
    from dltui.core.state import FleetState
    from dltui.export.command import ExportOptions
    from dltui.history import HistorySource
    from dltui.transport.base import Sink, Transport
    from dltui.transport.command import HostCommands
    from dltui.transport.recording.recorder import Recorder
    from dltui.transport.ssh.commands import SshCommands
    from dltui.ui.app import DltuiApp
    from dltui.ui.serve.command import ServeOptions
    from dltui.ui.services import DashboardServices

log = logging.getLogger("dltui.wiring")


@dataclass(frozen=True)
class Settings:
    """The checked config with the command line over it, and how nodes are reached."""

    config: Config
    ssh: SshOptions = SshOptions()
    record: str | None = None  # --record FILE


def load_settings(
    config_file: str | None = None,
    *,
    interval_s: float | None = None,
    theme: str | None = None,
    read_only: bool = False,
    record: str | None = None,
    jump: str | None = None,
    ssh_config: str | None = None,
    identity: Sequence[str] = (),
    known_hosts: str | None = None,
    accept_new_host_keys: bool = False,
    history_from: str | None = None,
) -> Settings:
    """Command line > environment > config file > defaults. Raises ``ConfigError`` (one line
    naming the file and the key) for anything the file or a rule setting gets wrong."""
    cfg = load(config_file)
    changes: dict[str, Any] = {}
    if interval_s is not None:
        changes["interval_s"] = interval_s
    if theme:
        changes["theme"] = theme
    if read_only:
        changes["read_only"] = True
    if history_from:
        changes["prometheus"] = dataclasses.replace(cfg.prometheus, url=history_from)
    cfg = dataclasses.replace(cfg, **changes) if changes else cfg
    _check_rules_and_units(cfg)
    if jump:  # a hop ssh would refuse stops every command here, in one line, before any connect
        parse_jumps(jump)
    s = cfg.ssh
    ssh = SshOptions(
        jump=jump,
        ssh_config=ssh_config or s.config,
        identity=tuple(identity or s.identity),
        known_hosts=known_hosts or s.known_hosts,
        accept_new_host_keys=accept_new_host_keys or s.accept_new_host_keys,
        connect_timeout_s=s.connect_timeout,
        keepalive_interval_s=s.keepalive_interval,
        keepalive_count=s.keepalive_count,
        sysfs=cfg.probe.sysfs,
    )
    return Settings(cfg, ssh, record)


def _check_rules_and_units(cfg: Config) -> None:
    """What the schema leaves to its owners — rule ids and parameters, unit names — checked
    now, so a typo stops every command the same way, before anything connects."""
    from dltui.actions.unit_config import UnitConfig
    from dltui.core.rules import RULES
    from dltui.core.rules.settings import RuleSettings

    RuleSettings(RULES, cfg)
    UnitConfig(cfg)


# -- where the nodes come from ---------------------------------------------------------------


@dataclass(frozen=True)
class Hosts:
    """Nodes reached as ssh does (``localhost`` or none: this machine, in process)."""

    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prometheus:
    """The fleet an existing Prometheus sees (``--prometheus URL [--match SEL]``)."""

    url: str | None
    match: str | None = None
    refresh_s: float | None = None  # None: the source's own default
    hosts: tuple[str, ...] = ()  # must stay empty: nodes come from the selector


@dataclass(frozen=True)
class Demo:
    nodes: int = 12
    gpus: int = 8
    seed: int = 7


@dataclass(frozen=True)
class Replay:
    file: str
    speed: float = 1.0


Source = Hosts | Prometheus | Demo | Replay


@dataclass(frozen=True)
class SnapshotOptions:
    """``dltui snapshot``: the nodes, how long to watch them, and the report's form."""

    source: Source
    seconds: float = 3.0
    as_json: bool = False  # --json
    since_s: float | None = None  # --since: the past alerts over this window, from Prometheus


@dataclass
class Fleet:
    """What a command runs: transports writing into ``sink`` (the state, or a recorder in front
    of it). ``close()`` (or ``with``) closes the recorder and saves the GPU inventory."""

    transports: list[Transport]
    state: FleetState
    sink: Sink
    recorder: Recorder | None = None
    inventory: GpuInventory | None = None
    # Readers that run beside the transports on their connections and write into the same sink
    # (what the GPU processes' job and container ids mean): no node of their own.
    lookups: list[Transport] = field(default_factory=list)

    @property
    def streams(self) -> list[Transport]:
        """Everything a command runs into ``sink``: the transports, then the lookups."""
        return [*self.transports, *self.lookups]

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None
        if self.inventory is not None:
            self.inventory.flush()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def transports(settings: Settings, source: Source) -> tuple[list[Transport], Callable[[], float] | None]:
    """The transports for ``source`` and the clock the fleet runs on (None: the wall clock).
    Raises ``ConfigError`` / ``HostSpecError`` / ``ReplayError`` for a usage mistake."""
    cfg = settings.config
    if isinstance(source, Demo):
        from dltui.actions import simulated
        from dltui.transport.demo import DemoTransport

        demo = DemoTransport(
            nodes=source.nodes, gpus=source.gpus, seed=source.seed, interval_s=cfg.interval_s,
            commands=simulated.answer,  # its actions, simulated (and saying so)
        )
        return [demo], demo.clock  # the prefilled past's time
    if isinstance(source, Replay):
        from dltui.transport.recording.replay import ReplayTransport

        replay = ReplayTransport(source.file, source.speed)
        return [replay], replay.clock  # ages, timeline and rule durations as recorded
    if isinstance(source, Prometheus):
        from dltui.config import ConfigError
        from dltui.transport.prometheus import SelectorError, from_args

        try:
            return list(from_args(list(source.hosts), source.url, source.match, source.refresh_s)), None
        except SelectorError as exc:
            raise ConfigError(str(exc)) from None
    from dltui.actions.unit_config import UnitConfig
    from dltui.transport.factory import build_transports

    # each node's probe extras: the units, checkpoint glob and training containers of its group
    units = UnitConfig(cfg)

    def extras(node: str) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
        return (*units.for_node(node), units.containers_for(node))

    return build_transports(list(source.names), cfg.interval_s, settings.ssh, extras), None


def inventory_for(source: Source) -> GpuInventory | None:
    """Real nodes' GPUs across sessions (gpu_missing). Never a demo's or a replay's, nor a
    Prometheus fleet's: what it lists is what the selector matches today, and a GPU that a
    narrower --match leaves out is not a GPU gone from the bus."""
    if not isinstance(source, Hosts):
        return None
    from dltui.core.gpu_inventory import GpuInventory, default_path

    return GpuInventory(default_path())


def fleet_state(
    cfg: Config,
    names: Sequence[str],
    *,
    clock: Callable[[], float] | None = None,
    inventory: GpuInventory | None = None,
    snapshot_window_s: float | None = None,
) -> FleetState:
    """The fleet state of ``names`` with its rule engine under ``cfg``: the one place one is
    made, for ``build`` and for the prepared fleets of the tests and the screenshot script.
    ``clock``: the fleet's time (a demo's or a replay's), the wall clock by default."""
    import time

    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState

    engine = build_engine(cfg, snapshot_window_s=snapshot_window_s, inventory=inventory)
    return FleetState(list(names), engine=engine, clock=clock or time.time)


def build(
    settings: Settings, source: Source, *, snapshot_window_s: float | None = None, scheduler: bool = False
) -> Fleet:
    """The fleet for a dashboard (``snapshot_window_s`` None) or a snapshot that judges what it
    saw in its window. Raises ``RecordError`` when ``--record`` cannot be created. ``scheduler``:
    the nodes' Slurm / Kubernetes state is read beside them (snapshot, export; the dashboard
    runs the same poller from its own timer, ``dashboard_services``)."""
    from dltui.transport.factory import node_names
    from dltui.transport.recording.recorder import Recorder

    made, clock = transports(settings, source)
    inventory = inventory_for(source)
    names = node_names(made)
    state = fleet_state(
        settings.config, names, clock=clock, inventory=inventory, snapshot_window_s=snapshot_window_s
    )
    lookups: list[Transport] = []
    if isinstance(source, (Hosts, Demo)):  # what the GPU processes' job and container ids mean
        from dltui.transport.attribution import AttributionLookups
        from dltui.transport.command import FleetRunner

        lookups.append(AttributionLookups(state, FleetRunner(made), names))
    if scheduler and isinstance(source, Hosts):  # the demo simulates no scheduler
        from dltui.transport.scheduler import SchedulerReads, poller_for

        # a snapshot reads each node once, at its start (again only after a failed read)
        once = snapshot_window_s is not None
        poller = poller_for(FleetRunner(made), settings.config, interval_s=float("inf") if once else 30.0)
        if poller is not None:
            lookups.append(SchedulerReads(state, poller))
    recorder = Recorder.create(state, settings.record, names) if settings.record else None
    log.debug(
        "fleet of %d node(s) from %s; config %s; interval %g s; recording to %s",
        len(names), type(source).__name__, settings.config.source or "(none)", settings.config.interval_s,
        settings.record or "(nothing)",
    )
    return Fleet(made, state, recorder if recorder is not None else state, recorder, inventory, lookups)


# -- the commands, built here and run by their own modules ---------------------------------
# One shape: ``command(settings, options)``, the options typed and frozen (``dltui.cli``
# converts the parsed line). The commands' own modules sit below this layer and never see
# ``Settings``: each is handed the parts it uses (the config, the SSH options, a fleet).


def dashboard(settings: Settings, source: Source) -> int:
    """The live dashboard until the operator quits (or SIGTERM / SIGHUP)."""
    from dltui.ui.app import run_dashboard

    app, fleet = dashboard_app(settings, source)
    with fleet:
        return run_dashboard(app)


def dashboard_app(settings: Settings, source: Source) -> tuple[DltuiApp, Fleet]:
    """The dashboard's app on a built fleet, ready to run (``serve`` runs it in a browser);
    close the fleet when the app has ended."""
    from dltui.ui.app import build_app

    fleet = build(settings, source)
    services = dashboard_services(fleet.transports, _history_config(settings.config, source))
    app = build_app(fleet.streams, settings.config, fleet=fleet.state, services=services)
    app.sink = fleet.sink
    return app, fleet


def dashboard_services(
    transports: Sequence[Transport], cfg: Config, *, actions: ActionSettings | None = None
) -> DashboardServices:
    """What the dashboard acts through, for the command line and for the tests and screenshots
    that build an app on their own fleet: the action service over ``transports`` (``actions``:
    its settings, ``[actions]`` of ``cfg`` by default) and the burn-in launcher of its SSH
    nodes. The UI builds none of it: the audit, the SSH options and the simulated choice are
    made here."""
    import os

    from dltui.actions.audit import MemoryAudit
    from dltui.actions.policy import ActionSettings
    from dltui.actions.service import ActionService
    from dltui.transport.command import FleetRunner, TakesCommands
    from dltui.transport.demo import DemoTransport
    from dltui.ui.serve import ORIGIN_ENV
    from dltui.ui.services import DashboardServices

    settings = actions if actions is not None else ActionSettings.from_config(cfg)
    if os.environ.get(ORIGIN_ENV):  # a browser tab's dashboard (dltui serve): its lines name the browser
        settings = dataclasses.replace(settings, origin=os.environ[ORIGIN_ENV])
    runner = FleetRunner(transports)
    history = history_source(cfg)  # the charts' past, the burn-in report's "before the run"
    # the demo's actions are simulated (and say so): audited in memory, never in the real log
    simulated = any(isinstance(t, DemoTransport) for t in transports)
    service = ActionService(runner, settings, MemoryAudit() if simulated else None)
    # The burn-in runs where a transport offers the whole node-command contract on its own
    # connections (the SSH fleet: TakesCommands.node_commands), asked, not guessed; a demo or
    # a replay has none, and never imports asyncssh nor the burn-in's modules to learn it.
    launcher = None
    offered = [(t.names, c) for t in transports if isinstance(t, TakesCommands) and (c := t.node_commands())]
    if offered:
        from dltui.burnin.session import BurnInLauncher

        hosts, commands = offered[0]  # one SSH fleet serves every SSH node
        # one audit for the dashboard's changes, burn-ins too: it knows who acts (origin)
        launcher = BurnInLauncher(commands, tuple(hosts), service.audit, cfg, history)
    scheduler = sched_actions = targets = None
    if not simulated:  # the demo simulates no scheduler
        from dltui.actions.scheduler import SchedulerActions
        from dltui.transport.command import LocalRunner
        from dltui.transport.scheduler import poller_for

        scheduler = poller_for(runner, cfg)
        if scheduler is not None:
            targets = scheduler.targets
            sched_actions = SchedulerActions(service, LocalRunner())
    from dltui.actions.containers import ContainerActions

    return DashboardServices(
        service, runner, simulated, launcher, scheduler, sched_actions, targets, history=history,
        containers=ContainerActions(service),
    )


def snapshot(settings: Settings, options: SnapshotOptions) -> int:
    from dltui import snapshot as command

    seconds = options.seconds
    history = None
    if options.since_s is not None:
        history = history_source(_history_config(settings.config, options.source))
        if history is None:
            from dltui.config import ConfigError

            raise ConfigError("--since needs the Prometheus that keeps the past: --history-from URL or "
                              "[prometheus] url")
    with build(settings, options.source, snapshot_window_s=seconds, scheduler=True) as fleet:
        return command.main(
            fleet.state, fleet.streams, seconds, options.as_json, sink=fleet.sink,
            history=history, since_s=options.since_s,
        )


def _history_config(cfg: Config, source: Source) -> Config:
    """A fleet read from ``--prometheus URL`` has its past there too, unless the config (or
    ``--history-from``) names another Prometheus for it."""
    if isinstance(source, Prometheus) and source.url and not cfg.prometheus.url:
        return dataclasses.replace(cfg, prometheus=dataclasses.replace(cfg.prometheus, url=source.url))
    return cfg


def history_source(cfg: Config) -> HistorySource | None:
    """The nodes' past from ``[prometheus] url`` (``--history-from`` sets it), in any mode: the
    dashboard's charts, ``snapshot --since``, the burn-in's "before the run". Each window is
    replayed through a fresh engine of the config's rules, groups and settings, as live data
    is judged. None without a URL."""
    if not cfg.prometheus.url:
        return None
    from dltui.core.rules import build_engine
    from dltui.history import HistorySource

    return HistorySource(cfg.prometheus.url, engine=lambda: build_engine(cfg))


def export(settings: Settings, options: ExportOptions) -> int:
    """``dltui export``: the nodes' metrics at /metrics until stopped."""
    from dltui.export.command import serve

    with build(settings, Hosts(options.hosts), scheduler=True) as fleet:
        return serve(fleet.state, fleet.streams, options.listen, sink=fleet.sink, allow_hosts=options.allow_hosts)


def serve(settings: Settings, options: ServeOptions) -> int:
    """``dltui serve``: each browser tab runs its own ``dltui watch``, so nothing is built here;
    ``settings`` loaded (a config mistake said once, not in every tab) is its check."""
    from dltui.transport.hostspec import expand_ranges
    from dltui.ui.serve.command import run

    expand_ranges(list(options.hosts))  # a host name ssh would refuse (each tab would refuse it too)
    return run(options)


def burn_in(settings: Settings, options: BurnInOptions) -> int:
    """``dltui burn-in [attach|stop]``: the run lives on the nodes, reached with ``settings.ssh``
    and judged by ``[burnin]``."""
    from dltui.burnin.cli import run
    from dltui.transport.ssh.commands import SshCommands

    return run(options, settings.config, SshCommands(settings.ssh), history_source(settings.config))


def scheduler_actions(settings: Settings, options: SchedOptions) -> int:
    """``dltui drain|resume|cordon|uncordon ...``: Slurm on each node (this machine in process,
    the rest over SSH), kubectl on this machine."""
    from dltui.actions.sched_cli import run
    from dltui.transport.command import LocalRunner

    return run(options, settings.config, host_commands(settings), LocalRunner())


def unit_actions(settings: Settings, options: ActionOptions) -> int:
    """``dltui unit ...`` and ``dltui signal ...``: this machine in process, the rest over SSH."""
    from dltui.actions.cli import run

    return run(options, settings.config, host_commands(settings))


def host_commands(settings: Settings) -> HostCommands:
    """The runner of the commands without a dashboard (``unit``, ``signal``, ``drain``, …):
    this machine in process, the rest over SSH (``SshCommands``, made for the first node that
    is not this machine: a command on this machine never imports asyncssh)."""
    from dltui.transport.command import HostCommands
    from dltui.transport.local import LOCAL_NAMES

    def over_ssh() -> SshCommands:
        from dltui.transport.ssh.commands import SshCommands

        return SshCommands(settings.ssh)

    return HostCommands(LOCAL_NAMES, over_ssh)
