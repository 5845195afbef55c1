"""The dashboard's actions: confirm (node(s) and the exact command line), run in a worker,
report one result per node. The policy itself (validation, privilege, verification, audit,
read-only) is ``dltui.actions``; this module only asks and tells."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal, Protocol

from textual.app import App

from dltui.actions import policy
from dltui.actions.policy import ActionResult
from dltui.core import status as st
from dltui.core.models import Sample
from dltui.core.state import FleetState
from dltui.core.units import known_units

from .messages import ActionsReported, ContainerOffers
from .screens.confirm import ConfirmScreen
from .screens.prompt import PromptScreen

if TYPE_CHECKING:
    from dltui.actions.service import ActionService
    from dltui.history import HistorySource
    from dltui.transport.command import FleetRunner

    from .services import DashboardServices

_SEVERITY: dict[str, Literal["information", "warning", "error"]] = {
    policy.OK: "information",
    policy.REFUSED: "warning",
    policy.UNREACHABLE: "warning",
}


class SchedOffers(Protocol):
    """Where the scheduler actions can act (``sched_flows.SchedFlows``)."""

    def offered(self, nodes: list[str], verb: str = "drain") -> bool: ...


class ActionFlows:
    def __init__(self, app: App[int], fleet: FleetState, services: DashboardServices | None) -> None:
        """``services``: what ``dltui.wiring`` built to act with (the service, its runner, and
        whether it is the demo's simulation); None: an app that shows and never acts (a
        prepared fleet the caller fills, as the tests' and the screenshots' are)."""
        self.app = app  # where the dialogs, the workers and the notices go
        self.fleet = fleet
        self.runner: FleetRunner | None = services.runner if services is not None else None
        self.simulated = services.simulated if services is not None else False
        # the nodes' past, for the charts (None: this run's history only)
        self.history: HistorySource | None = services.history if services is not None else None
        # its audit is the log of every change this dashboard makes, burn-ins too: under dltui
        # serve, each of its lines names the browser (ActionSettings.origin)
        self.service: ActionService | None = services.actions if services is not None else None
        self.read_only = self.service.settings.read_only if self.service is not None else True
        self.results: dict[str, ActionResult] = {}  # newest result per node, for the unit pane
        self.sched: SchedOffers | None = None  # drain / resume / cordon (the app sets it: sched_flows.py)
        self.containers: ContainerOffers | None = None  # the training containers (container_flows.py)

    def available(self, node: str | None = None) -> bool:
        """Whether actions are offered at all (hidden under --read-only and on a recording)."""
        if self.read_only or self.runner is None:
            return False
        if node is None:
            return any(self.runner.can_run(n) for n in self.runner.by_node)
        return self.runner.can_run(node)

    def _acting(self) -> ActionService:
        """The service, where an action was offered (``available``: there is one)."""
        assert self.service is not None, "an action ran on a dashboard that offers none"
        return self.service

    def units_of(self, node: str) -> list[str]:
        """The node's units, those it has first (a group's ``units`` may name several)."""
        state = self.fleet.nodes.get(node)
        units = state.sample.units if state is not None and state.sample is not None else []
        return [u.name for u in (known_units(units) or units)]

    def unit_of(self, node: str) -> str | None:
        """The unit whose journal the node screen follows: the first one the node has. None
        for a unit not found or a node without systemd: nothing to read, and asking would
        start a journalctl every JOURNAL_EVERY_S for ever."""
        state = self.fleet.nodes.get(node)
        units = known_units(state.sample.units) if state is not None and state.sample is not None else []
        return units[0].name if units else None

    # -- what is offered: only what can act (footer keys, palette commands) --------------------

    def unit_offered(self, nodes: list[str]) -> bool:
        """Restart / stop / start: actions allowed and one of ``nodes`` connected with a unit
        it has and could read (not one its group names but it lacks, not on a node without
        systemd)."""
        return any(self._reachable(n) and known_units(self._sample(n).units) for n in nodes)

    def signal_offered(self, node: str) -> bool:
        """TERM: actions allowed, the node connected, and something to signal: a GPU process
        or the unit's main process (what the signal policy accepts)."""
        if not self._reachable(node):
            return False
        sample = self._sample(node)
        return any(g.processes for g in sample.gpus) or any(u.main_pid for u in known_units(sample.units))

    def sched_offered(self, nodes: list[str], verb: str = "drain") -> bool:
        """Drain / resume where the scheduler knows the node (``SchedFlows.offered``)."""
        return self.sched is not None and self.sched.offered(nodes, verb)

    def _reachable(self, node: str) -> bool:
        state = self.fleet.nodes.get(node)
        return (
            self.available(node) and state is not None and state.status == st.OK
            and state.sample is not None
        )

    def _sample(self, node: str) -> Sample:
        sample = self.fleet.nodes[node].sample
        assert sample is not None  # _reachable said so
        return sample

    # -- unit ---------------------------------------------------------------------------------

    def unit(self, nodes: list[str], verb: str, unit: str | None = None) -> None:
        if unit is None:
            names = self.units_of(nodes[0])
            if not names:
                self.app.notify("no training unit reported by this node", severity="warning")
                return
            if len(names) > 1:  # which one: asked, never guessed
                self._ask_unit(nodes, verb, names)
                return
            unit = names[0]
        self.app.run_worker(self._unit(nodes, verb, unit), group="actions", exit_on_error=False)

    def _ask_unit(self, nodes: list[str], verb: str, names: list[str]) -> None:
        def check(text: str) -> str | None:
            if text.strip() in names:
                return None
            return f"{nodes[0]} runs {', '.join(names)}: name one of them"

        def chosen(text: str | None) -> None:
            if text:
                self.unit(nodes, verb, text.strip())

        prompt = PromptScreen(
            f"{verb} which unit? ", names[0], placeholder=" · ".join(names), check=check
        )
        self.app.push_screen(prompt, chosen)

    async def _unit(self, nodes: list[str], verb: str, unit: str) -> None:
        lines = await asyncio.gather(*(self._acting().preview_unit(n, verb, unit) for n in nodes))
        title = f"{verb} {unit} on {len(nodes)} node{'s' if len(nodes) != 1 else ''}" + self._sim()
        note = "verified after: a new InvocationID, active, stable" if verb != "stop" else ""
        screen = ConfirmScreen(title, list(zip(nodes, lines, strict=True)), note)
        if not await self._confirm(screen):
            self.app.notify(f"{verb} {unit}: cancelled, nothing was sent")
            return
        for n in nodes:
            self.app.notify(f"{n}: {verb} {unit}…", timeout=3)
        results = await asyncio.gather(*(self._acting().unit_change(n, verb, unit) for n in nodes))
        self._report(results)

    # -- signals ------------------------------------------------------------------------------

    def signal(self, node: str, pid: int | None = None) -> None:
        """TERM ``pid`` (picked in the processes pane), or the PID the operator types."""
        if pid is not None:
            self.app.run_worker(self._signal(node, str(pid)), group="actions", exit_on_error=False)
            return

        def asked(text: str | None) -> None:
            if text:
                job = self._signal(node, text.strip())
                self.app.run_worker(job, group="actions", exit_on_error=False)

        prompt = PromptScreen("PID to TERM: ", placeholder="a GPU process or a process of the unit")
        self.app.push_screen(prompt, asked)

    async def _signal(self, node: str, pid: str, sig: str = "TERM") -> None:
        state = self.fleet.nodes.get(node)
        sample = state.sample if state else None
        units = [u.name for u in sample.units] if sample else []
        gpu_pids = [p.pid for g in sample.gpus for p in g.processes] if sample else []
        line = await self._acting().preview_signal(node, pid, sig, units, gpu_pids)
        if isinstance(line, ActionResult):
            self._report([line])
            return
        title = f"send {sig} to PID {pid}" + self._sim()
        note = (
            ""
            if sig == "KILL"
            else "if it does not exit, KILL is offered after a second confirmation"
        )
        if not await self._confirm(ConfirmScreen(title, [(node, line)], note)):
            self.app.notify(f"signal {sig} {pid}: cancelled, nothing was sent")
            return
        result = await self._acting().signal(node, pid, sig, units, gpu_pids)
        self._report([result])
        if sig == "TERM" and result.outcome == policy.FAILED and "still running" in result.message:
            await self._signal(node, pid, "KILL")

    # -- helpers ------------------------------------------------------------------------------

    async def _confirm(self, screen: ConfirmScreen) -> bool:
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def done(yes: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(yes))

        self.app.push_screen(screen, done)
        return await answer

    def _sim(self) -> str:
        return " (simulated: demo fleet)" if self.simulated else ""

    def _report(self, results: list[ActionResult]) -> None:
        for r in results:
            self.results[r.node] = r
            text = r.message + "".join("\n  " + d for d in r.details[:6])
            self.app.notify(
                text,
                title=f"{r.node}: {r.action}: {r.outcome}",
                severity=_SEVERITY.get(r.outcome, "error"),
                timeout=8 if r.ok else 30,
            )
        self.app.post_message(ActionsReported())
