"""The dashboard: transports fill the fleet state; a fixed tick redraws the screen from it.

``build_app`` is the one factory of the app for the command line, the tests and the screenshot
script; the fleet it shows is always made by ``dltui.wiring`` (``wiring.fleet_state``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from textual import on
from textual.app import SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.worker import WorkerState

from dltui.config import Config
from dltui.config import theme_dirs as default_theme_dirs
from dltui.core import status as st
from dltui.core.state import FleetState
from dltui.core.timeline import CRITICAL
from dltui.transport.base import Retunable, Sink, Transport

from . import commands, levels
from .action_flows import ActionFlows
from .container_flows import ContainerFlows
from .fleet_query import SORT_KEYS, FilterError
from .frame_stats import TimedApp
from .heap import HeapFreezer
from .messages import (
    ActionsReported,
    ContainerRequested,
    OpenNode,
    SchedRequested,
    SignalRequested,
    UnitRequested,
)
from .plain import escape
from .sched_flows import SchedFlows
from .screens import ChartScreen, FleetScreen, HelpScreen, NodeScreen, PromptScreen, StackScreen
from .services import DashboardServices
from .themes import DEFAULT_THEME, load_themes

# `+` / `-` step through these (btop's and nvtop's keys): a longer interval, a shorter one
INTERVAL_STEPS_S = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
TICK_S = 0.5  # redraw period: ages stay truthful to the second at half the cost of a frame per sample
TURN_S = 0.002  # a redraw yields to the event loop (keys) between its steps this often
SCHEDULER_TICK_S = 1.0  # how often the scheduler poller is asked which nodes are due (each every 30 s)
SCHEDULER_READS_PER_TURN = 8  # a fleet coming up together is read over seconds, not in one


class DltuiApp(TimedApp):
    CSS_PATH = "dltui.tcss"
    TITLE = "dltui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("colon", "command_line", "Command", priority=True),  # see PromptScreen.on_key
        Binding("t", "cycle_theme", "Theme"),
        Binding("plus", "interval(1)", "Slower", show=False),
        Binding("minus", "interval(-1)", "Faster", show=False),
    ]

    def __init__(
        self, fleet: FleetState, transports: Sequence[Transport], cfg: Config, theme_dirs: list[Path],
        services: DashboardServices | None = None,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.sink: Sink = fleet  # what transports write into: the fleet, or a recorder in front of it
        self.transports = transports
        self.cfg = cfg
        self.interval_s = cfg.interval_s  # what the transports were last asked for (+ / -)
        engine = fleet.engine
        self.thresholds = levels.NodeThresholds(engine.settings if engine is not None else None, cfg.rules)
        # what it acts through, built by dltui.wiring (None: it shows and never acts)
        self.services = services
        self.actions = ActionFlows(self, fleet, services)
        self.sched = SchedFlows(self, fleet, services, self.actions)
        self.actions.sched = self.sched
        self.containers = ContainerFlows(self, fleet, services, self.actions)
        self.actions.containers = self.containers
        self.heap = HeapFreezer()
        self._critical: set[tuple] = set()
        self._fleet_screen: FleetScreen | None = None
        themes, self.problems = load_themes(theme_dirs)
        for theme in themes:
            self.register_theme(theme)
        self.theme_names = [t.name for t in themes]
        if cfg.theme in self.available_themes:
            self.theme = cfg.theme
        else:
            self.problems.append(f"theme {cfg.theme!r} not found; using {DEFAULT_THEME}")
            if DEFAULT_THEME in self.available_themes:
                self.theme = DEFAULT_THEME

    crashed: str | None = None  # the error that ended the app, in one line

    def stopped_on_error(self, error: Exception) -> None:
        # It must not read as success, nor fill the terminal with a traceback of locals (node
        # data among them): one line for the command line to print, the traceback for the log.
        text = " ".join(f"{type(error).__name__}: {error}".split())
        self.crashed = "".join(c if c.isprintable() else "?" for c in text)[:300]
        logging.getLogger("dltui.ui").error("the dashboard stopped on an error", exc_info=error)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice is shown as written, never as markup (``markup`` is ignored): notices
        quote nodes (an action's result, a burn-in's reason) and the operator's own words."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def on_mount(self) -> None:
        for problem in self.problems:
            self.notify(problem, title="Theme", severity="warning", timeout=20)
        sink = self.heap.watching(self.sink)
        for transport in self.transports:
            self.run_worker(
                transport.run(sink), name=type(transport).__name__, group="transports", exit_on_error=False
            )
        if self.services is not None and self.services.scheduler is not None:
            self.set_interval(SCHEDULER_TICK_S, self._scheduler_turn)  # the SCHED column, every 30 s a node
        if len(self.fleet) == 1:
            name = next(iter(self.fleet)).name
            self.push_screen(NodeScreen(self.fleet, name, self.thresholds.of(name), actions=self.actions, root=True))
        else:
            self._fleet_screen = FleetScreen(self.fleet, self.thresholds, actions=self.actions)
            self.push_screen(self._fleet_screen)
        self.set_interval(TICK_S, self._tick_in_turns)

    def _live(self, node: str) -> bool:
        state = self.fleet.nodes.get(node)
        return state is not None and state.status == st.OK

    def _scheduler_turn(self) -> None:
        """Read the scheduler's view of the nodes that are due, in a short worker (one at a
        time): a slow controller delays the next turn, never the screen."""
        poller = self.services.scheduler if self.services is not None else None
        if poller is None or not poller.due_now(self._live):
            return
        if any(w.group == "scheduler" and not w.is_finished for w in self.workers):
            return
        self.run_worker(
            poller.turn(self.fleet.on_scheduler, self._live, SCHEDULER_READS_PER_TURN),
            group="scheduler",
            exit_on_error=False,
        )

    def tick(self) -> None:
        """Redraw the visible data screen from the fleet state, in one go (the tests and the
        headless benches; the timer runs ``_tick_in_turns``); nothing else runs here."""
        for _ in self._redraw():
            pass

    async def _tick_in_turns(self) -> None:
        """The redraw as the timer runs it: its steps in event-loop turns of some TURN_S, so a
        key that arrives meanwhile is answered between two of them rather than after the whole
        redraw (2048 nodes: 10 ms of rules and counting, twice that on a busy machine)."""
        turn_ends = time.perf_counter() + TURN_S
        for _ in self._redraw():
            if time.perf_counter() >= turn_ends:
                await asyncio.sleep(0)
                turn_ends = time.perf_counter() + TURN_S

    def _redraw(self) -> Iterator[None]:
        started, cpu_started = time.perf_counter(), time.thread_time()
        self.heap.tick()
        inventory = getattr(self.fleet.engine, "inventory", None)  # real nodes only
        if inventory is not None:
            inventory.flush_if_due()
        yield
        yield from self.fleet.tick_steps()
        yield
        view = self.data_screen
        if isinstance(view, FleetScreen):
            yield from view.update_steps(self.fleet.clock())
        elif view is not None:
            view.update_view(self.fleet.clock())
        if self.cfg.bell:
            self._ring_for_new_critical()
        if self.frame_stats is not None:
            self.call_after_refresh(self.frame_stats.frame_done, started, cpu_started)

    @property
    def data_screen(self) -> FleetScreen | NodeScreen | ChartScreen | StackScreen | None:
        """The fleet, node, chart or stack screen on top, or under a prompt or the help."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, (FleetScreen, NodeScreen, ChartScreen, StackScreen)):
                return screen
        return None

    def _ring_for_new_critical(self) -> None:
        critical = {(n.name, a.key) for n in self.fleet for a in n.alerts.values() if a.severity == CRITICAL}
        if critical - self._critical:
            self.bell()
        self._critical = critical

    def on_worker_state_changed(self, event) -> None:
        if event.state == WorkerState.ERROR:  # a transport bug, not a node's trouble: say it, keep the rest
            self.notify(
                f"{event.worker.name} stopped: {event.worker.error}",
                title="Transport failed",
                severity="error",
                timeout=60,
            )

    # -- what the screens ask for (dltui.ui.messages) -------------------------------------------

    @on(ActionsReported)
    def _actions_reported(self) -> None:
        view = self.data_screen
        if view is not None and hasattr(view, "action_done"):
            view.action_done()

    @on(OpenNode)
    def _open_node_asked(self, message: OpenNode) -> None:
        self.open_node(message.name)

    @on(UnitRequested)
    def _unit_requested(self, message: UnitRequested) -> None:
        self.actions.unit(message.nodes, message.verb)

    @on(SchedRequested)
    def _sched_requested(self, message: SchedRequested) -> None:
        self.sched.request(message.nodes, message.verb)

    @on(ContainerRequested)
    def _container_requested(self, message: ContainerRequested) -> None:
        try:
            self.containers.request(message.node, message.verb)
        except ValueError as exc:  # no container to act on: said, as for the : command
            self.notify(str(exc), severity="warning")

    @on(SignalRequested)
    def _signal_requested(self, message: SignalRequested) -> None:
        self.actions.signal(message.node, message.pid)

    def open_node(self, name: str) -> None:
        self.push_screen(NodeScreen(self.fleet, name, self.thresholds.of(name), actions=self.actions))

    def action_help_quit(self) -> None:
        """Ctrl-C quits, as in htop, btop and nvtop (Textual's default only says to press
        ctrl+q). With text selected, or in a prompt, Ctrl-C still copies: those bindings
        come first."""
        self.exit(0)

    def action_interval(self, step: int) -> None:
        """The next longer (``step`` 1) or shorter (-1) sampling interval, told to every
        transport that can change it while it runs; the screen shows it when the nodes take it."""
        retunable = [t for t in self.transports if isinstance(t, Retunable)]
        if not retunable:
            self.notify("this source's interval is fixed (a recording, or Prometheus)", severity="warning")
            return
        now = self.interval_s
        if step > 0:
            interval = next((s for s in INTERVAL_STEPS_S if s > now), INTERVAL_STEPS_S[-1])
        else:
            interval = next((s for s in reversed(INTERVAL_STEPS_S) if s < now), INTERVAL_STEPS_S[0])
        self.interval_s = interval
        for transport in retunable:
            transport.set_interval(interval)
        self.notify(f"sampling every {interval:g} s", timeout=3)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_cycle_theme(self) -> None:
        names = self.theme_names or [self.theme]
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # ':' is a priority binding (a burst after it is kept): in a prompt or a dialog it is a
        # character, not a new command line
        if action == "command_line" and isinstance(self.screen, ModalScreen):
            return False
        return True

    def action_command_line(self) -> None:
        self.push_screen(
            PromptScreen(":", placeholder="sort temp · filter util<5 · theme dltui-light · q"),
            lambda line: self.execute(line) if line else None,
        )

    def execute(self, line: str) -> None:
        """Run a ``:`` command; a mistake is told in a notification, never raised."""
        try:
            verb, arg = commands.parse(line)
            self._execute(verb, arg)
        except (commands.CommandError, FilterError, ValueError) as exc:
            self.notify(str(exc), title=f":{line.strip()}", severity="error")

    def _execute(self, verb: str, arg: str) -> None:
        _RUN[verb](self, arg)

    def _acted_on(self) -> str | None:
        """The node a one-node ``:`` command acts on: the node screen's, else the fleet's cursor."""
        view = self.data_screen
        if isinstance(view, NodeScreen):
            return view.node_name
        targets = self._fleet_screen.action_targets() if self._fleet_screen is not None else []
        return targets[0] if len(targets) == 1 else None

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Every key, the filter syntax and the commands", self.action_help)
        yield SystemCommand("Next theme", "Cycle through the dltui themes", self.action_cycle_theme)
        if self._fleet_screen is not None:
            fleet = self._fleet_screen
            for key in SORT_KEYS:
                yield SystemCommand(
                    f"Sort by {key}", f"Order the fleet by {key}", lambda k=key: self._execute("sort", k)
                )
            yield SystemCommand("Filter the fleet", "Show only nodes that match (e.g. temp>80)", fleet.action_filter)
            yield SystemCommand("Clear the filter", "Show every node", lambda: self._execute("filter", ""))
            yield SystemCommand("Compact view", "Rows or one character per GPU", lambda: self._execute("compact", ""))
        yield SystemCommand(
            "Software stack", "Kernel, driver, CUDA, held packages, upgrades, reboots per node",
            lambda: self._execute("stack", ""),
        )
        yield from action_commands(self)
        for node in self.fleet:
            yield SystemCommand(f"Open {escape(node.name)}", "Show this node", lambda n=node.name: self.open_node(n))

# -- the ``:`` commands, one function each (ui/commands.py names and parses them) -------------


def _quit(app: DltuiApp, arg: str) -> None:
    app.exit(0)


def _help(app: DltuiApp, arg: str) -> None:
    app.action_help()


def _theme(app: DltuiApp, arg: str) -> None:
    if arg not in app.available_themes:
        raise ValueError(f"themes: {', '.join(app.theme_names or app.available_themes)}")
    app.theme = arg


def _burnin(verb: str) -> Callable[[DltuiApp, str], None]:
    def run(app: DltuiApp, arg: str) -> None:
        from .burnin_launch import open_burnin

        shown = _shown_nodes(app.fleet, app._fleet_screen)
        open_burnin(app, app.services.burnin if app.services else None, shown, verb, arg)

    return run


def _container(app: DltuiApp, arg: str) -> None:
    node = app._acted_on()
    if node is None:
        raise ValueError(":container acts on one node: open it (or put the cursor on it)")
    action, _, name = arg.partition(" ")
    app.containers.request(node, action.strip(), name.strip())


def _scheduler(verb: str) -> Callable[[DltuiApp, str], None]:
    def run(app: DltuiApp, arg: str) -> None:
        view = app.data_screen
        if isinstance(view, NodeScreen):
            nodes = [view.node_name]
        elif app._fleet_screen is not None:
            nodes = app._fleet_screen.action_targets()
        else:
            nodes = [n.name for n in app.fleet]
        app.sched.request(nodes, verb, arg)

    return run


def _stack(app: DltuiApp, arg: str) -> None:
    app.push_screen(StackScreen(app.fleet))


def _node(app: DltuiApp, arg: str) -> None:
    if arg not in app.fleet.nodes:
        raise ValueError(f"no node named {arg!r}")
    app.open_node(arg)


def _on_fleet(verb: str, act: Callable[[FleetScreen, str], None]) -> Callable[[DltuiApp, str], None]:
    """A command of the fleet screen: from a node screen above it, back to the fleet first."""

    def run(app: DltuiApp, arg: str) -> None:
        fleet = app._fleet_screen
        if fleet is None:
            raise ValueError(f":{verb} needs the fleet screen (more than one node)")
        if app.screen is not fleet and isinstance(app.screen, NodeScreen):
            app.pop_screen()
        act(fleet, arg)

    return run


_RUN: dict[str, Callable[[DltuiApp, str], None]] = {
    "quit": _quit,
    "help": _help,
    "theme": _theme,
    "burnin": _burnin("burnin"),
    "attach": _burnin("attach"),
    "container": _container,
    **{verb: _scheduler(verb) for verb in ("drain", "resume", "cordon", "uncordon")},
    "stack": _stack,
    "node": _node,
    "sort": _on_fleet("sort", lambda fleet, arg: fleet.set_sort(arg)),
    "filter": _on_fleet("filter", lambda fleet, arg: fleet.set_filter(arg)),
    "compact": _on_fleet("compact", lambda fleet, arg: fleet.action_toggle_compact()),
}
assert set(_RUN) == set(commands.COMMANDS), "every : command has its function"


def action_commands(app: DltuiApp) -> Iterable[SystemCommand]:
    """The actions of the screen below the palette, where they can act (none under
    --read-only or on a recording)."""
    view = app.data_screen
    if not isinstance(view, (FleetScreen, NodeScreen)):
        return
    name = view.node_name if isinstance(view, NodeScreen) else None
    where = f"on {escape(name)}" if name else "on the picked nodes (space), or the one under the cursor"
    targets = view.action_targets() if isinstance(view, FleetScreen) else [view.node_name]
    for verb in ("restart", "stop", "start") if app.actions.unit_offered(targets) else ():
        yield SystemCommand(
            f"{verb.capitalize()} the training unit", f"systemctl {verb} {where}; confirmed first",
            lambda v=verb: view.action_unit(v),
        )
    if isinstance(view, NodeScreen) and view.offers("signal"):
        yield SystemCommand(
            "TERM a GPU process",
            f"kill -s TERM a GPU process {where}; confirmed first",
            view.action_signal,
        )
    if isinstance(view, NodeScreen) and view.offers("acknowledge"):
        yield SystemCommand(
            "Acknowledge event alerts", f"retire {escape(name or '')}'s XID, ECC and missing-GPU alerts",
            view.action_acknowledge,
        )


def _shown_nodes(fleet: FleetState, screen: FleetScreen | None) -> list[str]:
    """The nodes picked on the fleet screen (space); none picked: the ones it shows (its
    filter), else every node. What ``:burnin`` may act on (the SSH nodes among them)."""
    nodes = list(fleet)
    marked = _marked(screen)
    if marked:
        nodes = [n for n in nodes if n.name in marked]
    elif screen is not None and screen.filter is not None:
        now = fleet.clock()
        nodes = [n for n in nodes if screen.filter(n, now)]
    return [n.name for n in nodes]


def _marked(screen: FleetScreen | None) -> set[str]:
    if screen is None:
        return set()
    try:
        from .widgets import FleetTable

        return set(getattr(screen.query_one(FleetTable), "marked", ()) or ())
    except Exception:  # noqa: BLE001 - not composed yet: nothing picked
        return set()


def build_app(
    transports: Sequence[Transport],
    cfg: Config,
    *,
    fleet: FleetState,
    services: DashboardServices | None = None,
    theme_dirs: list[Path] | None = None,
) -> DltuiApp:
    """The app on ``fleet`` (built by ``dltui.wiring``, the one place a fleet is made: for the
    command line, and for the tests and screenshots through ``wiring.fleet_state``), with the
    ``transports`` that fill it (none for a fleet the caller fills itself) and the ``services``
    it acts through (``wiring.dashboard_services``; None: an app that never acts)."""
    return DltuiApp(
        fleet, transports, cfg, theme_dirs if theme_dirs is not None else default_theme_dirs(), services
    )


def run_dashboard(app: DltuiApp) -> int:
    """Run the app until the operator quits; SIGTERM and SIGHUP quit it as ``q`` does. A crash
    is exit 1 with one line on the terminal, the traceback in dltui's log."""
    from dltui import logs, stopping

    code = stopping.run(app.run_async(), on_stop=app.exit, signals=(signal.SIGTERM, signal.SIGHUP))
    if app.frame_stats is not None:
        app.frame_stats.write()
    if app.crashed is not None:
        print(f"dltui: the dashboard stopped on an error: {app.crashed} (details in {logs.where()})", file=sys.stderr)
        return 1
    return code or 0
