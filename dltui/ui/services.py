"""What the dashboard acts through, handed to it typed by ``dltui.wiring`` (the composition
root): the action service, the runner that says which node can run a command, and the burn-in
launcher. Nothing under ``dltui.ui`` builds a service or opens a connection of its own
(tests/unit/test_boundaries.py holds it to that), so the choices — which audit log, simulated
or not, which SSH options — are made in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dltui.actions.containers import ContainerActions
    from dltui.actions.scheduler import SchedulerActions
    from dltui.actions.service import ActionService
    from dltui.burnin.session import BurnInLauncher
    from dltui.history import HistorySource
    from dltui.transport.command import FleetRunner
    from dltui.transport.scheduler import SchedTarget, SchedulerPoller


@dataclass(frozen=True)
class DashboardServices:
    actions: ActionService  # restart / stop / start, signals, the journal; its audit is the dashboard's
    runner: FleetRunner  # the one ``actions`` sends through: which node can run a command
    simulated: bool = False  # the demo's actions: said in every dialog, audited in memory
    burnin: BurnInLauncher | None = None  # None: no SSH node a burn-in could run on
    # The scheduler's view (read every 30 s) and drain / resume / cordon / uncordon; None: a
    # view whose nodes cannot run commands (a recording, the demo)
    scheduler: SchedulerPoller | None = None
    sched_actions: SchedulerActions | None = None
    sched_targets: dict[str, SchedTarget] | None = None  # each node's Slurm / Kubernetes name
    containers: ContainerActions | None = None  # the training containers' logs and restart / stop / start
    # the nodes' past ([prometheus] url, --history-from): the charts' 6 h / 24 h / 7 d windows;
    # None: the charts hold this run's history only
    history: HistorySource | None = None
