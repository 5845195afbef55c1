"""Node text on screen is text: markup in a GPU model, a process name, a node name, a journal
line or a notice is shown as written, never parsed (no MarkupError, no live [@click=…] link)."""

import json

from textual.content import Content
from textual.widgets._toast import Toast

from dltui.config import Config
from dltui.core.state import FleetState
from dltui.core.text import clean
from dltui.node.schema import PROTOCOL
from dltui.node.wire import Encoder
from dltui.transport.command import CommandResult, TakesCommands
from dltui.transport.protocol import ProbeReader
from dltui.ui.app import build_app
from dltui.ui.plain import escape
from dltui.ui.screens import NodeScreen
from dltui.ui.themes import PACKAGED_DIR
from dltui.ui.widgets import GpuPane, NodeHeader, ProcessesPane, UnitPane
from dltui.wiring import dashboard_services, fleet_state
from tests.hostile import HOSTILE, unsafe_strings
from tests.unit.test_wire import collected

MARKUP = "[@click=app.quit]x[/]"  # what survives the sanitiser: plain text, never a tag
NODE = "rack[/]7"  # a node name a Prometheus label can carry


class JournalNode(TakesCommands):  # its nodes take commands, as a transport says so
    """The node's side of the journal read, answered with one hostile line (as journalctl -o
    json prints a line holding control characters: its bytes as an array)."""

    names = [NODE]

    async def run(self, sink):  # a transport that streams nothing: the test feeds the state
        return None

    async def run_command(self, node, argv, timeout_s):
        entry = {"MESSAGE": list(HOSTILE.encode("utf-8", "surrogatepass")), "__CURSOR": "c1",
                 "__REALTIME_TIMESTAMP": "1767258000000000"}
        return CommandResult(tuple(argv), 0, json.dumps(entry) + "\n")


def hostile_fleet() -> FleetState:
    cfg = Config()
    fleet = fleet_state(cfg, [NODE], clock=lambda: 3.0)
    reader = ProbeReader(NODE, fleet)
    reader.feed(json.dumps({"type": "hello", "protocol": PROTOCOL, "time": 1.0, "interval_s": 1.0,
                            "facts": {"hostname": HOSTILE, "kernel": HOSTILE, "gpus": [{"index": 0, "name": HOSTILE}]}}))
    sample = collected(2.0)
    sample["gpus"][0].update(name=HOSTILE, processes=[{"pid": 4242, "name": HOSTILE, "gpu_memory_mib": 512.0}])
    sample["units"] = [{"name": "dl_train.service", "load_state": "loaded", "active_state": "active",
                        "sub_state": HOSTILE, "result": "success"}]
    reader.feed(json.dumps(Encoder().encode(sample)))
    reader.feed(json.dumps({"type": "event", "time": 2.0, "kind": "xid", "message": HOSTILE}))
    return fleet


def links_in(content: Content) -> list[str]:
    return [str(span.style) for span in content.spans if "@click" in str(span.style) or "link" in str(span.style)]


async def test_a_hostile_node_opens_and_shows_its_text_as_written():
    fleet = hostile_fleet()
    node = JournalNode()
    services = dashboard_services([node], Config())  # its journal is read through the actions' runner
    app = build_app([node], Config(), fleet=fleet, services=services, theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=(160, 48)) as pilot:
        app.tick()
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)  # one node: its screen opens at once
        await app.workers.wait_for_complete()
        app.tick()
        await pilot.pause()
        gpu = app.screen.query_one(GpuPane)
        title = gpu._border_title
        assert MARKUP in title.plain and not links_in(title)
        for widget in (app.screen.query_one(NodeHeader), app.screen.query_one(ProcessesPane),
                       app.screen.query_one(UnitPane)):
            drawn = widget.render()
            assert clean(HOSTILE) in drawn.plain, type(widget).__name__
            assert not links_in(drawn) and unsafe_strings(drawn.plain.split("\n")) == []
        journal = app.screen.query_one(UnitPane).journal  # the surrogate's bytes read back as U+FFFD
        assert journal[-1].startswith("09:00:00 python3 ␛]0;PWNED␇␛[2J" + MARKUP) and unsafe_strings(journal) == []
        assert journal[-1] in app.screen.query_one(UnitPane).render().plain


async def test_notices_show_brackets_as_written():
    """``[actions]`` in a config error vanished; a result quoting a node's ``[/]`` crashed."""
    app = build_app([], Config(), fleet=fleet_state(Config(), ["gpu01"], clock=lambda: 0.0), theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.notify("config.toml: [actions] privilege = 'x'", title=f"{NODE}: restart: failed")
        app.screen.notify(f"{MARKUP} quoted by a node")  # a widget's notify passes markup=True
        await pilot.pause()
        shown = [toast.render().plain for toast in app.screen.query(Toast)]
        assert any("[actions] privilege" in text and f"{NODE}: restart: failed" in text for text in shown)
        assert any(f"{MARKUP} quoted by a node" in text for text in shown)


async def test_the_palette_offers_a_node_named_with_markup_as_written():
    fleet = fleet_state(Config(), ["gpu01", NODE, "[B]old", "[$x]"], clock=lambda: 0.0)
    app = build_app([], Config(), fleet=fleet, theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=(120, 40)) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen) if c.title.startswith("Open ")]
        shown = [Content.from_markup(t).plain for t in titles]
        assert shown == ["Open gpu01", f"Open {NODE}", "Open [B]old", "Open [$x]"]
        await pilot.press("ctrl+p", *"Open rack")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == NODE
        assert escape(NODE) == "rack\\[/]7"
