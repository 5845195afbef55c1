"""The dashboard's widgets, one per module."""

from .alerts_pane import AlertsPane
from .container_pane import ContainerPane
from .cpu_pane import CpuPane
from .disk_pane import DiskPane
from .fleet_summary import FleetSummary
from .fleet_table import FleetTable
from .gpu_pane import GpuPane
from .memory_pane import MemoryPane
from .network_pane import NetworkPane
from .no_gpu_pane import NoGpuPane
from .node_header import NodeHeader
from .pane import Pane
from .pressure_pane import PressurePane
from .processes_pane import ProcessesPane
from .timeline_pane import TimelinePane
from .unit_pane import UnitPane

__all__ = [
    "AlertsPane",
    "CpuPane",
    "DiskPane",
    "FleetSummary",
    "FleetTable",
    "GpuPane",
    "MemoryPane",
    "NetworkPane",
    "NoGpuPane",
    "NodeHeader",
    "Pane",
    "PressurePane",
    "ProcessesPane",
    "TimelinePane",
    "UnitPane",
    "ContainerPane",
]
