"""Connectivity rules, judged on every redraw tick from the node's
status word and the age of its newest sample. Keepalive alone needs about a minute to notice
a silent hang; the age notices it in seconds."""

from __future__ import annotations

from typing import TypedDict

from .. import status as st
from ..state import NodeState
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
        "warning",
        f"no sample for {age:.0f} s (expected every {node.interval_s:g} s): values shown are stale",
        "the node or its link may be overloaded",
        evidence={"age_s": round(age, 1)},
        lasting=False,
        immediate=True,
    )


def node_unreachable(node: NodeState, mem: NodeMemory, now: float, p: NodeUnreachableParams) -> object:
    if node.status in st.DOWN:
        what = node.status + (f": {node.reason}" if node.reason else "")
        return Finding(
            "critical",
            what,
            _ACTIONS.get(node.status, ""),
            evidence={"status": node.status},
            immediate=True,
        )
    age = node.age(now)
    if node.status != st.OK or age is None:
        return None  # connecting, or closed on purpose
    if age > p["stale_s"]:
        return Finding(
            "critical",
            f"connected, but no sample for {age:.0f} s",
            "the node may be hung or its link down; dltui keeps reconnecting",
            evidence={"age_s": round(age, 1)},
            immediate=True,
        )
    return CLEAR


_ACTIONS: dict[str, str] = {
    st.AUTH_FAILED: "check the user and key the SSH config gives this host (ssh -v HOST)",
    st.HOST_KEY_UNKNOWN: "verify the fingerprint, then add it (ssh HOST once, or --accept-new-host-keys)",
    st.HOST_KEY_CHANGED: "the host key changed: verify the host before replacing its known_hosts line",
    st.PROBE_FAILED: "the probe could not run: is python3 (3.8+) installed on the node?",
    st.TIMEOUT: "check the network path and the jump host; dltui keeps retrying",
    st.UNREACHABLE: "check the network path and the jump host; dltui keeps retrying",
    st.RECONNECTING: "dltui is reconnecting",
}


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
    ),
    Rule(
        "node_unreachable",
        STATUS,
        node_unreachable,
        {"stale_s": 15},
        "a transport error, or no sample for stale_s while connected",
    ),
)
