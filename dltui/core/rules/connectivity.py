"""Connectivity rules, judged on every redraw tick from the node's
status word and the age of its newest sample. Keepalive alone needs about a minute to notice
a silent hang; the age notices it in seconds."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypedDict

from .. import status as st
from ..state import NodeState
from ..timeline import CRITICAL, WARNING
from .base import CLEAR, STATUS, Finding, Rule
from .memory import NodeMemory


def node_stale(node: NodeState, mem: NodeMemory, now: float, p: NodeStaleParams) -> object:
    age = node.age(now)
    if node.status != st.OK or age is None:
        return None  # not connected: node_unreachable speaks
    limit = p["intervals"] * node.interval_s
    if age <= limit:
        return CLEAR
    return Finding(
        WARNING,
        f"no sample for {age:.0f} s (expected every {node.interval_s:g} s): values shown are stale",
        "the node or its link may be overloaded",
        evidence={"age_s": round(age, 1)},
        lasting=False,
        immediate=True,
    )


def node_unreachable(node: NodeState, mem: NodeMemory, now: float, p: NodeUnreachableParams) -> object:
    if node.status in st.DOWN:
        if mem.window:
            # A snapshot reports a node it could not read as UNKNOWN with the status and its
            # reason, not as a critical finding about the node.
            return CLEAR
        why = st.without_retry(node.reason)
        return Finding(
            CRITICAL,
            node.status + (f": {why}" if why else ""),
            _retrying(st.ADVICE.get(node.status, "")),
            evidence={"status": node.status},
            immediate=True,
            on_timeline=False,  # the status change is the timeline's entry for this event
        )
    age = node.age(now)
    if node.status != st.OK or age is None:
        return None  # connecting, or closed on purpose
    if age > p["stale_s"]:
        return Finding(
            CRITICAL,
            f"connected, but no sample for {age:.0f} s",
            "the node may be hung or its link down" + ("" if mem.window else "; dltui keeps reconnecting"),
            evidence={"age_s": round(age, 1)},
            immediate=True,
        )
    return CLEAR


def node_stale_clear_for(node: NodeState, p: NodeStaleParams) -> float:
    """node_stale answers CLEAR (or None, not connected) until its limit has passed."""
    return p["intervals"] * node.interval_s if node.status == st.OK else math.inf


def node_unreachable_clear_for(node: NodeState, p: NodeUnreachableParams) -> float:
    """Connected: CLEAR until stale_s has passed; connecting or closed: None until the status
    changes; a transport error is never quiet (it raises)."""
    if node.status in st.DOWN:
        return 0.0
    return p["stale_s"] if node.status == st.OK else math.inf


def stale_intervals(params: Mapping[str, Mapping[str, Any]]) -> float:
    """How many sampling intervals a connected node may go without a sample before its values
    are stale (node_stale's limit, from rule id -> parameter overrides; infinite where the rule
    is off): the status glyph says ``stale`` from the same moment as the rule."""
    p = {**RULES[0].defaults, **params.get("node_stale", {})}
    return float(p["intervals"]) if p.get("enabled", True) else math.inf


def _retrying(advice: str) -> str:
    return f"{advice}; dltui keeps retrying" if advice else "dltui keeps retrying"



class NodeStaleParams(TypedDict):
    """``[rules.node_stale]`` (its defaults in RULES below)."""

    intervals: float
    enabled: bool


class NodeUnreachableParams(TypedDict):
    """``[rules.node_unreachable]`` (its defaults in RULES below)."""

    stale_s: float
    enabled: bool


RULES = (
    Rule(
        "node_stale",
        STATUS,
        node_stale,
        {"intervals": 3},
        "newest sample older than intervals × the sampling interval",
        clear_for=node_stale_clear_for,
    ),
    Rule(
        "node_unreachable",
        STATUS,
        node_unreachable,
        {"stale_s": 15},
        "a transport error, or no sample for stale_s while connected",
        clear_for=node_unreachable_clear_for,
    ),
)
