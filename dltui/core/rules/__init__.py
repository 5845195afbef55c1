"""Anomaly rules: from a node's history to alerts and timeline entries (every rule, its scope
and defaults: the rules table in docs/rules.md).

``build_engine(cfg)`` gives the engine ``FleetState`` runs; ``RULES`` lists every rule with
its defaults (configurable under ``[rules.<id>]`` and ``[groups.<g>.rules.<id>]``).
"""

from __future__ import annotations

from dltui.config import Config

from ..gpu_inventory import GpuInventory
from . import (
    accelerators,
    capacity,
    connectivity,
    drives,
    fabric,
    fleet,
    hardware,
    pipeline,
    restart_policy,
    stack,
    thermal,
    training,
)
from .engine import Engine
from .settings import RuleSettings

RULES = (
    thermal.RULES
    + accelerators.RULES
    + pipeline.RULES
    + hardware.RULES
    + capacity.RULES
    + connectivity.RULES
    + fleet.RULES
    + training.RULES
    + restart_policy.RULES
    + fabric.RULES
    + drives.RULES
    + stack.RULES
)


def build_engine(
    cfg: Config | None = None, snapshot_window_s: float | None = None, inventory: GpuInventory | None = None
) -> Engine:
    """The engine for a dashboard (``snapshot_window_s`` None) or for a ``dltui snapshot``
    that judges what it saw in its window; ``inventory`` remembers real nodes' GPUs across
    sessions (never a demo's or a replay's). Raises ``ConfigError`` for a bad rules config."""
    return Engine(RuleSettings(RULES, cfg), snapshot_window_s, inventory)


__all__ = ["Engine", "RULES", "build_engine"]
