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


class ActionsReported(Message):
    """An action finished and its results are in: redraw now rather than at the next tick."""


class ActionOffers(Protocol):
    """What the fleet and node screens read to offer an action only where it can act (their
    footer keys, the palette) and to show its outcome; ``ActionFlows`` is the one there is."""

    @property
    def runner(self) -> FleetRunner | None: ...  # None: the dashboard acts on nothing

    @property
    def results(self) -> Mapping[str, ActionResult]: ...

    def unit_of(self, node: str) -> str | None: ...

    def unit_offered(self, nodes: list[str]) -> bool: ...

    def signal_offered(self, node: str) -> bool: ...
