"""The dashboard's screens: the fleet, one node, the key help and the one-line prompt."""

from .confirm import ConfirmScreen
from .fleet import FleetScreen
from .help import HelpScreen
from .node import NodeScreen
from .prompt import PromptScreen

__all__ = ["ConfirmScreen", "FleetScreen", "HelpScreen", "NodeScreen", "PromptScreen"]
