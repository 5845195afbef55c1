"""The seam between the screens and the app: what a screen asks the app to do (typed Textual
messages it posts; they bubble from the screen to the app, which handles them with ``@on``),
and what a screen may read about the actions (``ActionOffers``, handed to it when it is built).
The screens import this module, never the app: the app builds the screens, not the other way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

if TYPE_CHECKING:
    from dltui.actions.policy import ActionResult
    from dltui.history import HistorySource
    from dltui.transport.command import FleetRunner


class OpenNode(Message):
    """Show one node's screen."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class UnitRequested(Message):
    """Restart, stop or start the training unit of ``nodes`` (confirmed first)."""

    def __init__(self, nodes: list[str], verb: str) -> None:
        super().__init__()
        self.nodes = nodes
        self.verb = verb


class SignalRequested(Message):
    """TERM process ``pid`` on ``node`` (confirmed first); ``None``: ask which PID."""

    def __init__(self, node: str, pid: int | None) -> None:
        super().__init__()
        self.node = node
        self.pid = pid


class SchedRequested(Message):
    """Drain / resume (Slurm) or cordon / uncordon (Kubernetes) ``nodes`` (asked, confirmed)."""

    def __init__(self, nodes: list[str], verb: str) -> None:
        super().__init__()
        self.nodes = nodes
        self.verb = verb


class ContainerRequested(Message):
    """Restart / stop / start ``node``'s training container (asked, confirmed): its keys."""

    def __init__(self, node: str, verb: str) -> None:
        super().__init__()
        self.node = node
        self.verb = verb


class ActionsReported(Message):
    """An action finished and its results are in: redraw now rather than at the next tick."""


class ContainerOffers(Protocol):
    """The training containers' log tail (``container_flows.ContainerFlows``)."""

    def offered(self, node: str) -> bool: ...

    async def logs(self, node: str) -> tuple[list[str], str | None]: ...


class ActionOffers(Protocol):
    """What the fleet and node screens read to offer an action only where it can act (their
    footer keys, the palette) and to show its outcome; ``ActionFlows`` is the one there is."""

    @property
    def runner(self) -> FleetRunner | None: ...  # None: the dashboard acts on nothing

    @property
    def results(self) -> Mapping[str, ActionResult]: ...

    @property
    def history(self) -> HistorySource | None: ...  # the nodes' past, for the charts

    def unit_of(self, node: str) -> str | None: ...

    def unit_offered(self, nodes: list[str]) -> bool: ...

    def signal_offered(self, node: str) -> bool: ...

    def sched_offered(self, nodes: list[str], verb: str = "drain") -> bool: ...

    @property
    def containers(self) -> ContainerOffers | None: ...  # the training containers' log tail
