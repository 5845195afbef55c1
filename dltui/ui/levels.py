"""How alarming a value is: the words every widget maps to a theme colour.

Levels are ``na`` (not reported), ``idle``, ``ok``, ``warm`` and ``hot``; ``STYLE`` maps them
to theme variables, so every theme colours them. Every threshold is a rule's own parameter
(its default under the config's ``[rules]`` and the node's groups), so a value turns the
colour of the alert a rule would raise on it. Each rule module says what its rules judge with
(``temperature_limits``, ``capacity_limits``, ``pressure_limits``, ``idle``): no rule is named
here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dltui.core import status as st
from dltui.core.models import GpuSample
from dltui.core.rules.capacity import CapacityLimits, capacity_limits
from dltui.core.rules.connectivity import stale_intervals
from dltui.core.rules.pipeline import PressureLimits, idle, pressure_limits
from dltui.core.rules.settings import RuleSettings
from dltui.core.rules.thermal import temperature_limits
from dltui.core.state import NodeState
from dltui.core.timeline import CRITICAL, INFO, WARNING

NA, IDLE, OK, WARM, HOT = "na", "idle", "ok", "warm", "hot"
# No rule judges a disk's busy time alone (the starvation cause reads its await against its
# own baseline): its colours are iostat's %util convention.
DISK_BUSY_WARM, DISK_BUSY_HOT = 90.0, 95.0


@dataclass(frozen=True)
class Thresholds:
    temp_warning_c: float
    temp_critical_c: float
    margin_warning_c: float
    margin_critical_c: float
    capacity: CapacityLimits
    pressure: PressureLimits
    stale_intervals: float  # a connected node without a sample for this many intervals is stale

    @classmethod
    def from_rules(cls, rules: Mapping[str, Mapping[str, Any]]) -> Thresholds:
        """From rule id -> parameter overrides (a config's ``[rules]``, or the engine's
        parameters for a node): each rule module says what its rules judge with."""
        return cls(
            *temperature_limits(rules),
            capacity_limits(rules),
            pressure_limits(rules),
            stale_intervals(rules),
        )


DEFAULT = Thresholds.from_rules({})


class NodeThresholds:
    """Each node's thresholds as the engine judges that node: ``[groups.<g>.rules.*]`` of its
    groups over ``[rules.*]``, so an air-cooled group with a lower ``gpu_temp_high`` turns
    its cells red at its own limit, exactly when its alert opens."""

    def __init__(self, settings: RuleSettings | None = None, rules: dict[str, dict] | None = None):
        self.settings = settings  # the engine's RuleSettings; None: the config's [rules] for all
        self.default = Thresholds.from_rules(rules or {})
        self._by_node: dict[str, Thresholds] = {}

    def of(self, node: str) -> Thresholds:
        th = self._by_node.get(node)
        if th is None:
            settings = self.settings
            groups = settings.groups_of(node) if settings is not None else ()
            th = Thresholds.from_rules(settings.params(groups)) if settings and groups else self.default
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


def hot_and_idle(gpus: Iterable[GpuSample], t: Thresholds) -> tuple[int, int]:
    """How many of ``gpus`` ``temperature`` calls hot and ``utilization`` calls idle. The fleet
    summary counts every GPU of the fleet each second, so the two tests are written out here
    without their calls (``tests/unit/test_levels.py`` holds them to the two functions)."""
    margin_critical, core_critical = t.margin_critical_c, t.temp_critical_c
    hot = idle_gpus = 0
    for g in gpus:
        margin = g.temperature_margin_c
        if margin is not None:
            if margin <= margin_critical:
                hot += 1
        else:
            core = g.temperature_c
            if core is not None and core >= core_critical and core >= t.temp_warning_c:
                hot += 1
        util = g.utilization_percent
        if util is not None and idle(util):
            idle_gpus += 1
    return hot, idle_gpus


def utilization(percent: float | None, t: Thresholds = DEFAULT) -> str:
    if percent is None:
        return NA
    return IDLE if idle(percent) else OK


def used(percent: float | None, warning: float, critical: float) -> str:
    """Fullness against a rule's two levels."""
    if percent is None:
        return NA
    return HOT if percent >= critical else WARM if percent >= warning else OK


def memory(percent: float | None, t: Thresholds = DEFAULT) -> str:
    """Host memory used: hot where host_memory_low fires (MemAvailable below its level), warm
    inside its clearing band."""
    return used(percent, t.capacity.memory_warm_percent, t.capacity.memory_hot_percent)


def filesystem(percent: float | None, t: Thresholds = DEFAULT) -> str:
    return used(percent, t.capacity.fs_warm_percent, t.capacity.fs_hot_percent)


def disk_busy(percent: float | None) -> str:
    return used(percent, DISK_BUSY_WARM, DISK_BUSY_HOT)


def pressure(resource: str, some: float | None, full: float | None, t: Thresholds = DEFAULT) -> str:
    """PSI avg10 of ``resource``: warm where the loader-starvation rule names it the cause of a
    starving GPU; hot where host_memory_low turns critical (memory ``full``)."""
    if some is None:
        return NA
    p = t.pressure
    if resource == "memory" and full is not None and full >= t.capacity.psi_memory_full_percent:
        return HOT
    some_limit = {"cpu": p.cpu_some_percent, "io": p.io_some_percent}.get(resource, p.memory_some_percent)
    if some >= some_limit:
        return WARM
    if resource == "io" and full is not None and full >= p.io_full_percent:
        return WARM
    return OK


def status(word: str) -> str:
    if word == st.OK:
        return OK
    if word in st.DOWN:
        return HOT
    return WARM


STALE_WORD = "stale"


def is_stale(node: NodeState, now: float, t: Thresholds = DEFAULT) -> bool:
    """Connected, but its newest sample older than node_stale's limit: the link is up, the
    values on screen are not live."""
    if node.status != st.OK:
        return False
    age = node.age(now)
    return age is not None and age > t.stale_intervals * node.interval_s


def node_status(node: NodeState, now: float, t: Thresholds = DEFAULT) -> tuple[str, str]:
    """The level and word a node's status shows: its connection's word, or ``stale`` (◐)
    while connected but silent — a hung probe or node keeps its SSH connection up for a
    minute of keepalives, and a green ``ok`` beside a critical alert reads as healthy."""
    if is_stale(node, now, t):
        return WARM, STALE_WORD
    return status(node.status), node.status


def severity(word: str | None) -> str:
    by_severity: dict[str, str] = {CRITICAL: HOT, WARNING: WARM, INFO: OK}  # other words: NA
    return by_severity.get(word or "", NA)


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
