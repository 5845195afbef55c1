"""The fabric's lines in the node screen: HCA ports under the NICs (network pane) and a GPU's
NVLink (GPU pane), coloured by the alerts open on them so the panes and the alerts agree."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.models import IbPortSample, NvlinkSample
from dltui.core.rules import RULES
from dltui.core.rules.fabric import port_label
from dltui.core.state import NodeState
from dltui.core.timeline import CRITICAL, INFO, WARNING

from .. import levels

# Asked of the rules, never named: which ones judge the ports, which ones NVLink.
PORT_RULES = tuple(rule.id for rule in RULES if rule.concerns == "fabric")
NVLINK_RULES = tuple(rule.id for rule in RULES if rule.concerns == "nvlink")
# PMA error counters saturate (they stop, they do not wrap) on older HCAs: 16 bits for symbol
# errors, 8 bits for link downs and recoveries. A saturated counter hides new errors.
SATURATED = {
    "symbol_errors_total": 65535,
    "link_downed_total": 255,
    "link_error_recovery_total": 255,
}


def port_lines(node: NodeState, name_w: int) -> list[Content]:
    """One line per HCA port: name, rx/tx, rate and state, error counts; [] with no port."""
    ports = node.sample.ib_ports if node.sample else []
    if not ports:
        return []
    flagged = _flagged_ports(node)
    lines = [
        Content.styled(
            f"{'hca':<{name_w}} {'rx/s':>7} {'tx/s':>7}  {'rate':>5} {'state':<8} errors",
            "$foreground-muted",
        )
    ]
    for p in ports:
        label = port_label(p, ports)
        if p.up:
            state = "active"
        elif p.phys_state is not None and p.phys_state != "LinkUp":
            state = p.phys_state.lower()  # polling (no peer), disabled
        else:
            state = (p.state or fmt.NA).lower()  # init or armed: no subnet manager brought it up
        lines.append(
            Content.assemble(
                (label.ljust(name_w), "bold"),
                fmt.size(p.rx_bytes_per_s).rjust(8),
                fmt.size(p.tx_bytes_per_s).rjust(8),
                "  ",
                (
                    _rate(p).rjust(5),
                    flagged.get(p.name + "/rate", "" if p.up is not False else "$foreground-muted"),
                ),
                " ",
                # red with the alert that expects it up; a spare port nobody expects stays calm
                (
                    state.ljust(8),
                    flagged.get(p.name, "" if p.up is not False else "$foreground-muted"),
                ),
                _errors(p, flagged.get(p.name + "/errors", "")),
                (
                    f" {p.netdev}" if p.netdev and p.link_layer == "Ethernet" else "",
                    "$foreground-muted",
                ),
            )
        )
    return lines


def _rate(p: IbPortSample) -> str:
    if p.rate_gbps is None:
        return fmt.NA
    return f"{p.rate_gbps:g}G"


def _errors(p: IbPortSample, style: str) -> Content:
    """Lifetime counts, muted (history is not a fault); in the alert's colour while an alert
    says they are rising."""
    parts: list = []
    for field, word in (
        ("symbol_errors_total", "sym"),
        ("link_downed_total", "down"),
        ("xmit_discards_total", "disc"),
    ):
        value = getattr(p, field)
        if value:
            saturated = value >= SATURATED.get(field, 1 << 64)
            parts += [
                " ",
                (f"{word} {value}{'+' if saturated else ''}", style or "$foreground-muted"),
            ]
    if not parts:
        return Content(" 0" if p.symbol_errors_total is not None else " " + fmt.NA)
    return Content.assemble(*parts)


def _flagged_ports(node: NodeState) -> dict[str, str]:
    """Port name (``name/rate`` for a slow one, ``name/errors`` for rising counters) -> the
    style of the alert on it."""
    out: dict[str, str] = {}
    for rule in PORT_RULES:
        alert = node.alerts.get((rule, None))
        if alert is None or alert.severity == INFO:
            continue
        style = levels.STYLE[levels.HOT if alert.severity == CRITICAL else levels.WARM]
        slow = alert.evidence.get("fabric") == "slow"
        for entry in alert.evidence.get("ports", ()):
            out[entry["port"] + ("/rate" if slow else "")] = style
        for rising in alert.evidence.get("rises", {}):  # "mlx5_0:1/symbol_errors_total"
            out[rising.split("/", 1)[0] + "/errors"] = style
    return out


def nvlink_line(node: NodeState, gpu: int) -> Content | None:
    """``NVLink 18/18 · 26.562 GB/s · errors 0`` (the kinds named once any counts: ``replay 40
    CRC 3``); None for a GPU without NVLink (PCIe cards: nothing to say, not n/a)."""
    links = next((n for n in node.sample.nvlinks if n.gpu == gpu), None) if node.sample else None
    if links is None:
        return None
    alerts = [node.alerts[(r, gpu)] for r in NVLINK_RULES if (r, gpu) in node.alerts]
    link_style = _worst([a for a in alerts if a.evidence.get("fabric") in ("down", "slow")])
    error_style = _worst([a for a in alerts if a.evidence.get("fabric") == "errors"])
    counts = (
        ("replay", links.replay_errors_total),
        ("recov", links.recovery_errors_total),
        ("CRC", links.crc_errors_total),
    )
    if all(value is None for _, value in counts):
        errors = fmt.NA
    else:
        errors = " ".join(f"{word} {value}" for word, value in counts if value) or "0"
    speed = _speed(links)
    return Content.assemble(
        ("NVLink ", "$foreground-muted"),
        (_count(links), link_style),
        (f" · {speed}" if speed else "", link_style),
        (" · errors ", "$foreground-muted"),
        (errors, error_style),
    )


def _worst(alerts: list) -> str:
    found = {a.severity for a in alerts}
    if CRITICAL in found:
        return levels.STYLE[levels.HOT]
    return levels.STYLE[levels.WARM] if WARNING in found else ""


def _count(links: NvlinkSample) -> str:
    if links.links_active is None:
        return fmt.NA
    total = fmt.num(links.links_total) if links.links_total is not None else "?"
    return f"{links.links_active}/{total}"


def _speed(links: NvlinkSample) -> str:
    speeds = sorted({s for s in links.link_speeds_gbytes_per_s if s})
    if not speeds:
        return ""
    if len(speeds) == 1:
        return f"{speeds[0]:g} GB/s"
    return f"{speeds[0]:g}–{speeds[-1]:g} GB/s"
