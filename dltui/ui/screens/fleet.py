"""The fleet screen: every node as a row (or a tile when the fleet is taller than the screen)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from dltui.core.state import FleetState

from .. import levels
from ..fleet_query import SORT_KEYS, Filter, FilterError, parse_filter, sort_nodes
from ..widgets import FleetSummary, FleetTable
from .prompt import PromptScreen


class FleetScreen(Screen):
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("c", "toggle_compact", "Compact"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("R", "unit('restart')", "Restart unit"),
        Binding("X", "unit('stop')", "Stop unit", show=False),
        Binding("U", "unit('start')", "Start unit", show=False),
    ]

    def __init__(self, fleet: FleetState, thresholds: levels.NodeThresholds) -> None:
        super().__init__()
        self.fleet = fleet
        self.thresholds = thresholds
        self.sort_key = "name"
        self.filter: Filter | None = None
        self._mode_chosen = False
        self._ready = False

    def compose(self) -> ComposeResult:
        yield FleetSummary()
        yield FleetTable(self.thresholds, id="fleet")
        yield Footer()

    def on_mount(self) -> None:
        self._ready = True
        self.query_one(FleetTable).focus()
        self.update_view(self.fleet.clock())

    def on_resize(self) -> None:
        if not self._mode_chosen:  # the first size decides: tiles when one row a node would not fit
            rows = self.size.height - 3  # summary, column header, footer
            self.query_one(FleetTable).compact = len(self.fleet) > rows
            self._mode_chosen = True

    def update_view(self, now: float) -> None:
        # Pushed but not composed yet (on_mount draws it), or being torn down at exit while
        # the tick timer still fires: nothing to draw into.
        if not self._ready or not self.display:
            return
        nodes = list(self.fleet)
        shown = [n for n in nodes if self.filter(n, now)] if self.filter else nodes
        self.query_one(FleetTable).show(sort_nodes(shown, self.sort_key), now)
        self.query_one(FleetSummary).show(
            nodes, len(shown), self.sort_key, self.filter.text if self.filter else "", self.thresholds
        )

    # -- sort and filter ----------------------------------------------------------------------

    def set_sort(self, key: str) -> None:
        if key not in SORT_KEYS:
            raise ValueError(f"unknown sort key {key!r}; keys: {', '.join(SORT_KEYS)}")
        self.sort_key = key
        self.update_view(self.fleet.clock())

    def set_filter(self, text: str) -> None:
        """Raises FilterError for a filter that cannot be understood."""
        self.filter = parse_filter(text) if text.strip() else None
        self.update_view(self.fleet.clock())

    # -- actions on the picked nodes (space), or the one under the cursor ---------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "unit":  # hidden under --read-only and on a recording
            flows = getattr(self.app, "actions", None)
            return flows is not None and flows.available()
        return True

    def action_unit(self, verb: str) -> None:
        table = self.query_one(FleetTable)
        names = [n.name for n in table.nodes if n.name in table.marked]
        if not names and table.selected is not None:
            names = [table.selected.name]
        if names:
            self.app.actions.unit(names, verb)

    def action_done(self) -> None:
        self.query_one(FleetTable).marked.clear()
        self.update_view(self.fleet.clock())

    def action_cycle_sort(self) -> None:
        self.set_sort(SORT_KEYS[(SORT_KEYS.index(self.sort_key) + 1) % len(SORT_KEYS)])

    def action_toggle_compact(self) -> None:
        table = self.query_one(FleetTable)
        table.compact = not table.compact
        self._mode_chosen = True

    def action_clear_filter(self) -> None:
        if self.filter is not None:
            self.set_filter("")

    def action_filter(self) -> None:
        before = self.filter.text if self.filter else ""

        def done(text: str | None) -> None:
            self.set_filter(before if text is None else text)

        self.app.push_screen(
            PromptScreen(
                "/",
                before,
                placeholder="temp>80  util<5  status!=ok  gpu07 …",
                check=_filter_problem,
                on_change=self.set_filter,
            ),
            done,
        )

    @on(FleetTable.Opened)
    def _open(self, event: FleetTable.Opened) -> None:
        self.app.open_node(event.name)


def _filter_problem(text: str) -> str | None:
    try:
        parse_filter(text)
    except FilterError as exc:
        return str(exc)
    return None
