"""The dashboard's scheduler actions: drain / resume in Slurm, cordon / uncordon in Kubernetes.
Ask (a drain's reason, prefilled from the node's worst alert), confirm (each node and the exact
command), run in a worker, report. The policy (read-only, validation, sudo, audit, the
``dltui:`` rule of resume, verification) is ``dltui.actions.scheduler``'s; nothing here builds
a service: ``wiring`` hands them in (``services.py``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.app import App

from dltui.actions.scheduler import KUBE_VERBS, SLURM_VERBS, preview_line
from dltui.core.state import FleetState
from dltui.core.timeline import severity_rank
from dltui.transport.command import shell_line

from .screens.confirm import ConfirmScreen
from .screens.prompt import PromptScreen

if TYPE_CHECKING:
    from .action_flows import ActionFlows
    from .services import DashboardServices

VERBS = SLURM_VERBS + KUBE_VERBS


def worst_alert_text(fleet: FleetState, node: str) -> str:
    """The reason a drain is prefilled with: the node's worst open alert, in its words."""
    state = fleet.nodes.get(node)
    alerts = list(state.alerts.values()) if state is not None else []
    if not alerts:
        return ""
    worst = max(alerts, key=lambda a: (severity_rank(a.severity), -a.since))
    gpu = f"GPU {worst.gpu}: " if worst.gpu is not None and f"GPU {worst.gpu}" not in worst.message else ""
    return f"{gpu}{worst.message}"


class SchedFlows:
    def __init__(self, app: App[int], fleet: FleetState, services: DashboardServices | None, flows: ActionFlows):
        self.app = app
        self.fleet = fleet
        self.flows = flows  # the confirm dialog, the reports and the read-only switch it shares
        self.actions = services.sched_actions if services is not None else None
        self.poller = services.scheduler if services is not None else None
        self.targets = (services.sched_targets if services is not None else None) or {}

    def offered(self, nodes: list[str], verb: str = "drain") -> bool:
        """Where it can act: actions allowed, and the scheduler knows the node (a Slurm view
        for drain / resume, a Kubernetes one for cordon / uncordon)."""
        if self.actions is None or not any(self.flows.available(n) for n in nodes):
            return False
        for n in nodes:
            view = self.fleet.nodes[n].scheduler if n in self.fleet.nodes else None
            if view is not None and (view.slurm if verb in SLURM_VERBS else view.kube) is not None:
                return True
        return False

    def request(self, nodes: list[str], verb: str, arg: str = "") -> None:
        if verb not in VERBS:
            raise ValueError(f"scheduler actions: {', '.join(VERBS)}")
        if self.actions is None or not nodes:
            self.app.notify("this view cannot change a scheduler (a recording, or the demo)", severity="warning")
            return
        if verb == "drain":
            def chosen(text: str | None) -> None:
                if text and text.strip():
                    self._start(nodes, verb, text.strip(), False)
                elif text is not None:
                    self.app.notify("a drain needs a reason: it is what the next person reads", severity="warning")

            prefill = arg or next((t for t in (worst_alert_text(self.fleet, n) for n in nodes) if t), "")
            self.app.push_screen(
                PromptScreen("drain reason: ", prefill, placeholder="why: what the next person reads"), chosen
            )
            return
        self._start(nodes, verb, "", arg.strip() == "force")

    def _start(self, nodes: list[str], verb: str, reason: str, force: bool) -> None:
        self.app.run_worker(self._run(nodes, verb, reason, force), group="actions", exit_on_error=False)

    async def _run(self, nodes: list[str], verb: str, reason: str, force: bool) -> None:
        actions = self.actions
        assert actions is not None  # request() said so
        target = self.targets.get
        if verb in SLURM_VERBS:
            plans = await asyncio.gather(*(
                actions.plan_slurm(n, verb, reason, force, getattr(target(n), "slurm_node", None)) for n in nodes
            ))
            lines = [preview_line(p) for p in plans]
            note = ("verified after: the node reads DRAIN with this reason" if verb == "drain"
                    else "only a drain dltui set is resumed (:resume force for another's)")
        else:
            names = [target(n).kube_name(n) if target(n) else n for n in nodes]  # type: ignore[union-attr]
            lines = [f"(here) {shell_line([*actions.kubectl, verb, k])}" for k in names]
            note = "runs this machine's kubectl; verified after: unschedulable as asked"
        title = f"{verb} {len(nodes)} node{'s' if len(nodes) != 1 else ''}{self.flows._sim()}"  # noqa: SLF001
        if not await self.flows._confirm(ConfirmScreen(title, list(zip(nodes, lines, strict=True)), note)):  # noqa: SLF001
            self.app.notify(f"{verb}: cancelled, nothing was sent")
            return
        if verb in SLURM_VERBS:
            results = await asyncio.gather(*(
                actions.slurm(n, verb, reason, force, confirmed=True, slurm_node=getattr(target(n), "slurm_node", None))
                for n in nodes
            ))
        else:
            pairs = zip(nodes, names, strict=True)
            results = await asyncio.gather(*(actions.kube(n, verb, k, confirmed=True) for n, k in pairs))
        if self.poller is not None:
            for n in nodes:
                self.poller.refresh(n)  # the SCHED column shows the new state at the next turn
        self.flows._report(list(results))  # noqa: SLF001
