"""How a node's fabric (HCA ports, NVLink) reads at a glance: the fleet badge and its filter.
Pure: no Textual, no I/O."""

from __future__ import annotations

from collections.abc import Mapping

from .models import Sample
from .rules import RULES
from .timeline import Alert

OK, DOWN, SLOW, ERRORS = "ok", "down", "slow", "errors"
WORDS = (DOWN, SLOW, ERRORS, OK)  # worst first
# The rules that judge the fabric, asked rather than named.
FABRIC_RULES = frozenset(rule.id for rule in RULES if rule.concerns in ("fabric", "nvlink"))


def badge(sample: Sample | None, alerts: Mapping[tuple[str, int | None], Alert]) -> str | None:
    """``down``, ``slow`` or ``errors`` from the worst open fabric alert (its evidence says
    which), else ``ok``; None when the node reports no HCA port and no NVLink."""
    if sample is None or (not sample.ib_ports and not sample.nvlinks):
        return None
    found = {a.evidence.get("fabric") for (rule, _), a in alerts.items() if rule in FABRIC_RULES}
    return next((word for word in WORDS if word in found), OK)
