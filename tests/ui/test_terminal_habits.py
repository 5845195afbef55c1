"""The habits people bring from htop, btop, nvtop and nvitop: Ctrl-C quits, + / - change the
interval live, K signals the process picked in its list, a burst of keys is all kept, Quit and
Help stay in the footer at 80x24, cut text ends in "…", the help keeps hanging indents."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from textual import events
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

from dltui.core.state import FleetState
from dltui.ui import levels
from dltui.ui.screens import ConfirmScreen, FleetScreen, HelpScreen
from dltui.ui.widgets import FleetSummary, ProcessesPane, fleet_row

from .demo_fleet import demo_app, feed
from .test_unit_actions import _until, _with_actions

SIZE = (160, 48)
KEY_NAMES = {"/": "slash", ":": "colon", ">": "greater_than_sign", " ": "space", "\r": "enter"}


def burst(app, text: str) -> None:
    """Keys as a paste or a key macro delivers them: all queued before the first is handled."""
    for ch in text:
        app.post_message(events.Key(KEY_NAMES.get(ch, ch), None if ch == "\r" else ch))


async def test_ctrl_c_quits_as_q_does():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0 and not app.is_running


async def test_a_burst_of_keys_after_slash_all_reach_the_filter():
    """``/temp>80⏎`` in one burst: the filter holds the whole text (it was lost, and its
    letters read as fleet keys: t switched the theme)."""
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        theme = app.theme
        burst(app, "/temp>80\r")
        await _until(pilot, lambda: not app.screen.is_modal and app.screen.filter is not None)
        assert app.screen.filter.text == "temp>80"
        assert app.theme == theme


async def test_a_burst_of_keys_after_colon_runs_the_command():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        burst(app, ":sort temp\r")
        await _until(pilot, lambda: isinstance(app.screen, FleetScreen) and app.screen.sort_key == "temp")


async def test_plus_and_minus_change_the_interval_live_and_the_screen_shows_it():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        app.transports = [demo]  # demo_app's app streams nothing of its own
        await pilot.press("plus")
        assert demo.interval_s == 2.0  # the transport was told (the demo's probes take it at once)
        app.tick()
        await pilot.pause()
        assert {n.interval_s for n in app.fleet} == {2.0}
        assert "every 2 s" in app.screen.query_one(FleetSummary).render().plain
        assert any(e.message == "sampling every 2 s" for e in app.fleet.nodes["gpu01"].timeline)
        await pilot.press("minus", "minus")
        assert demo.interval_s == 0.5


async def test_k_signals_the_process_picked_in_the_processes_pane():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        _with_actions(app, demo)
        app.open_node("gpu01")
        await pilot.pause()
        pane = app.screen.query_one(ProcessesPane)
        assert len(pane.pids) >= 2
        pane.focus()
        await pilot.press("j")
        assert pane.selected_pid == pane.pids[1]
        await pilot.press("K")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        [(node, line)] = app.screen.lines
        assert node == "gpu01" and line.endswith(f"kill -s TERM {pane.pids[1]}")
        await pilot.press("n")
        # with the focus elsewhere, K asks for the PID as before
        await pilot.pause()
        app.screen.set_focus(None)
        await pilot.press("K")
        await pilot.pause()
        assert "PID" in app.screen.prefix


async def test_at_80x24_every_screens_footer_starts_with_quit_and_help():
    """Every screen with a footer (the fleet, a node, the charts of both, the stack, the
    burn-in): q and ? first, on screen (the stack's plain Footer once led with "esc Fleet")."""
    from dltui.burnin.remote import NodeRunView, RunCollector
    from dltui.ui.screens import ChartScreen, NodeScreen, StackScreen
    from dltui.ui.screens.burnin import BurnInScreen

    app, demo = demo_app()
    seen = []
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, demo)

        async def footer_leads_with_quit_and_help() -> None:
            await pilot.pause()
            footer = app.screen.query_one(Footer)
            keys = [k for k in footer.query(FooterKey) if k.key != "ctrl+p"]
            assert [k.action for k in keys[:2]] == ["quit", "help"], type(app.screen).__name__
            assert all(k.region.right <= 80 for k in keys[:2])
            seen.append(type(app.screen))

        await footer_leads_with_quit_and_help()  # the fleet
        await pilot.press("v")  # the fleet's chart
        await footer_leads_with_quit_and_help()
        await pilot.press("escape", "V")  # the stack
        await footer_leads_with_quit_and_help()
        await pilot.press("escape")
        app.open_node("gpu01")
        await footer_leads_with_quit_and_help()
        await pilot.press("v")  # the node's chart
        await footer_leads_with_quit_and_help()
        view = NodeRunView("gpu01", "r1", RunCollector())
        app.push_screen(BurnInScreen("r1", {"gpu01": view}, live_refresh=False))
        await footer_leads_with_quit_and_help()
    assert seen == [FleetScreen, ChartScreen, StackScreen, NodeScreen, ChartScreen, BurnInScreen]
    assert set(seen) == _full_screens()  # a new screen joins this walk


async def test_at_80x24_the_stack_view_scrolls_sideways_to_its_last_column():
    """Its columns are wider than 80: → brings UPGRADES and REBOOT on screen (they were cut)."""
    app, demo = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, demo)
        await pilot.press("V")
        await pilot.pause()
        assert "REBOOT" not in app.export_screenshot()  # the last column starts past column 80
        await pilot.press(*["right"] * 40)
        await pilot.pause()
        assert "REBOOT" in app.export_screenshot() and "UPGRADES" in app.export_screenshot()


def _full_screens() -> set[type]:
    """Every full (not modal) screen the dashboard defines."""
    import dltui.ui.screens as package

    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, Screen) and not issubclass(cls, ModalScreen) and cls.__module__ == module.__name__
        }
    return found


def test_only_the_dltui_footer_is_composed():
    """The order lives in one place, DltuiFooter: no screen composes Textual's plain Footer,
    whose order (the focused widget's keys, then the screen's, then q and ?) cut q and ? at 80
    columns."""
    import dltui.ui as ui

    root = Path(ui.__file__).parent
    named_footer = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "textual.widgets":
                if any(alias.name == "Footer" for alias in node.names):
                    named_footer.append(path.relative_to(root).as_posix())
    assert named_footer == ["widgets/footer.py"]


async def test_the_help_uses_the_width_it_has_and_keeps_hanging_indents():
    app, demo = demo_app()
    for width in (70, 160):
        async with app.run_test(size=(width, 48)) as pilot:
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            box = app.screen.query_one("VerticalScroll")
            assert box.region.width >= min(width - 4, 140)  # not a fixed 84 columns
            texts = [s for s in app.screen.query(Static) if not (s.has_class("key") or s.has_class("section"))]
            assert len({s.region.x for s in texts}) == 1  # every description in one column
            if width == 70:  # and a long one wraps within it (the hanging indent)
                assert max(s.region.height for s in texts) >= 2
        app, demo = demo_app()


def test_the_fleet_note_cuts_with_an_ellipsis():
    fleet = FleetState(["gpu01"])
    fleet.on_status("gpu01", "unreachable", "connection lost: server not responding to keepalive")
    layout = fleet_row.Layout(5, 8, "full", True, True, 20)
    text = fleet_row.row(fleet.nodes["gpu01"], 0.0, layout, levels.DEFAULT).plain
    assert text.rstrip().endswith("connection lost: se…")
