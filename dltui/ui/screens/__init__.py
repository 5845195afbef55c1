"""The dashboard's screens: the fleet, one node, the key help and the one-line prompt."""

from .chart import ChartScreen
from .fleet import FleetScreen
from .help import HelpScreen
from .node import NodeScreen
from .prompt import PromptScreen

__all__ = ["ChartScreen", "FleetScreen", "HelpScreen", "NodeScreen", "PromptScreen"]
