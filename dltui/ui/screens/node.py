"""The node screen: a pane per GPU, the host panes, GPU processes, alerts and the timeline."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ItemGrid, Vertical, VerticalScroll
from textual.screen import Screen
from textual.scrollbar import ScrollBarRender
from textual.widget import Widget

from dltui.core.state import FleetState, NodeState

from .. import levels
from ..messages import (
    ActionOffers,
    ContainerRequested,
    SchedRequested,
    SignalRequested,
    UnitRequested,
)
from ..widgets import (
    AlertsPane,
    ContainerPane,
    CpuPane,
    DiskPane,
    GpuPane,
    MemoryPane,
    NetworkPane,
    NodeHeader,
    NoGpuPane,
    Pane,
    PressurePane,
    ProcessesPane,
    TimelinePane,
    UnitPane,
)
from ..widgets.footer import DltuiFooter
from .action_keys import ACTION_KEYS

if TYPE_CHECKING:
    from dltui.actions.journal import JournalFollower

NARROW_BELOW = 110  # columns: under this the host panes go under the GPUs
# columns: from here the training container pane sits beside the unit pane (its twin), each
# half wide enough for a journal or log line; under it, below
SERVICES_BESIDE_FROM = 140
GPU_PANE_MIN_W = 46
JOURNAL_EVERY_S = 2.0  # the unit's journal is read this often while the node screen is open



class WholeCellScrollBar(ScrollBarRender):
    """A thumb of whole cells: Textual's eighth-block ends (▆) beside a pane's border read as
    a sparkline drawn past it."""

    VERTICAL_BARS = [" "] * len(ScrollBarRender.VERTICAL_BARS)


class NodeScreen(Screen):
    AUTO_FOCUS = ""  # no pane is singled out until the operator tabs to one
    BINDINGS = [
        Binding("escape", "back", "Fleet"),
        Binding("a", "acknowledge", "Ack"),
        *ACTION_KEYS,  # unit, training container, scheduler: the fleet screen's too
        Binding("K", "signal", "TERM process"),
        Binding("v", "chart", "Charts"),
        Binding("H", "history", "Week"),
        Binding("down,j", "scroll(1)", "Scroll down", show=False),
        Binding("up,k", "scroll(-1)", "Scroll up", show=False),
        Binding("pagedown", "scroll(20)", "Page down", show=False),
        Binding("pageup", "scroll(-20)", "Page up", show=False),
    ]
    DEFAULT_CSS = """
    NodeScreen #node-body { scrollbar-size-vertical: 1; }
    NodeScreen #node-panes { height: auto; }
    NodeScreen #gpus { width: 1fr; height: auto; }
    NodeScreen #host { width: 62; height: auto; }
    NodeScreen #node-bottom { height: auto; }
    NodeScreen #node-services { height: auto; }
    NodeScreen #node-services > Pane { width: 1fr; }
    NodeScreen.-services-stacked #node-services { layout: vertical; }
    NodeScreen #node-bottom > Pane { width: 1fr; }
    NodeScreen.-narrow #node-panes { layout: vertical; }
    NodeScreen.-narrow #host { width: 1fr; }
    NodeScreen.-narrow #node-bottom { layout: vertical; }
    NodeScreen.-no-gpus #node-panes { layout: vertical; }
    NodeScreen.-no-gpus #host { width: 1fr; layout: grid; grid-size: 2; grid-rows: auto; }
    NodeScreen.-narrow.-no-gpus #host { grid-size: 1; }
    """

    def __init__(
        self,
        fleet: FleetState,
        name: str,
        thresholds: levels.Thresholds,
        *,
        actions: ActionOffers,
        root: bool = False,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.node_name = name
        self.thresholds = thresholds
        self.actions = actions
        self.root = root  # the only node: there is no fleet to go back to
        self._version = -1
        self._gpu_indexes: list[int] | None = None
        self._panes: list[Pane] | None = None  # every pane on the screen, found again when GPUs change
        self._ready = False
        self._journal: JournalFollower | None = None  # JournalFollower of the unit shown, while this screen is open
        self._offered: tuple[bool, ...] | None = None  # the offers the footer shows (check_action)

    def compose(self) -> ComposeResult:
        yield NodeHeader()
        with VerticalScroll(id="node-body", can_focus=False):
            yield AlertsPane()
            with Horizontal(id="node-services"):  # the training unit and its container, side by side
                yield UnitPane()
                yield ContainerPane()
            with Horizontal(id="node-panes"):
                yield ItemGrid(id="gpus", min_column_width=GPU_PANE_MIN_W)
                with Vertical(id="host"):
                    yield CpuPane()
                    yield MemoryPane(thresholds=self.thresholds)
                    yield PressurePane(thresholds=self.thresholds)
                    yield DiskPane(thresholds=self.thresholds)
                    yield NetworkPane()
            with Horizontal(id="node-bottom"):
                yield ProcessesPane()
                yield TimelinePane()
        yield DltuiFooter()

    @property
    def node(self) -> NodeState:
        return self.fleet.node(self.node_name)

    def on_mount(self) -> None:
        body = self.query_one("#node-body", VerticalScroll)
        body.vertical_scrollbar.renderer = WholeCellScrollBar  # type: ignore[misc]  # per bar, on purpose
        self._ready = True
        self.update_view(self.fleet.clock())
        self.set_interval(JOURNAL_EVERY_S, self._follow_journal)
        self._follow_journal()

    # -- the unit's journal, followed while this screen is open -----------------------------

    def _follow_journal(self) -> None:
        flows = self.actions
        runner = flows.runner  # None: a dashboard that acts on nothing
        if runner is None or not runner.can_run(self.node_name) or not self.display:
            return
        self._follow_container_logs()
        unit = flows.unit_of(self.node_name)
        if unit is None:
            return
        if self._journal is None or self._journal.unit != unit:
            from dltui.actions.journal import JournalFollower

            self._journal = JournalFollower(runner, self.node_name, unit)
        if any(w.group == "journal" and not w.is_finished for w in self.workers):
            return  # the last read is still running (a slow node): let it finish
        self.run_worker(self._poll_journal(self._journal), group="journal", exit_on_error=False)

    def _follow_container_logs(self) -> None:
        """``docker logs --tail`` of the training container, while this screen is open."""
        flows = self.actions.containers
        if flows is None or not flows.offered(self.node_name):
            return
        if any(w.group == "container-logs" and not w.is_finished for w in self.workers):
            return
        self.run_worker(self._poll_container_logs(), group="container-logs", exit_on_error=False)

    async def _poll_container_logs(self) -> None:
        flows = self.actions.containers
        if flows is None:
            return
        lines, problem = await flows.logs(self.node_name)
        pane = self.query_one(ContainerPane)
        if lines != pane.logs or problem != pane.logs_problem:
            pane.logs, pane.logs_problem = lines, problem
            pane.redraw()

    async def _poll_journal(self, follower) -> None:
        new = await follower.poll()
        pane = self.query_one(UnitPane)
        if new or pane.journal_problem != follower.problem:
            pane.journal = list(follower.lines)
            pane.journal_problem = follower.problem
            pane.redraw()

    def action_done(self) -> None:
        result = self.actions.results.get(self.node_name)
        if result is not None:  # said in the pane of what it acted on: the container's, else the unit's
            pane: UnitPane | ContainerPane = (
                self.query_one(ContainerPane) if " container " in result.action else self.query_one(UnitPane)
            )
            pane.last_action = f"{result.action}: {result.outcome}: {result.message}"
            pane.redraw()
        self._follow_journal()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW_BELOW, "-narrow")
        self.set_class(self.size.width < SERVICES_BESIDE_FROM, "-services-stacked")

    def update_view(self, now: float) -> None:
        # Pushed but not composed yet (on_mount draws it), or being torn down at exit while
        # the tick timer still fires: nothing to draw into.
        if not self._ready or not self.display:
            return
        node = self.node
        self.query_one(NodeHeader).show(node, now, self.thresholds)
        if node.version == self._version:
            return
        self._version = node.version
        self._sync_gpu_panes(node)
        if self._panes is None:
            self._panes = list(self.query(Pane))  # a query a second was a tenth of a local frame
        for pane in self._panes:
            pane.show(node, now)
        offered = (
            *(self.offers(action) for action in ("unit", "signal", "acknowledge", "container")),
            *(self.actions.sched_offered([self.node_name], verb) for verb in ("drain", "cordon")),
        )
        if offered != self._offered:  # a unit, a process, an alert, a container or a scheduler came or went
            self._offered = offered
            self.refresh_bindings()

    def _sync_gpu_panes(self, node: NodeState) -> None:
        """One pane per GPU the node reports (a note where it has none)."""
        if node.sample is not None:
            indexes = [g.index for g in node.sample.gpus]
        elif node.facts is not None:
            indexes = [g.index for g in node.facts.gpus]
        else:
            indexes = []
        if indexes == self._gpu_indexes:
            return
        self._gpu_indexes = indexes
        grid = self.query_one("#gpus", ItemGrid)
        grid.remove_children()
        panes: list[Widget] = [GpuPane(i, thresholds=self.thresholds) for i in indexes]
        panes = panes or [NoGpuPane()]
        grid.mount_all(panes)
        # the panes shown from now on: the removed ones are still the grid's until they go
        self._panes = [p for p in self.query(Pane) if p.parent is not grid] + cast("list[Pane]", panes)
        self.set_class(not indexes, "-no-gpus")  # the host panes take the room

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("unit", "signal", "acknowledge"):
            return self.offers(action)
        if action == "history":
            return self.actions.history is not None
        if action == "sched":
            return self.actions.sched_offered([self.node_name], *parameters)
        if action == "container":
            return self.offers(action)
        return not (action == "back" and self.root)  # the only node: no fleet to go back to

    def offers(self, action: str) -> bool:
        """Offered means possible: a unit to act on, a process to signal (never under
        --read-only or on a recording), an alert only the operator retires."""
        if action == "acknowledge":
            engine = self.fleet.engine
            rules = engine.acknowledgeable() if engine is not None else ()
            return any(rule in rules for rule, _ in self.node.alerts)
        if action == "unit":
            return self.actions.unit_offered([self.node_name])
        if action == "container":  # a training container reported, actions allowed
            containers = self.actions.containers
            return containers is not None and containers.offered(self.node_name)
        return self.actions.signal_offered(self.node_name)

    def action_unit(self, verb: str) -> None:
        self.post_message(UnitRequested([self.node_name], verb))

    def action_sched(self, verb: str) -> None:
        self.post_message(SchedRequested([self.node_name], verb))

    def action_container(self, verb: str) -> None:
        self.post_message(ContainerRequested(self.node_name, verb))

    def action_signal(self) -> None:
        """TERM the process picked in the processes pane; with none picked, ask its PID."""
        pid = self.query_one(ProcessesPane).selected_pid
        self.post_message(SignalRequested(self.node_name, pid))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_acknowledge(self) -> None:
        """Retire this node's alerts that record an event (the rules say which: XIDs,
        uncorrectable ECC, GPUs gone): only the operator (or a new boot, or a GPU reset) can
        say it has been dealt with. A condition that still holds raises its alert again."""
        engine = self.fleet.engine
        node = self.node
        rules = engine.acknowledgeable() if engine is not None else ()
        keys = [key for key in node.alerts if key[0] in rules]
        if engine is None or not keys:
            self.notify(f"nothing to acknowledge: no open {', '.join(rules) or 'event'} alert")
            return
        now = self.fleet.clock()
        for rule, gpu in keys:
            engine.acknowledge(node, rule, gpu, now)
        self.notify(f"acknowledged {len(keys)} alert{'s' if len(keys) != 1 else ''} on {node.name}")
        self.update_view(now)

    def action_chart(self) -> None:
        """The chart view of the GPU pane in focus (the first GPU otherwise)."""
        from .chart import ChartScreen

        focused = self.focused
        gpu = focused.index if isinstance(focused, GpuPane) else (self._gpu_indexes or [0])[0]
        self.app.push_screen(ChartScreen(self.fleet, self.node_name, gpu, history=self.actions.history))

    def action_history(self) -> None:
        """Every GPU's temperature over the last 7 days: the past from Prometheus (``[prometheus]
        url``, ``--history-from``) joined to this run's history, past alerts as the red band."""
        from dltui.history import HISTORY_WINDOWS_S

        from .chart import ChartScreen

        history = self.actions.history
        self.app.push_screen(
            ChartScreen(
                self.fleet, self.node_name, (self._gpu_indexes or [0])[0], history=history,
                window_s=HISTORY_WINDOWS_S[-1], overlay=True,
            )
        )

    def action_scroll(self, lines: int) -> None:
        self.query_one("#node-body", VerticalScroll).scroll_relative(y=lines, animate=False)
