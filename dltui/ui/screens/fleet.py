"""The fleet screen: every node as a row (or a tile when the fleet is taller than the screen)."""

from __future__ import annotations

from collections.abc import Iterator

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen

from dltui.core.state import FleetState

from .. import charts, levels
from ..fleet_query import SORT_KEYS, Filter, FilterError, parse_filter, sort_nodes
from ..messages import ActionOffers, ContainerRequested, OpenNode, SchedRequested, UnitRequested
from ..widgets import FleetSummary, FleetTable
from ..widgets.chart import PlotextChart
from ..widgets.footer import DltuiFooter
from .action_keys import ACTION_KEYS
from .prompt import PromptScreen

COUNT_SLICE = 512  # nodes the summary counts in one step of a redraw (some 2 ms at 2048 nodes)
CHART_MIN_H = 12  # rows left under the table before the fleet chart is worth showing
# The fleet chart's window: the shortest that holds the history kept so far (a fresh session
# does not draw a mostly empty 2 hours). Redrawn when it moves a dot: every 2 s or more.
CHART_WINDOWS_S = (600, 1800, 7200)


class FleetScreen(Screen):
    BINDINGS = [
        Binding("slash", "filter", "Filter", priority=True),  # see PromptScreen.on_key
        Binding("s", "cycle_sort", "Sort"),
        Binding("c", "toggle_compact", "Compact"),
        Binding("v", "chart", "Chart"),
        Binding("V", "stack", "Stack"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        *ACTION_KEYS,  # unit, training container, scheduler: the node screen's too
    ]

    DEFAULT_CSS = """
    FleetScreen #fleet-chart { display: none; height: 1fr; }
    FleetScreen.-with-chart #fleet { height: auto; max-height: 100%; }
    FleetScreen.-with-chart #fleet-chart { display: block; }
    """

    def __init__(self, fleet: FleetState, thresholds: levels.NodeThresholds, *, actions: ActionOffers) -> None:
        super().__init__()
        self.fleet = fleet
        self.thresholds = thresholds
        self.actions = actions
        self.sort_key = "name"
        self.filter: Filter | None = None
        self._mode_chosen = False
        self._ready = False
        self._chart_key: tuple | None = None
        self._by_name: tuple[int, list] | None = None  # (fleet version, its nodes by name)
        self._unit_offered: tuple[bool, ...] | None = None  # what the footer shows (check_action)

    def compose(self) -> ComposeResult:
        yield FleetSummary()
        yield FleetTable(self.thresholds, id="fleet")
        yield PlotextChart(id="fleet-chart", in_thread=True)
        yield DltuiFooter()

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
        for _ in self.update_steps(now):
            pass

    def update_steps(self, now: float) -> Iterator[None]:
        """``update_view`` in steps, for the redraw tick to run one event-loop turn each: a key
        pressed meanwhile waits for a step, not the whole redraw (2048 nodes: 10 ms, the
        loop's longest turn). The summary first counts the nodes that changed, COUNT_SLICE a
        step, then the table draws the cells it will show; the last step shows table and
        summary line together (one paint), finding them counted and drawn."""
        nodes = list(self.fleet)
        if not self._drawable():
            return
        table = self.query_one(FleetTable)
        asked = (self.fleet.version, self.filter, self.sort_key)
        shown = [n for n in nodes if self.filter(n, now)] if self.filter else nodes
        ordered = self._sorted(shown)
        if len(nodes) > COUNT_SLICE:
            summary = self.query_one(FleetSummary)
            for start in range(0, len(nodes), COUNT_SLICE):
                summary.count(nodes[start : start + COUNT_SLICE], now, self.thresholds)
                yield
            table.warm(ordered, now)
            yield
            if not self._drawable():
                return
            if asked != (self.fleet.version, self.filter, self.sort_key):  # changed between steps
                nodes = list(self.fleet)
                shown = [n for n in nodes if self.filter(n, now)] if self.filter else nodes
                ordered = self._sorted(shown)
        table.show(ordered, now)
        self.query_one(FleetSummary).show(
            nodes, now, len(shown), self.sort_key, self.filter.text if self.filter else "", self.thresholds
        )
        self._show_chart(shown, table)
        targets = self.action_targets()
        offered = (
            self._offers_unit(),
            self._offers_container(),
            *(self.actions.sched_offered(targets, verb) for verb in ("drain", "cordon")),
        )
        if offered != self._unit_offered:  # the cursor or the picked nodes reached a unit, a container, a scheduler
            self._unit_offered = offered
            self.refresh_bindings()

    def _drawable(self) -> bool:
        # Pushed but not composed yet (on_mount draws it), or being torn down at exit while
        # the tick timer still fires: nothing to draw into.
        return self._ready and self.display

    def _sorted(self, shown: list) -> list:
        """By name, the order changes only with the fleet's nodes: kept, not sorted each tick."""
        if self.sort_key != "name" or self.filter is not None:
            return sort_nodes(shown, self.sort_key)
        if self._by_name is None or self._by_name[0] != self.fleet.version:
            self._by_name = (self.fleet.version, sort_nodes(shown, "name"))
        return self._by_name[1]

    def _show_chart(self, shown: list, table: FleetTable) -> None:
        """The fleet chart in the room the rows leave (a few nodes, not the compact view)."""
        free = self.size.height - 3 - len(shown)  # summary, column header, footer
        fits = not table.compact and free >= CHART_MIN_H and bool(shown)
        self.set_class(fits, "-with-chart")
        if not fits:
            self._chart_key = None
            return
        chart = self.query_one("#fleet-chart", PlotextChart)
        end = max(charts.end_of(n) for n in shown)
        held = max(len(n.history.time) * n.interval_s for n in shown)
        window = next((w for w in CHART_WINDOWS_S if w >= held), CHART_WINDOWS_S[-1])
        dot_s = window / chart.points
        key = (tuple(n.name for n in shown), chart.size, window, int(end / dot_s))
        if key != self._chart_key:  # redrawn when the window has moved by a dot, not every tick
            self._chart_key = key
            chart.plot(lambda points: charts.fleet_chart(shown, window, end, points))

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
        if action == "unit":
            return self._offers_unit()
        if action == "sched":
            return self._ready and self.actions.sched_offered(self.action_targets(), *parameters)
        if action == "container":
            return self._offers_container()
        return True

    def _offers_container(self) -> bool:
        """A training container's restart / stop / start: one node (the cursor's, or the one
        picked), where it reports a container and actions are allowed."""
        targets = self.action_targets() if self._ready else []
        containers = self.actions.containers
        return len(targets) == 1 and containers is not None and containers.offered(targets[0])

    def _offers_unit(self) -> bool:
        """Restart / stop / start where they can act: a unit known on the picked nodes (or
        the one under the cursor); never under --read-only or on a recording."""
        return self._ready and self.actions.unit_offered(self.action_targets())

    def action_targets(self) -> list[str]:
        """The nodes a fleet action acts on: those picked with space, else the cursor's."""
        table = self.query_one(FleetTable)
        names = [n.name for n in table.nodes if n.name in table.marked]
        if not names and table.selected is not None:
            names = [table.selected.name]
        return names

    def action_unit(self, verb: str) -> None:
        names = self.action_targets()
        if names:
            self.post_message(UnitRequested(names, verb))

    def action_sched(self, verb: str) -> None:
        names = self.action_targets()
        if names:
            self.post_message(SchedRequested(names, verb))

    def action_container(self, verb: str) -> None:
        names = self.action_targets()
        if len(names) == 1:
            self.post_message(ContainerRequested(names[0], verb))

    def action_done(self) -> None:
        self.query_one(FleetTable).marked.clear()
        self.update_view(self.fleet.clock())

    def action_cycle_sort(self) -> None:
        self.set_sort(SORT_KEYS[(SORT_KEYS.index(self.sort_key) + 1) % len(SORT_KEYS)])

    def action_toggle_compact(self) -> None:
        table = self.query_one(FleetTable)
        table.compact = not table.compact
        self._mode_chosen = True

    def action_chart(self) -> None:
        from .chart import ChartScreen

        self.app.push_screen(ChartScreen(self.fleet, history=self.actions.history))

    def action_stack(self) -> None:
        from .stack import StackScreen

        self.app.push_screen(StackScreen(self.fleet))

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
        self.post_message(OpenNode(event.name))


def _filter_problem(text: str) -> str | None:
    try:
        parse_filter(text)
    except FilterError as exc:
        return str(exc)
    return None
