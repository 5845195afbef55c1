"""The stack view (``V`` on the fleet, ``:stack``): nodes × the versions that must match, and
whether each node's driver is locked.

Columns: kernel, NVIDIA driver (userspace, as NVML reports it), the loaded kernel module, the
version the driver packages installed, CUDA, whether the packages are held, whether automatic
upgrades may touch them, and a pending reboot. A cell is coloured by the alerts open on it: the
fleet's version-drift rules mark the odd ones out, the stack rules an unlocked driver or a
pending reboot (each rule says which reading it concerns, so no rule is named here).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from dltui.core.models import NodeFacts, StackFacts
from dltui.core.rules import RULES
from dltui.core.state import FleetState, NodeState
from dltui.core.timeline import CRITICAL, WARNING
from dltui.core.vendors import driver_words

from .. import levels
from ..widgets.footer import DltuiFooter

MUTED = "$foreground-muted"
# column title, width, the reading a rule concerns when it marks this column
COLUMNS = (
    ("KERNEL", 20, "kernel"),
    ("DRIVER", 11, "driver"),
    ("MODULE", 11, ""),
    ("PACKAGES", 11, ""),
    ("CUDA", 9, "cuda"),  # or ROCm's version on an AMD node
    ("HELD", 13, "driver_held"),
    ("UPGRADES", 18, ""),
    ("REBOOT", 0, "reboot"),
)
_RULES_OF = {
    concern: tuple(r.id for r in RULES if r.concerns == concern)
    for _, _, concern in COLUMNS
    if concern
}
_KEYS = tuple((rule, None) for rules in _RULES_OF.values() for rule in rules)


def stack_cells(facts: NodeFacts | None) -> list[str]:
    """The words of one node's row, column by column."""
    if facts is None:
        return ["…"] * len(COLUMNS)
    s = facts.stack or StackFacts()
    # another vendor's node: its driver's version (amdgpu, habanalabs) and ROCm where CUDA is
    others = dict(driver_words(facts)) if facts.driver_version is None else {}
    driver = facts.driver_version or next(
        (v for k, v in others.items() if k not in ("CUDA", "firmware") and v), None
    )
    toolkit = facts.cuda_version or (f"ROCm {s.rocm_version}" if s.rocm_version else None)
    return [
        facts.kernel or "n/a",
        driver or "n/a",
        s.driver_module_version or "n/a",
        s.driver_package_version or "n/a",
        toolkit or "n/a",
        _held(s),
        _upgrades(s),
        "pending: " + "; ".join(s.reboot_reasons) if s.reboot_reasons else "",
    ]


def _held(s: StackFacts) -> str:
    if s.driver_held is None:
        return "n/a"
    if s.driver_held:
        return "held" if s.package_manager != "rpm" else "version-locked"
    unheld = len(s.driver_packages_unheld or ())
    return f"not held ({unheld})" if unheld else "not held"


def _upgrades(s: StackFacts) -> str:
    if s.auto_upgrades is None:
        return "n/a"
    if not s.auto_upgrades:
        return "off"
    return "on, driver excluded" if s.auto_upgrades_skip_driver else "on"


def _style(node: NodeState, concern: str) -> str:
    """The cell's style from the worst alert open on the node of a rule concerning it."""
    severities = [
        node.alerts[(rule, None)].severity
        for rule in _RULES_OF.get(concern, ())
        if (rule, None) in node.alerts
    ]
    if CRITICAL in severities:
        return levels.STYLE[levels.HOT]
    if WARNING in severities:
        return levels.STYLE[levels.WARM]
    return "$text-accent" if severities else ""


class StackTable(Static):
    """Every node's row; redrawn when a node's facts or alerts changed."""

    def draw(self, fleet: FleetState) -> None:
        nodes = list(fleet)
        name_w = max([4, *(len(n.name) for n in nodes)])
        header = [("NODE".ljust(name_w + 1), "bold")]
        header += [
            ((title.ljust(width + 1) if width else title), "bold") for title, width, _ in COLUMNS
        ]
        lines = [Content.assemble(*header)]
        for node in nodes:
            parts: list = [(node.name.ljust(name_w + 1), "bold")]
            for (_, width, concern), text in zip(COLUMNS, stack_cells(node.facts), strict=True):
                cell = text[:width].ljust(width + 1) if width else text
                parts.append(
                    (cell, _style(node, concern) if concern else (MUTED if text == "n/a" else ""))
                )
            lines.append(Content.assemble(*parts))
        self.update(Content("\n").join(lines))


class StackScreen(Screen):
    BINDINGS = [Binding("escape", "back", "Fleet")]
    DEFAULT_CSS = """
    StackScreen #stack-body { padding: 0 1; overflow-x: auto; }  /* at 80 columns: ← → reach REBOOT */
    StackScreen StackTable { width: auto; text-wrap: nowrap; }
    StackScreen #stack-title { color: $text-muted; padding: 0 1; }
    """

    def __init__(self, fleet: FleetState) -> None:
        super().__init__()
        self.fleet = fleet
        self._drawn: tuple | None = None
        self._ready = False  # the app's tick may come before the table is mounted

    def compose(self) -> ComposeResult:
        yield Static(
            "Software stack · coloured by open alerts: a version unlike its group's, a driver "
            "not held under automatic upgrades, a pending reboot",
            id="stack-title",
        )
        with VerticalScroll(id="stack-body"):
            yield StackTable()
        yield DltuiFooter()

    def on_mount(self) -> None:
        self._ready = True
        self.update_view(self.fleet.clock())

    def update_view(self, now: float) -> None:
        """Only when a node's facts or the alerts colouring a cell changed (not every sample)."""
        if not self._ready:
            return
        seen = tuple(
            (
                id(node.facts),
                *(node.alerts[key].severity if key in node.alerts else "" for key in _KEYS),
            )
            for node in self.fleet
        )
        if seen == self._drawn:
            return
        self._drawn = seen
        self.query_one(StackTable).draw(self.fleet)

    def action_back(self) -> None:
        self.app.pop_screen()
