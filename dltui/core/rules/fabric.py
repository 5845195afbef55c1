"""Fabric rules: InfiniBand / RoCE HCA ports and NVLink (notes/fabric-and-disks.md).

A port or link that was up and is no longer, or that the node group expects up, is critical: the
GPUs look fine and the job still crawls or dies. On a node no group describes, a port down since
dltui first saw it while its siblings (the node's other ports of the same link layer) are ACTIVE
is a warning: unused, or a cable never plugged; ``ignore_ports`` silences an unused one. A port
or link slower than its siblings (or than the group's ``ib_rate_gbps``) is a warning: a bad cable
or transceiver, a dirty connector.
Error counters alert on their rise, with the rate, never on lifetime values.

Every finding carries ``evidence["fabric"]`` ("down", "slow" or "errors"): the fleet's fabric
badge reads it from the alerts of the rules that concern the fabric (``core/fabric.py``).
"""

from __future__ import annotations

from collections import deque
from fnmatch import fnmatchcase
from typing import Any, TypedDict

from ..models import IbPortSample, NvlinkSample, Sample
from ..timeline import CRITICAL, WARNING
from .base import CLEAR, GPUS, NODE, Finding, Rule, delta
from .memory import NodeMemory

_CABLE = "check the cable, the transceiver and the switch port"
_CABLE_DOWN = _CABLE + " (ibstat shows it; the switch logs its side)"
_SM = "the link trained but the port is not ACTIVE: is a subnet manager (opensm, UFM) running?"
_UNUSED = (
    "unused, or a cable? If unused, add it to [rules.ib_port_down] ignore_ports; else " + _CABLE
)
_UNUSED_TOO = "a port never up may be unused: add it to [rules.ib_port_down] ignore_ports"


# -- InfiniBand / RoCE ------------------------------------------------------------------------


def port_label(port: IbPortSample, ports: list[IbPortSample]) -> str:
    """``mlx5_2`` for a one-port HCA (most GPU nodes), ``mlx4_0:2`` where the HCA has several."""
    if port.device and sum(1 for q in ports if q.device == port.device) == 1:
        return port.device
    return port.name


def _watched(
    ports: list[IbPortSample], p: IbPortDownParams | IbPortRateLowParams | IbPortErrorsParams
) -> list[IbPortSample]:
    ignored = p["ignore_ports"]
    return [
        q
        for q in ports
        if not any(fnmatchcase(q.name, g) or fnmatchcase(q.device or "", g) for g in ignored)
    ]


def ib_port_down(sample: Sample, node: NodeMemory, p: IbPortDownParams) -> object:
    ports = _watched(sample.ib_ports, p)
    if not ports:
        return None
    seen_up: set[str] = node.rule_state.setdefault("ib_ports_seen_up", set())
    seen_up.update(q.name for q in ports if q.up)
    expected = p["ib_rate_gbps"]
    down: list[tuple[IbPortSample, str]] = []  # critical: up earlier, or the group expects it
    idle: list[tuple[IbPortSample, str]] = []  # warning: never up, while its siblings are
    for q in ports:
        if q.up is not False:
            continue
        if q.name in seen_up:
            down.append((q, ", up earlier"))
        elif expected:
            down.append((q, f", expected up at {expected:g} Gb/s"))
        else:  # no group describes the node: the port's siblings say whether it should be up
            siblings = [s for s in ports if s is not q and s.link_layer == q.link_layer]
            active = sum(1 for s in siblings if s.up)
            if active:  # with none ACTIVE (all of that kind down) there is nothing to go by
                some = "" if active == len(siblings) else f"{active} of "
                are = "s are" if len(siblings) > 1 else " is"
                idle.append((q, f" while {some}its {len(siblings)} sibling{are} ACTIVE"))
    if not down and not idle:
        return CLEAR
    words = [_down_words(q, why, sample.ib_ports) for q, why in down + idle]
    actions = []
    if down:
        actions.append(_SM if all(q.phys_state == "LinkUp" for q, _ in down) else _CABLE_DOWN)
    if idle:
        if all(q.phys_state == "LinkUp" for q, _ in idle):
            action = _SM
        else:  # the cable is said once
            action = _UNUSED_TOO if _CABLE_DOWN in actions else _UNUSED
        if action not in actions:
            actions.append(action)
    return Finding(
        CRITICAL if down else WARNING,
        "HCA port" + ("s " if len(words) > 1 else " ") + "; ".join(words),
        "; ".join(actions),
        evidence={
            "fabric": "down",
            "ports": [
                {"port": q.name, "state": q.state, "phys_state": q.phys_state}
                for q, _ in down + idle
            ],
        },
    )


def _down_words(q: IbPortSample, why: str, ports: list[IbPortSample]) -> str:
    label = port_label(q, ports)
    if q.phys_state == "LinkUp":  # the cable is up but no subnet manager made the port ACTIVE
        return f"{label} {q.state} with the physical link up{why}"
    if q.phys_state is None:
        return f"{label} {q.state or 'DOWN'}{why}"
    return f"{label} {q.state or 'DOWN'} (physical link {q.phys_state}){why}"


def ib_port_rate_low(sample: Sample, node: NodeMemory, p: IbPortRateLowParams) -> object:
    ports = [q for q in _watched(sample.ib_ports, p) if q.up and q.rate_gbps]
    if not ports:
        return None
    expected = p["ib_rate_gbps"]
    # each group's rates counted once; a port's siblings are its group less itself
    groups: dict[tuple[str | None, str | None], dict[float, int]] = {}
    for q in ports:
        counts = groups.setdefault((q.link_layer, q.hca_type), {})
        counts[q.rate_gbps or 0.0] = counts.get(q.rate_gbps or 0.0, 0) + 1
    slow = []
    for q in ports:
        rate = q.rate_gbps or 0.0  # ports holds only those with a rate
        counts = groups[(q.link_layer, q.hca_type)]
        counts[rate] -= 1
        common = _top(counts)
        counts[rate] += 1
        if common is not None and rate < common:
            slow.append((q, f"its siblings at {common:g} Gb/s"))
        elif expected and rate < expected:
            slow.append((q, f"the group expects {expected:g} Gb/s"))
    if not slow:
        return CLEAR
    words = []
    for q, against in slow:
        lanes = f" ({q.rate_detail})" if q.rate_detail else ""
        words.append(f"{port_label(q, sample.ib_ports)} at {q.rate_gbps:g} Gb/s{lanes}, {against}")
    return Finding(
        WARNING,
        "; ".join(words),
        "reseat or replace the cable/transceiver; check the switch port's speed",
        evidence={
            "fabric": "slow",
            "ports": [
                {"port": q.name, "rate_gbps": q.rate_gbps, "rate_detail": q.rate_detail}
                for q, _ in slow
            ],
        },
    )


def _most_common(values: list[float | None]) -> float | None:
    """The value most of ``values`` share, the highest on a tie; None when there are none."""
    counts: dict[float, int] = {}
    for v in values:
        if v:
            counts[v] = counts.get(v, 0) + 1
    return _top(counts)


def _top(counts: dict[float, int]) -> float | None:
    """The value counted most (the highest on a tie), zero counts and zero values aside."""
    best: float | None = None
    best_n = 0
    for v, n in counts.items():
        if v and n and (n > best_n or (n == best_n and best is not None and v > best)):
            best, best_n = v, n
    return best


# Counter field -> (words, the next step): the operators' playbook.
_IB_COUNTERS = (
    (
        "symbol_errors_total",
        "symbol errors",
        "physical layer: clean or reseat the connector, swap the cable or transceiver",
    ),
    (
        "link_error_recovery_total",
        "link error recoveries",
        "physical layer: clean or reseat the connector, swap the cable or transceiver",
    ),
    (
        "link_downed_total",
        "link downs",
        "the link is flapping: check the cable seating and the switch port's log",
    ),
)


def ib_port_errors(sample: Sample, node: NodeMemory, p: IbPortErrorsParams) -> object:
    ports = _watched(sample.ib_ports, p)
    readings = [(q, f, getattr(q, f)) for q in ports for f, _, _ in _IB_COUNTERS]
    if not any(value is not None for _, _, value in readings):
        return None
    state = node.rule_state.setdefault("ib_port_counters", {})  # (port, field) -> last value
    rises: deque = node.rule_state.setdefault("ib_port_rises", deque())  # (time, port, field, rise)
    now = sample.time
    for q, field, value in readings:
        rise = delta(value, state.get((q.name, field)))
        if value is not None:
            state[(q.name, field)] = value
        if rise:
            rises.append((now, q.name, field, rise))
    while rises and now - rises[0][0] > p["window_s"]:
        rises.popleft()
    if not rises:
        return CLEAR
    totals: dict[tuple[str, str], int] = {}
    for _, name, field, rise in rises:
        totals[(name, field)] = totals.get((name, field), 0) + rise
    by_name = {q.name: q for q in sample.ib_ports}
    span_s = now - rises[0][0] + node.interval_s
    words, actions = [], []
    for (name, field), total in sorted(totals.items()):
        what, action = next((w, a) for f, w, a in _IB_COUNTERS if f == field)
        port = by_name.get(name)
        label = port_label(port, sample.ib_ports) if port is not None else name
        words.append(f"{label} {what} {_rise(total, span_s)}")
        if action not in actions:
            actions.append(action)
    return Finding(
        WARNING,
        "; ".join(words) + f" in the last {p['window_s'] / 60:g} min",
        "; ".join(actions),
        evidence={"fabric": "errors", "rises": {f"{n}/{f}": t for (n, f), t in totals.items()}},
        immediate=True,
    )


def _rise(total: int, span_s: float) -> str:
    """``+120 (12.0/min)``: the rate once the rises span a minute (one link down is not a rate)."""
    return f"+{total} ({total * 60.0 / span_s:.1f}/min)" if span_s >= 60 else f"+{total}"


# -- NVLink -----------------------------------------------------------------------------------


def nvlink_degraded(sample: Sample, node: NodeMemory, p: NvlinkDegradedParams) -> dict | None:
    links = sample.nvlinks
    if not links:
        return None
    # The links change seldom (the probe reads them every 10 s): the same links and parameters
    # give the same answer, as what they add to "nvlink_seen" is already there.
    last = node.rule_state.get("nvlink_degraded_last")
    if last is not None and last[1] is p and (last[0] is links or last[0] == links):
        return last[2]
    seen: dict[int, dict[str, Any]] = node.rule_state.setdefault("nvlink_seen", {})
    siblings = max((n.links_active for n in links if n.links_active is not None), default=0)
    speeds = _most_common([s for n in links for s in n.link_speeds_gbytes_per_s])
    out: dict[int | None, object] = {}
    for n in links:
        if n.error is not None or n.links_active is None:
            continue
        mem = seen.get(n.gpu)
        if mem is None:
            mem = seen[n.gpu] = {"first": n.links_active, "up": set()}
        mem["up"].update(i for i, up in enumerate(n.links_up) if up)
        gone = sorted(i for i in mem["up"] if i >= len(n.links_up) or not n.links_up[i])
        expected = max(mem["first"], siblings)
        slow = [
            (i, s)
            for i, s in enumerate(n.link_speeds_gbytes_per_s)
            if s and speeds and s < p["slow_ratio"] * speeds
        ]
        out[n.gpu] = _nvlink_finding(n, gone, expected, siblings, slow, speeds)
    node.rule_state["nvlink_degraded_last"] = (links, p, out)
    return out


def _nvlink_finding(
    n: NvlinkSample,
    gone: list[int],
    expected: int,
    siblings: int,
    slow: list[tuple[int, float]],
    common: float | None,
) -> object:
    active = n.links_active or 0
    slow_words = (
        ", ".join(f"link {i} at {s:g} GB/s" for i, s in slow) + f", the others at {common:g} GB/s"
        if slow
        else ""
    )
    if gone or active < expected:
        what = f"NVLink {active} of {expected} links active"
        if gone:
            what += (
                f": link{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} down, up earlier"
            )
        elif siblings > active:
            what += f" (the other GPUs have {siblings})"
        return Finding(
            CRITICAL,
            what,
            "look for XID 74 in the timeline; reset the GPU, and if the link stays down, reseat "
            "the GPU or baseboard (or RMA)",
            detail=slow_words,
            evidence={
                "fabric": "down",
                "links_active": active,
                "expected": expected,
                "links_down": gone,
            },
        )
    if slow:
        return Finding(
            WARNING,
            "NVLink " + slow_words,
            "a link trained at low speed: reset the GPU; if it stays slow, reseat the GPU or baseboard",
            evidence={"fabric": "slow", "slow_links": [i for i, _ in slow]},
        )
    return CLEAR


_NVLINK_COUNTERS = (
    ("replay_errors_total", "replay"),
    ("recovery_errors_total", "recovery"),
    ("crc_errors_total", "CRC"),
)


def nvlink_errors(sample: Sample, node: NodeMemory, p: NvlinkErrorsParams) -> dict | None:
    if not sample.nvlinks:
        return None
    last = node.rule_state.setdefault("nvlink_counters", {})  # (gpu, field) -> last value
    windows: dict[int, deque] = node.rule_state.setdefault("nvlink_rises", {})
    now = sample.time
    out: dict[int | None, object] = {}
    for n in sample.nvlinks:
        values = [(f, getattr(n, f)) for f, _ in _NVLINK_COUNTERS]
        if all(v is None for _, v in values):
            continue
        window = windows.setdefault(n.gpu, deque())
        for field, value in values:
            rise = delta(value, last.get((n.gpu, field)))
            if value is not None:
                last[(n.gpu, field)] = value
            if rise:
                window.append((now, field, rise))
        while window and now - window[0][0] > p["window_s"]:
            window.popleft()
        if not window:
            out[n.gpu] = CLEAR
            continue
        totals = {f: sum(r for _, g, r in window if g == f) for f, _ in _NVLINK_COUNTERS}
        span_s = now - window[0][0] + node.interval_s
        words = [f"{name} {_rise(totals[f], span_s)}" for f, name in _NVLINK_COUNTERS if totals[f]]
        out[n.gpu] = Finding(
            WARNING,
            "NVLink errors " + ", ".join(words) + f" in the last {p['window_s'] / 60:g} min",
            "the link retransmits (replay) or retrains (recovery): watch for XID 74; reset the GPU "
            "at the next drain, reseat the GPU or baseboard if it keeps rising",
            evidence={"fabric": "errors", **{f: t for f, t in totals.items() if t}},
            immediate=True,
        )
    return out


class IbPortDownParams(TypedDict):
    """``[rules.ib_port_down]`` (its defaults in RULES below)."""

    ib_rate_gbps: float
    ignore_ports: list[str]
    for_samples: float
    clear_s: float
    enabled: bool


class IbPortRateLowParams(TypedDict):
    """``[rules.ib_port_rate_low]``."""

    ib_rate_gbps: float
    ignore_ports: list[str]
    for_s: float
    clear_s: float
    enabled: bool


class IbPortErrorsParams(TypedDict):
    """``[rules.ib_port_errors]``."""

    ib_rate_gbps: float
    ignore_ports: list[str]
    window_s: float
    enabled: bool


class NvlinkDegradedParams(TypedDict):
    """``[rules.nvlink_degraded]``."""

    slow_ratio: float
    for_samples: float
    clear_s: float
    enabled: bool


class NvlinkErrorsParams(TypedDict):
    """``[rules.nvlink_errors]``."""

    window_s: float
    enabled: bool


_PORTS = {"ib_rate_gbps": 0, "ignore_ports": []}  # ib_rate_gbps 0: no group rate set
_WINDOW = {"window_s": 600}

RULES = (
    Rule(
        "ib_port_down",
        NODE,
        ib_port_down,
        {**_PORTS, "for_samples": 2, "clear_s": 30},
        "an HCA port not ACTIVE/LinkUp that was up, or that the group expects ([groups.<g>] "
        "ib_rate_gbps) (critical); one down since first seen while its siblings of the same "
        "link layer are ACTIVE, on a node no group describes (warning); ignore_ports: globs of "
        "ports to leave alone",
        concerns="fabric",
    ),
    Rule(
        "ib_port_rate_low",
        NODE,
        ib_port_rate_low,
        {**_PORTS, "for_s": 10, "clear_s": 60},
        "an ACTIVE HCA port slower than its siblings (same link layer and HCA type) or than "
        "the group's ib_rate_gbps",
        concerns="fabric",
    ),
    Rule(
        "ib_port_errors",
        NODE,
        ib_port_errors,
        {**_PORTS, **_WINDOW},
        "symbol errors, link error recoveries or link downs rising on an HCA port within window_s",
        slow=True,
        concerns="fabric",
    ),
    Rule(
        "nvlink_degraded",
        GPUS,
        nvlink_degraded,
        {"slow_ratio": 0.9, "for_samples": 2, "clear_s": 30},
        "fewer NVLinks active than the GPU had or its siblings have (critical); a link slower "
        "than slow_ratio of the common speed (warning)",
        concerns="nvlink",
    ),
    Rule(
        "nvlink_errors",
        GPUS,
        nvlink_errors,
        dict(_WINDOW),
        "NVLink replay, recovery or CRC errors rising within window_s",
        slow=True,
        concerns="nvlink",
    ),
)
