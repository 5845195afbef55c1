"""The dashboard driven with keys and the mouse (Textual's Pilot) on the seeded demo fleet."""

import asyncio
import dataclasses

from textual.widgets import Input, Label

from dltui.config import Config
from dltui.core.series import Metric, SeriesKey
from dltui.core.state import FleetState
from dltui.transport.demo import DemoTransport
from dltui.ui.app import DltuiApp, build_app
from dltui.ui.screens import FleetScreen, HelpScreen, NodeScreen, PromptScreen
from dltui.ui.screens.help import help_content
from dltui.ui.themes import PACKAGED_DIR
from dltui.ui.widgets import FleetTable, GpuPane, NodeHeader
from dltui.wiring import fleet_state

from .demo_fleet import demo_app, feed

SIZE = (160, 48)


def listed(app) -> list[str]:
    return [n.name for n in app.data_screen.query_one(FleetTable).nodes]


def record_notices(app) -> list[str]:
    """What the app tells the operator in notifications, from now on."""
    seen: list[str] = []
    app.notify = lambda message, **kwargs: seen.append(message)
    return seen


async def test_enter_opens_the_node_and_escape_returns():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("j", "enter")
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu02"
        assert "gpu02" in str(app.screen.query_one(NodeHeader).render())
        assert len(app.screen.query(GpuPane)) == 8
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen)
        assert app.screen.query_one(FleetTable).selected.name == "gpu02"


async def test_a_double_click_on_a_row_opens_that_node():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.pause()
        await pilot.double_click(FleetTable, offset=(3, 3))  # line 0 is the header: row 3 is gpu03
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu03"


async def test_s_cycles_the_sort_and_the_command_line_picks_one():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("s")
        assert app.screen.sort_key == "status" and listed(app)[0] == "gpu04"
        await pilot.press("colon", *"sort temp", "enter")
        assert app.screen.sort_key == "temp" and listed(app)[0] == "gpu02"
        await pilot.press("colon", *"sort util", "enter")
        assert listed(app)[:2] == ["gpu06", "gpu03"]


async def test_the_filter_applies_as_typed_enter_keeps_it_escape_clears_it():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("slash", *"temp>85")
        assert listed(app) == ["gpu02"]
        await pilot.press("enter")
        assert isinstance(app.screen, FleetScreen) and listed(app) == ["gpu02"]
        await pilot.press("escape")
        assert len(listed(app)) == 12


async def test_a_filter_that_cannot_be_understood_is_explained_and_not_applied():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("slash", *"tmp>80")
        problem = app.screen.query_one("#problem", Label)
        assert "unknown key 'tmp'" in str(problem.render())
        await pilot.press("enter")
        assert isinstance(app.screen, PromptScreen)  # still open: fix it or escape
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen) and len(listed(app)) == 12


async def test_a_prompt_shows_its_whole_question():
    """The burn-in's "burn-in? " and "stop? " questions were cut to their first letter."""
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        for prefix in (":", "burn-in? ", "stop? "):
            app.push_screen(PromptScreen(prefix, placeholder="type yes"))
            await pilot.pause()
            label = app.screen.query_one("#prefix", Label)
            assert label.size.width >= len(prefix), (prefix, label.size)
            await pilot.press("escape")


async def test_t_cycles_the_themes_and_the_command_line_sets_one():
    app, demo = demo_app()
    notices = record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        assert app.theme == "dltui-dark"
        await pilot.press("t")
        assert app.theme == "dltui-high-contrast"
        await pilot.press("t")
        assert app.theme == "dltui-light"
        await pilot.press("colon", *"theme dltui-dark", "enter")
        assert app.theme == "dltui-dark"
        await pilot.press("colon", *"theme nope", "enter")
        assert app.theme == "dltui-dark"
        assert "themes: dltui-dark, dltui-high-contrast, dltui-light" in notices


async def test_q_quits_and_so_does_colon_q():
    for keys in (["q"], ["colon", "q", "enter"]):
        app, demo = demo_app()
        async with app.run_test(size=SIZE) as pilot:
            feed(app, demo)
            await pilot.press(*keys)
            await pilot.pause()
            assert app.return_code == 0


async def test_help_opens_and_closes():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen)


def test_the_help_names_every_key_bound_anywhere():
    shown_as = {
        "question_mark": "?",
        "slash": "/",
        "colon": ":",
        "pagedown": "pgdn",
        "pageup": "pgup",
        "down": "↓",
        "up": "↑",
        "left": "←",
        "right": "→",
        "plus": "+",
        "minus": "-",
    }
    text = help_content().plain
    keys = {
        key
        for cls in (DltuiApp, FleetScreen, NodeScreen, FleetTable)
        for binding in cls.BINDINGS
        for key in binding.key.split(",")
    }
    missing = [k for k in keys if shown_as.get(k, k) not in text]
    assert missing == []


async def test_the_command_palette_lists_sorts_filters_themes_and_nodes():
    app, demo = demo_app()
    async with app.run_test(size=SIZE):
        feed(app, demo)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "Sort by temp",
            "Sort by alerts",
            "Filter the fleet",
            "Compact view",
            "Theme",
            "Help",
            "Open gpu02",
            "Quit",
        ):
            assert title in titles


async def test_a_tick_without_new_data_repaints_no_row():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        repainted = []
        table.refresh = lambda *regions, **kw: repainted.append(regions)
        app.tick()
        assert repainted == []
        demo.step_into(app.fleet)  # one new sample per node: every row changes
        app.tick()
        assert len(repainted) == 12


async def test_the_compact_view_fits_256_nodes_and_c_toggles_it():
    app, demo = demo_app(nodes=256)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=5)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        assert table.compact and table.per_line == 6
        assert table.virtual_size.height - 1 <= table.scrollable_content_region.height  # no scrolling
        await pilot.press("l", "l", "j")
        assert table.selected.name == "gpu009"
        await pilot.press("c")
        assert not table.compact


async def test_the_bell_rings_once_when_a_critical_alert_opens():
    app, demo = demo_app()
    app.cfg = dataclasses.replace(app.cfg, bell=True)
    rings = []
    app.bell = lambda: rings.append(1)
    async with app.run_test(size=SIZE):
        feed(app, demo)  # gpu02 GPU3 goes critical in these three minutes
        app.tick()
        assert rings == [1]


async def test_a_broken_or_unknown_theme_is_reported_and_the_default_used(tmp_path):
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = "#zzz"\n')
    (tmp_path / "typo.toml").write_text('name = "typo"\nprimry = "#ffffff"\n')
    (tmp_path / "number.toml").write_text("primary = 5\n")
    demo = DemoTransport(nodes=2)
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    app = build_app([], Config(theme="solarized-ish"), fleet=fleet, theme_dirs=[PACKAGED_DIR, tmp_path])
    notices = record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "dltui-dark"
        assert notices == [
            "broken.toml: failed to parse '#zzz' as a color",
            "number.toml: primary = 5: expected a string (in quotes)",
            "typo.toml: unknown key 'primry' (did you mean 'primary'?)",
            "theme 'solarized-ish' not found; using dltui-dark",
        ]


async def test_transports_run_as_workers_and_fill_the_screen():
    demo = DemoTransport(nodes=3, interval_s=0.05)
    app = build_app([demo], Config(), fleet=fleet_state(Config(), demo.names), theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=SIZE) as pilot:
        deadline = asyncio.get_running_loop().time() + 30  # only stops a broken test hanging
        while not all(n.sample is not None for n in app.fleet):  # samples to look at
            assert asyncio.get_running_loop().time() < deadline, "no sample from every node"
            await asyncio.sleep(0.05)
        app.tick()
        await pilot.pause()
        assert listed(app) == ["gpu01", "gpu02", "gpu03"]
        assert all(n.history.get(SeriesKey(Metric.GPU_UTILIZATION_PERCENT, 0)) for n in app.fleet)


async def test_a_failing_transport_is_reported_and_the_app_keeps_running():
    class Broken:
        names = ["gpu01", "gpu02"]

        async def run(self, sink):
            raise RuntimeError("bug in a transport")

    app = build_app([Broken()], Config(), fleet=fleet_state(Config(), Broken.names), theme_dirs=[PACKAGED_DIR])
    notices = record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert notices == ["Broken stopped: bug in a transport"]
        assert isinstance(app.screen, FleetScreen)


async def test_input_keys_do_not_trigger_app_keys():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("colon", "t", "q")
        assert app.screen.query_one(Input).value == "tq" and app.theme == "dltui-dark" and app.return_code is None


async def test_tab_walks_the_panes_and_j_k_scroll_the_node_screen():
    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("j", "enter")
        await pilot.pause()
        assert app.focused is None  # no pane singled out until asked
        await pilot.press("tab")
        assert app.focused.id == "alerts"
        await pilot.press("tab")
        assert app.focused.id == "unit"  # the training unit, under the alerts
        await pilot.press("tab")
        assert app.focused.id == "gpu-0"
        await pilot.press("shift+tab", "shift+tab", "shift+tab")
        assert app.focused.id == "timeline"  # wraps around to the last pane
        body = app.screen.query_one("#node-body")
        body.scroll_home(animate=False)
        await pilot.press("j", "j", "j")
        assert body.scroll_y == 3
        await pilot.press("k")
        assert body.scroll_y == 2


async def test_a_acknowledges_the_nodes_xid_alert_and_says_so_in_the_timeline():
    from dltui.core.models import NodeEvent
    from dltui.core.rules import build_engine
    from dltui.node.schema import xid_event

    fleet = fleet_state(Config(), ["gpu01"], clock=lambda: 1_700_000_100.0)
    fleet.on_event("gpu01", NodeEvent.from_dict(xid_event(1_700_000_000.0, "0000:3b:00", 79, "fell off", 3, "b/1")))
    node = fleet.nodes["gpu01"]
    assert ("xid", 3) in node.alerts
    app = build_app([], Config(), fleet=fleet, theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, NodeScreen)
        await pilot.press("a")
        await pilot.pause()
        assert ("xid", 3) not in node.alerts
        assert "acknowledged" in node.timeline[-1].message
        await pilot.press("a")  # nothing left: a plain notice, no error
        await pilot.pause()


async def test_node_scrollbar_has_no_block_glyphs_beside_the_panes():
    """gpu02 at 160x48 scrolls; its scrollbar thumb is whole cells, so nothing that looks like a
    sparkline (▁…▇) is drawn past the Disks pane's right border."""
    from textual.containers import VerticalScroll

    from dltui.ui.spark import BARS

    app, demo = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("j", "enter")
        await pilot.pause()
        body = app.screen.query_one("#node-body", VerticalScroll)
        assert body.max_scroll_y > 0 and body.show_vertical_scrollbar
        bar = body.vertical_scrollbar
        for position in range(0, int(body.max_scroll_y) + 1):
            segments = bar.renderer.render_bar(
                size=bar.size.height,
                virtual_size=body.virtual_size.height,
                window_size=body.size.height,
                position=position,
            )
            assert not set("".join(s.text for s in segments.segments)) & set(BARS)


async def test_the_panes_span_labels_claim_only_the_history_collected():
    """40 samples at 1 s: every sparkline's border says "last 40s", not the minute or more its
    width has room for."""
    from dltui.ui.widgets import Pane

    app, demo = demo_app(nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=40)
        await pilot.press("enter")
        await pilot.pause()
        labels = [str(p.border_subtitle) for p in app.screen.query(Pane) if "last " in str(p.border_subtitle)]
        assert len(labels) >= 6  # the GPU panes, CPU, memory, pressure, disks, network
        assert {label.rpartition("last ")[2] for label in labels} == {"40s"}
