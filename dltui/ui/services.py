"""What the dashboard acts through, handed to it typed by ``dltui.wiring`` (the composition
root): the action service, the runner that says which node can run a command, and the burn-in
launcher. Nothing under ``dltui.ui`` builds a service or opens a connection of its own
(tests/unit/test_boundaries.py holds it to that), so the choices — which audit log, simulated
or not, which SSH options — are made in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dltui.actions.service import ActionService
    from dltui.burnin.session import BurnInLauncher
    from dltui.transport.command import FleetRunner


@dataclass(frozen=True)
class DashboardServices:
    actions: ActionService  # restart / stop / start, signals, the journal; its audit is the dashboard's
    runner: FleetRunner  # the one ``actions`` sends through: which node can run a command
    simulated: bool = False  # the demo's actions: said in every dialog, audited in memory
    burnin: BurnInLauncher | None = None  # None: no SSH node a burn-in could run on
