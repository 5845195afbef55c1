"""Open alerts, worst first: what is wrong, where, since when."""

from __future__ import annotations

from textual.content import Content

from dltui.core.state import NodeState
from dltui.core.timeline import alert_order

from .. import levels
from .pane import Pane


class AlertsPane(Pane):
    DEFAULT_CSS = """
    AlertsPane {
        max-height: 14;
        text-wrap: wrap;  /* the message is the advice: never cut it */
    }
    """

    def __init__(self) -> None:
        super().__init__("Alerts", id="alerts")

    def draw(self, node: NodeState, now: float) -> Content:
        alerts = sorted(node.alerts.values(), key=alert_order)
        self.set_border_text(title=f"Alerts · {len(alerts)} open" if alerts else "Alerts")
        na = not_applicable(node)
        if not alerts:
            lines = [Content.styled("no open alerts", "$foreground-muted")]
            return Content("\n").join(lines + [na] if na else lines)
        lines = []
        for a, gpus in group_by_rule(alerts):
            level = levels.severity(a.severity)
            where = gpu_list(gpus)
            lines.append(
                Content.assemble(
                    (f"{levels.ALERT_GLYPH.get(level, 'i')} {a.severity:<8}", levels.STYLE[level]),
                    (f" {where}", "bold"),
                    a.message,  # the message says since when, the evidence and what to do
                )
            )
        if na:
            lines.append(na)
        return Content("\n").join(lines)


def group_by_rule(alerts):
    """One line per (rule, severity): a starved loader or a fleet-wide setting hits every GPU
    of a node at once, and eight copies of one advice would push the rest off the pane. The
    first GPU's message (the lowest index) stands for the group."""
    groups: dict[tuple[str, str], list] = {}
    for a in alerts:
        groups.setdefault((a.rule, a.severity), []).append(a)
    return [(group[0], [a.gpu for a in group if a.gpu is not None]) for group in groups.values()]


def gpu_list(gpus: list[int]) -> str:
    if not gpus:
        return ""
    if len(gpus) == 1:
        return f"GPU{gpus[0]} "
    return f"GPU{','.join(map(str, gpus))} (GPU{gpus[0]} shown) "


def not_applicable(node: NodeState) -> Content | None:
    """Rules the hardware gives no signal for: said plainly, so silence is never read as fine."""
    gpus_by_rule: dict[str, list[int]] = {}
    for gpu, rules in node.rules_na.items():
        for rule in rules:
            gpus_by_rule.setdefault(rule, []).extend([] if gpu is None else [gpu])
    if not gpus_by_rule:
        return None
    parts = [
        f"{rule} ({'GPU' + ','.join(map(str, sorted(gpus))) if gpus else 'node'})"
        for rule, gpus in sorted(gpus_by_rule.items())
    ]
    if node.facts is not None and node.facts.gpu_source == "nvidia-smi":
        # the fallback reads fewer counters than NVML (PCIe replays, for one): not the GPU's fault
        why = "no signal from this hardware through nvidia-smi (NVML reads more)"
    elif node.facts is not None and node.facts.gpu_source == "dcgm-exporter":
        why = "no series for it in Prometheus"
    else:
        why = "not reported by this hardware"
    return Content.styled(f"n/a here, {why}: " + "; ".join(parts), "$foreground-muted")
