"""The fabric in a burn-in: HCA ports and NVLink before the load (preflight), while it runs, and
after (post).

The probe's samples carry the ports' error counters and each GPU's NVLink counters; the run's
first sample is the baseline, its last the post reading. A port or link not up at preflight
fails the node (the run cannot prove the fabric it does not use); one that goes down during
the run, or a link-down / link-recovery count that rises, fails it (the link flapped under
load); other error counters rising warn, with the count, the rate and the next step. A node
without HCA ports or NVLink gets no item: nothing to judge, nothing missing.

Pure: the run's fold (fabric_fold.py) in, verdict items out.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from dltui.config import BurninSection
from dltui.core.rules.fabric import port_label

from .fabric_fold import FabricFold
from .items import FAIL, PASS, WARN, Item, VerdictStatus

_CABLE = "reseat or replace the cable/transceiver, check the switch port, then rerun"
# (field, words, fails the node?) of the port counters judged over the run
_PORT_COUNTERS = (
    ("link_downed_total", "link downs", True),
    ("link_error_recovery_total", "link error recoveries", True),
    ("symbol_errors_total", "symbol errors", False),
    ("rcv_errors_total", "receive errors", False),
    ("local_link_integrity_errors_total", "local link integrity errors", False),
    ("excessive_buffer_overrun_errors_total", "buffer overruns", False),
)
_LINK_COUNTERS = (
    ("recovery_errors_total", "recovery errors", True),
    ("replay_errors_total", "replay errors", False),
    ("crc_errors_total", "CRC errors", False),
)


def items(fold: FabricFold, cfg: BurninSection) -> list[Item]:
    """The ``ib`` and ``nvlink`` items, where the node has HCA ports or NVLink."""
    out = []
    if fold.ports_first:
        out.append(Item(*_ports(fold, cfg)))
    if fold.links_first:
        out.append(Item(*_links(fold)))
    return out


def _minutes(fold: FabricFold) -> float:
    if fold.first_time is None or fold.last_time is None:
        return 0.0
    return max(0.0, fold.last_time - fold.first_time) / 60.0


def _rises(
    pairs: list[tuple[str, Any, Any]], counters: tuple[tuple[str, str, bool], ...], minutes: float
) -> tuple[list[str], list[str]]:
    """(the rises that fail, those that warn) between each (label, first, last) reading."""
    failing: list[str] = []
    warning: list[str] = []
    for label, first, last in pairs:
        for attr, words, fails in counters:
            before, after = getattr(first, attr), getattr(last, attr)
            if before is not None and after is not None and after > before:
                rise = after - before
                (failing if fails else warning).append(
                    f"{label} {words} +{rise}{_rate(rise, minutes)}"
                )
    return failing, warning


def _rate(rise: int, minutes: float) -> str:
    return f" ({rise / minutes:.1f}/min)" if minutes >= 1 else ""


def _ports(fold: FabricFold, cfg: BurninSection) -> tuple[str, VerdictStatus, str, str]:
    ignored = cfg.ib_ignore_ports
    names = [
        n
        for n, p in fold.ports_first.items()
        if not any(fnmatchcase(n, g) or fnmatchcase(p.device or "", g) for g in ignored)
    ]
    every = list(fold.ports_first.values())
    labels = {n: port_label(fold.ports_first[n], every) for n in names}
    down = [n for n in names if fold.ports_first[n].up is False]
    if down:
        words = "; ".join(
            f"{labels[n]} {fold.ports_first[n].state} ({fold.ports_first[n].phys_state})"
            for n in down
        )
        return ("ib", FAIL, f"HCA port not up at preflight: {words}", _CABLE)
    lost = [n for n in names if n in fold.ports_lost]
    if lost:
        words = "; ".join(
            f"{labels[n]} went {fold.ports_last[n].state or 'down'} under load" for n in lost
        )
        return ("ib", FAIL, words, _CABLE)
    pairs = [(labels[n], fold.ports_first[n], fold.ports_last[n]) for n in names]
    failing, warning = _rises(pairs, _PORT_COUNTERS, _minutes(fold))
    if failing:
        return (
            "ib",
            FAIL,
            "; ".join(failing + warning) + " during the run",
            "the link flapped under load: " + _CABLE,
        )
    slow = _slow_ports(fold, names, labels, cfg.ib_rate_gbps)
    if warning or slow:
        step = (
            "physical layer: clean or reseat the connector, swap the cable or transceiver, then rerun"
            if warning
            else "reseat or replace the cable/transceiver; check the switch port's speed"
        )
        parts = (["; ".join(warning) + " during the run"] if warning else []) + slow
        return ("ib", WARN, "; ".join(parts), step)
    rates = sorted({r for n in names if (r := fold.ports_last[n].rate_gbps)})
    at = f" at {'/'.join(f'{r:g}' for r in rates)} Gb/s" if rates else ""
    return ("ib", PASS, f"{len(names)} HCA ports up{at}, no error counter rose", "")


def _slow_ports(
    fold: FabricFold, names: list[str], labels: dict[str, str], expected: float
) -> list[str]:
    out = []
    for n in names:
        port = fold.ports_last[n]
        if not port.rate_gbps:
            continue
        if expected and port.rate_gbps < expected:
            out.append(f"{labels[n]} at {port.rate_gbps:g} Gb/s, {expected:g} expected")
    return out


def _links(fold: FabricFold) -> tuple[str, VerdictStatus, str, str]:
    firsts = fold.links_first
    siblings = max(
        (x.links_active for x in firsts.values() if x.links_active is not None), default=0
    )
    short = [
        f"GPU{g}: {x.links_active} of {max(siblings, x.links_total or 0)} links"
        for g, x in sorted(firsts.items())
        if x.links_active is not None and x.links_active < max(siblings, x.links_total or 0)
    ]
    if short:
        return (
            "nvlink",
            FAIL,
            "NVLink not all up at preflight: " + "; ".join(short),
            "reset the GPU; if the link stays down, reseat the GPU or baseboard (or RMA), then rerun",
        )
    if fold.links_lost:
        words = "; ".join(
            f"GPU{g}: {fewest} of {firsts[g].links_active} links at {when - (fold.first_time or when):.0f} s"
            for g, (when, fewest) in sorted(fold.links_lost.items())
        )
        return (
            "nvlink",
            FAIL,
            "NVLink down during the run: " + words,
            "look for XID 74; reseat the GPU or baseboard (or RMA)",
        )
    pairs = [(f"GPU{g}:", first, fold.links_last[g]) for g, first in sorted(firsts.items())]
    failing, warning = _rises(pairs, _LINK_COUNTERS, _minutes(fold))
    step = "reset the GPU at the next drain; reseat the GPU or baseboard if they keep rising, then rerun"
    if failing:
        return ("nvlink", FAIL, "NVLink " + "; ".join(failing + warning) + " during the run", step)
    if warning:
        return ("nvlink", WARN, "NVLink " + "; ".join(warning) + " during the run", step)
    total = next(iter(firsts.values())).links_total
    links = f" × {total} links" if total else ""
    return ("nvlink", PASS, f"{len(firsts)} GPUs{links} up, no NVLink error counter rose", "")
