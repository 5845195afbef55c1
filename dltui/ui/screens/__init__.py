"""The dashboard's screens: the fleet, one node, the stack, the key help and the one-line prompt."""

from .chart import ChartScreen
from .confirm import ConfirmScreen
from .fleet import FleetScreen
from .help import HelpScreen
from .node import NodeScreen
from .prompt import PromptScreen
from .stack import StackScreen

__all__ = ["ChartScreen", "ConfirmScreen", "FleetScreen", "HelpScreen", "NodeScreen", "PromptScreen", "StackScreen"]
