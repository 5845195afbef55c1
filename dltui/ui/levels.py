"""How alarming a value is: the words every widget maps to a theme colour.

Levels are ``na`` (not reported), ``idle``, ``ok``, ``warm`` and ``hot``; ``STYLE`` maps them
to theme variables, so every theme colours them. Temperature thresholds are the thermal rules'
own (``thermal.temperature_limits``: their defaults under the config's overrides), so a cell
turns red when the rule would fire.
"""

from __future__ import annotations

from dataclasses import dataclass

from dltui.core import status as st
from dltui.core.rules.thermal import temperature_limits

NA, IDLE, OK, WARM, HOT = "na", "idle", "ok", "warm", "hot"


@dataclass(frozen=True)
class Thresholds:
    temp_warning_c: float
    temp_critical_c: float
    margin_warning_c: float
    margin_critical_c: float
    util_idle_percent: float = 5.0

    @classmethod
    def from_rules(cls, rules: dict[str, dict]) -> Thresholds:
        return cls(*temperature_limits(rules))


DEFAULT = Thresholds.from_rules({})


class NodeThresholds:
    """Each node's thresholds as the engine judges that node: ``[groups.<g>.rules.*]`` of its
    groups over ``[rules.*]``, so an air-cooled group with a lower ``gpu_temp_high`` turns
    its cells red at its own limit, exactly when its alert opens."""

    def __init__(self, settings=None, rules: dict[str, dict] | None = None):
        self.settings = settings  # the engine's RuleSettings; None: the config's [rules] for all
        self.default = Thresholds.from_rules(rules or {})
        self._by_node: dict[str, Thresholds] = {}

    def of(self, node: str) -> Thresholds:
        th = self._by_node.get(node)
        if th is None:
            groups = self.settings.groups_of(node) if self.settings is not None else ()
            th = Thresholds.from_rules(self.settings.params(groups)) if groups else self.default
            self._by_node[node] = th
        return th


def temperature(core_c: float | None, margin_c: float | None, t: Thresholds = DEFAULT) -> str:
    """The T.Limit margin decides where reported; the core temperature alone never says ``hot``
    on a GPU with a margin (the rules' model:
    core/rules/thermal.py)."""
    if core_c is None and margin_c is None:
        return NA
    level = OK
    if core_c is not None and core_c >= t.temp_warning_c:
        level = HOT if core_c >= t.temp_critical_c and margin_c is None else WARM
    if margin_c is not None:
        if margin_c <= t.margin_critical_c:
            return HOT
        if margin_c <= t.margin_warning_c:
            level = WARM
    return level


def utilization(percent: float | None, t: Thresholds = DEFAULT) -> str:
    if percent is None:
        return NA
    return IDLE if percent < t.util_idle_percent else OK


def used(percent: float | None, warning: float = 90.0, critical: float = 95.0) -> str:
    """Fullness of memory, a file system, a disk's busy time."""
    if percent is None:
        return NA
    return HOT if percent >= critical else WARM if percent >= warning else OK


def pressure(percent: float | None) -> str:
    """PSI ``some avg10``: 20 % is where the loader-starvation rule calls I/O the cause."""
    if percent is None:
        return NA
    return HOT if percent >= 40 else WARM if percent >= 20 else OK


def status(word: str) -> str:
    if word == st.OK:
        return OK
    if word in st.DOWN:
        return HOT
    return WARM


def severity(word: str | None) -> str:
    return {"critical": HOT, "warning": WARM, "info": OK}.get(word or "", NA)


STATUS_GLYPH = {OK: "●", WARM: "◐", HOT: "✖"}
"""A node's status as a shape too (colour-blind safe): ok, stale or reconnecting, down."""
ALERT_GLYPH = {HOT: "▲", WARM: "△", OK: "i"}
"""An alert's severity as a shape: critical, warning, info."""

STYLE = {
    NA: "$foreground-disabled",
    IDLE: "$foreground-muted",
    OK: "$text-success",
    WARM: "$text-warning",
    HOT: "bold $text-error",
}
"""Content style for each level: theme variables only, so every theme colours them."""

UTIL_STYLE = {NA: "$foreground-disabled", IDLE: "$text-primary", OK: ""}
"""Utilisation: busy is normal and plain; an idle GPU stands out (in blue) without alarming."""
