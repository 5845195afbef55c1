"""The dashboard's training-container actions: the log tail followed while the node screen is
open, and restart / stop / start asked with ``:container VERB [NAME]`` — confirmed with the
exact command, run in a worker, reported. The policy is ``dltui.actions.containers``'s; the
service comes from ``wiring`` (``services.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

from dltui.actions.containers import VERBS
from dltui.core.models import ContainerSample
from dltui.core.state import FleetState

from .screens.confirm import ConfirmScreen

if TYPE_CHECKING:
    from .action_flows import ActionFlows
    from .services import DashboardServices


class ContainerFlows:
    def __init__(self, app: App[int], fleet: FleetState, services: DashboardServices | None, flows: ActionFlows):
        self.app = app
        self.fleet = fleet
        self.flows = flows
        self.actions = services.containers if services is not None else None

    def containers(self, node: str) -> list[ContainerSample]:
        state = self.fleet.nodes.get(node)
        sample = state.sample if state is not None else None
        return [c for c in (sample.containers if sample else []) if c.error is None and c.engine]

    def offered(self, node: str) -> bool:
        return self.actions is not None and self.flows.available(node) and bool(self.containers(node))

    async def logs(self, node: str) -> tuple[list[str], str | None]:
        """The first container's newest log lines, or why there are none."""
        shown = self.containers(node)
        if self.actions is None or not shown or not self.flows.available(node):
            return [], None
        res = await self.actions.logs(node, shown[0].name, shown[0].engine or "docker")
        return (res.details, None) if res.ok else ([], f"logs of {shown[0].name}: {res.message}")

    def request(self, node: str, verb: str, name: str = "") -> None:
        if verb not in VERBS:
            raise ValueError(f":container {' | '.join(VERBS)} [NAME]")
        known = self.containers(node)
        chosen = next((c for c in known if c.name == name), None) if name else (known[0] if known else None)
        if self.actions is None or chosen is None:
            raise ValueError(f"{node}: no training container {name or ''} to {verb} (set [groups.NAME] containers)")
        self.app.run_worker(self._run(node, verb, chosen), group="actions", exit_on_error=False)

    async def _run(self, node: str, verb: str, c: ContainerSample) -> None:
        actions = self.actions
        assert actions is not None  # request() said so
        engine = c.engine or "docker"
        line = actions.preview(verb, c.name, engine)
        note = "verified after: running with a new start time" if verb != "stop" else "verified after: not running"
        title = f"{verb} container {c.name}{self.flows._sim()}"  # noqa: SLF001
        if not await self.flows._confirm(ConfirmScreen(title, [(node, line)], note)):  # noqa: SLF001
            self.app.notify(f"{verb} {c.name}: cancelled, nothing was sent")
            return
        result = await actions.change(node, verb, c.name, engine)
        self.flows._report([result])  # noqa: SLF001
