"""The unit pane, the confirm dialog and the actions on the demo fleet (simulated actions),
and their absence under --read-only."""

import time
from dataclasses import replace

from textual.widgets import Input, Label

from dltui.actions.policy import ActionSettings
from dltui.config import Config
from dltui.transport.command import TakesCommands
from dltui.ui.action_flows import ActionFlows
from dltui.ui.app import action_commands
from dltui.ui.screens import ConfirmScreen, FleetScreen, NodeScreen, PromptScreen
from dltui.ui.widgets import UnitPane
from dltui.wiring import dashboard_services

from .demo_fleet import demo_app, feed

FULL = (160, 48)


def _with_actions(app, demo, read_only=False):
    """The demo's simulated actions (the app in these tests runs no transport of its own),
    handed to the app and to the fleet and node screens it has already built (the app makes
    its actions once, before any screen, and hands them to each screen it builds)."""
    settings = ActionSettings(read_only=read_only, settle_s=0.3, poll_s=0.05)
    app.actions = ActionFlows(app, app.fleet, dashboard_services([demo], app.cfg, actions=settings))
    for screen in app.screen_stack:
        if isinstance(screen, (FleetScreen, NodeScreen)):
            screen.actions = app.actions


def test_unit_pane_of_the_crash_looping_node(snap_compare):
    """gpu08 drilled into: the unit_flapping alert; the Training unit pane with dl_train.service
    active/running, restarts 7, last exit 1 (exit-code), and the journal tail (simulated) ending
    in a CUDA illegal memory access; the GPU processes marked ◆ dl_train.service."""
    app, demo = demo_app()

    async def run_before(pilot):
        feed(app, demo)
        _with_actions(app, demo)
        app.open_node("gpu08")
        await _until(pilot, lambda: any(len(p.journal) >= 3 for p in app.screen.query(UnitPane)))

    assert snap_compare(app, terminal_size=FULL, run_before=run_before)


def test_confirm_dialog_of_a_fleet_restart(snap_compare):
    """Fleet screen, gpu01 and gpu02 picked (▶) with space, R: the dialog names both nodes with the
    exact line each will run (timeout -k 2 90 systemctl restart dl_train.service: demo nodes
    answer as root), marked simulated, y / n at the bottom."""
    app, demo = demo_app()

    async def run_before(pilot):
        feed(app, demo)
        _with_actions(app, demo)
        await pilot.pause()
        await pilot.press("space", "space", "R")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))  # not a fixed wait

    assert snap_compare(app, terminal_size=FULL, run_before=run_before)


async def test_restart_from_the_node_screen_is_confirmed_then_verified():
    app, demo = demo_app()
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        _with_actions(app, demo)
        app.open_node("gpu01")
        await pilot.pause()
        before = demo._nodes[0].unit.invocation
        await pilot.press("R")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.lines == [("gpu01", "timeout -k 2 90 systemctl restart dl_train.service")]
        await pilot.press("n")
        await pilot.pause()
        assert demo._nodes[0].unit.invocation == before  # cancelled: nothing sent
        await pilot.press("R")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await _until(pilot, lambda: "gpu01" in app.actions.results)
        result = app.actions.results["gpu01"]
        assert result.ok and "restarted" in result.message
        assert demo._nodes[0].unit.invocation != before
        assert app.actions.service.audit.entries()[-1]["simulated"] is True


async def test_a_node_with_two_units_is_asked_which_one_never_guessed():
    app, demo = demo_app()
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        _with_actions(app, demo)
        sample = app.fleet.nodes["gpu01"].sample
        train = sample.units[0]
        sample.units = [train, replace(train, name="dl_eval.service")]
        app.open_node("gpu01")
        await pilot.pause()
        await pilot.press("R")
        await _until(pilot, lambda: isinstance(app.screen, PromptScreen))
        field = app.screen.query_one(Input)
        assert field.value == "dl_train.service"  # the first offered, not taken
        assert "dl_train.service · dl_eval.service" in field.placeholder
        field.value = "sshd.service"  # not one of this node's units: refused in place
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        assert "gpu01 runs dl_train.service, dl_eval.service" in str(
            app.screen.query_one("#problem", Label).render()
        )
        field.value = "dl_eval.service"
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.lines == [("gpu01", "timeout -k 2 90 systemctl restart dl_eval.service")]
        await pilot.press("n")


async def test_read_only_hides_every_action():
    app, demo = demo_app()
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        _with_actions(app, demo, read_only=True)
        app.open_node("gpu01")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        assert screen.check_action("unit", ("restart",)) is False
        assert screen.check_action("signal", ()) is False
        assert not [c for c in action_commands(app)]
        await pilot.press("R")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        _with_actions(app, demo, read_only=False)
        assert screen.check_action("unit", ("restart",)) is True
        assert [c.title for c in action_commands(app)][0] == "Restart the training unit"


def _offered(app) -> set[str]:
    """The actions the footer shows and the palette lists on the screen on top."""
    keys = {b.binding.action for b in app.screen.active_bindings.values()}
    return {a for a in ("unit('restart')", "signal", "acknowledge") if a in keys} | {
        c.title for c in action_commands(app)
    }


async def test_actions_are_offered_only_where_they_can_act():
    """Footer and palette: restart / stop / start only where a unit is known, TERM only where
    there is a GPU process (or the unit's main process), acknowledge only where an event alert
    is open; each appears as soon as its object does."""
    from dltui.core.models import NodeEvent
    from dltui.node.probe.kernel_log import xid_event

    app, demo = demo_app()
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        _with_actions(app, demo)
        node = app.fleet.nodes["gpu01"]
        # gpu01 as a node without systemd (its unit unreadable), running nothing on its GPUs
        node.sample.units = [replace(u, error="no systemd on this node") for u in node.sample.units]
        for g in node.sample.gpus:
            g.processes = []
        node.version += 1
        app.open_node("gpu01")
        await pilot.pause()
        assert _offered(app) == set()
        await pilot.press("R", "K", "a")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)  # nothing asked, nothing confirmed
        feed(app, demo, steps=1)  # the unit and its GPU processes are reported again
        await pilot.pause()
        assert _offered(app) == {"unit('restart')", "signal", "Restart the training unit", "Stop the training unit",
                                 "Start the training unit", "TERM a GPU process"}
        app.fleet.on_status("gpu01", "unreachable", "lost the connection")  # nothing can act there
        app.tick()
        await pilot.pause()
        assert _offered(app) == set()
        app.fleet.on_status("gpu01", "ok")
        xid = xid_event(demo.clock(), "0000:18:00", 79, "fell off", 0, "b/1")
        app.fleet.on_event("gpu01", NodeEvent.from_dict(xid))
        app.tick()
        await pilot.pause()
        assert {"acknowledge", "Acknowledge event alerts"} <= _offered(app)
        await pilot.press("escape")
        await pilot.pause()
        gpu02 = app.fleet.nodes["gpu02"]
        gpu02.sample.units = []
        gpu02.version += 1
        await pilot.press("j")  # the cursor on gpu02, which has no unit
        app.tick()
        await pilot.pause()
        assert _offered(app) == set()
        await pilot.press("k")  # back on gpu01, which has one
        app.tick()
        await pilot.pause()
        assert "unit('restart')" in _offered(app)


async def test_the_unit_badge_filters_the_fleet():
    app, demo = demo_app()
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        await pilot.pause()
        app.execute("filter unit=flapping")
        await pilot.pause()
        table = app.screen.query_one("FleetTable")
        assert [n.name for n in table.nodes] == ["gpu08"]


class _UnsimulatedNodes(TakesCommands):  # its nodes take commands, as a transport says so
    """The demo's nodes answering as real ones would (their actions are not marked simulated,
    so the real audit log is used); records what reaches them."""

    simulated = False

    def __init__(self, demo):
        self.demo = demo
        self.names = demo.names
        self.received: list[list[str]] = []

    async def run_command(self, node, argv, timeout_s):
        self.received.append(list(argv))
        return await self.demo.run_command(node, argv, timeout_s)


async def test_an_unwritable_audit_log_is_a_plain_refusal_on_the_dashboard(tmp_path, monkeypatch):
    """The audit log cannot be written (a folder where the file goes: root ignores modes), R, y:
    the node says refused, why, and that nothing was sent; no "Transport failed" notice; the
    unit was not restarted."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "dltui" / "audit.jsonl").mkdir(parents=True)
    app, demo = demo_app()
    nodes = _UnsimulatedNodes(demo)
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        settings = ActionSettings(settle_s=0.3, poll_s=0.05)
        app.actions = ActionFlows(app, app.fleet, dashboard_services([nodes], app.cfg, actions=settings))
        app.open_node("gpu01")
        await pilot.pause()
        before = demo._nodes[0].unit.invocation
        await pilot.press("R")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await _until(pilot, lambda: "gpu01" in app.actions.results)
        result = app.actions.results["gpu01"]
        assert result.outcome == "refused" and "cannot write the audit log" in result.message
        assert "nothing was sent" in result.message
        assert demo._nodes[0].unit.invocation == before
        assert not [a for a in nodes.received if "restart" in a]
        titles = [n.title for n in app._notifications]
        assert "gpu01: restart dl_train.service: refused" in titles
        assert "Transport failed" not in titles


async def _until(pilot, cond, limit_s: float = 30.0):
    """Until ``cond()`` holds; the limit only stops a broken test from hanging (a loaded
    machine takes what it takes)."""
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition never held")
        await pilot.pause(0.05)


def test_config_read_only_reaches_the_app():
    app, _ = demo_app()
    assert app.actions.available() is False  # no transport that can act
    assert ActionSettings.from_config(Config(read_only=True)).read_only


async def test_a_browser_tabs_actions_are_audited_with_its_address(monkeypatch):
    """dltui serve starts each tab's dashboard with the browser's address in DLTUI_ACTION_ORIGIN;
    every audit record of that dashboard carries it."""
    from dltui.ui.serve import ORIGIN_ENV

    monkeypatch.setenv(ORIGIN_ENV, "browser 10.1.2.3")
    app, demo = demo_app()
    assert dashboard_services([demo], app.cfg).actions.settings.origin == "browser 10.1.2.3"
    async with app.run_test(size=FULL) as pilot:
        feed(app, demo)
        settings = ActionSettings(settle_s=0.3, poll_s=0.05)  # the origin is wiring's to add
        app.actions = ActionFlows(app, app.fleet, dashboard_services([demo], app.cfg, actions=settings))
        app.open_node("gpu01")
        await pilot.pause()
        await pilot.press("R")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await _until(pilot, lambda: "gpu01" in app.actions.results)
        entry = app.actions.service.audit.entries()[-1]
        assert entry["action"].startswith("restart") and entry["origin"] == "browser 10.1.2.3"
