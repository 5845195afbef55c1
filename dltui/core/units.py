"""How a node's training unit reads at a glance: the fleet badge and the unit pane's words.
Pure: no Textual, no I/O."""

from __future__ import annotations

from collections.abc import Iterable

from .models import NodeFacts, UnitSample

ACTIVE, FAILED, FLAPPING, INACTIVE = "active", "failed", "flapping", "inactive"


def known_units(units: list[UnitSample]) -> list[UnitSample]:
    """The units that exist on the node and could be read."""
    return [u for u in units if u.error is None and u.load_state not in (None, "not-found")]


def badge(units: list[UnitSample], alerts: Iterable[tuple[str, int | None]]) -> str | None:
    """flapping (the unit_flapping alert is open), failed, active, inactive; None when the node
    reports no unit it has."""
    units = known_units(units)
    if not units:
        return None
    if any(key[0] == "unit_flapping" for key in alerts):
        return FLAPPING
    states = {u.active_state for u in units}
    if FAILED in states:
        return FAILED
    if ACTIVE in states or "activating" in states or "reloading" in states:
        return ACTIVE
    return INACTIVE


def started_at(unit: UnitSample, facts: NodeFacts | None) -> float | None:
    """When the unit's main process started (epoch s, node clock), from its monotonic start and
    the node's boot time; None when either is unknown."""
    if not unit.started_monotonic_us or facts is None or not facts.boot_time:
        return None
    return facts.boot_time + unit.started_monotonic_us / 1e6
