"""What a redraw repaints: only the lines whose text or colours changed, nothing for a steady
picture; and no journal is followed for a unit the node does not have (a process every 2 s)."""

from textual.app import App, ComposeResult
from textual.content import Content

from dltui.config import Config
from dltui.core.models import Sample, UnitSample
from dltui.core.state import FleetState, NodeState
from dltui.ui.app import build_app
from dltui.ui.themes import PACKAGED_DIR
from dltui.ui.widgets.pane import Pane


class Lines(Pane):
    """A pane drawing whatever ``lines`` holds: (text, style) per line."""

    def __init__(self) -> None:
        super().__init__("Lines")
        self.lines = [("cpu 10%", ""), ("mem 20%", ""), ("disk 30%", "")]

    def draw(self, node: NodeState, now: float) -> Content:
        return Content("\n").join([Content.styled(text, style) for text, style in self.lines])


class OnePane(App[None]):
    def compose(self) -> ComposeResult:
        yield Lines()


async def test_a_pane_repaints_only_its_changed_lines_and_nothing_when_steady():
    app = OnePane()
    async with app.run_test(size=(40, 8)) as pilot:
        pane = app.query_one(Lines)
        node = NodeState("gpu01")
        pane.show(node, 0.0)
        await pilot.pause()
        painted: list[int] = []
        render_line = pane.render_line
        pane.render_line = lambda y: painted.append(y) or render_line(y)  # type: ignore[method-assign]

        pane.show(node, 1.0)  # the same picture
        await pilot.pause()
        assert painted == []

        pane.lines[1] = ("mem 21%", "")
        pane.show(node, 2.0)
        await pilot.pause()
        assert painted == [1]

        pane.lines[2] = ("disk 30%", "bold $text-error")  # the same text, now in alarm colours
        pane.show(node, 3.0)
        await pilot.pause()
        assert painted == [1, 2]
        assert "disk 30%" in pane.render_line(2).text


async def test_a_pane_whose_line_count_changes_is_laid_out_again():
    app = OnePane()
    async with app.run_test(size=(40, 10)) as pilot:
        pane = app.query_one(Lines)
        node = NodeState("gpu01")
        pane.show(node, 0.0)
        await pilot.pause()
        assert pane.size.height == 3
        pane.lines.append(("net 1K", ""))
        pane.show(node, 1.0)
        await pilot.pause()
        assert pane.size.height == 4
        assert pane.render_line(3).text.startswith("net 1K")


def _unit_app(unit: UnitSample):
    fleet = FleetState(["gpu01"])
    app = build_app([], Config(), fleet=fleet, theme_dirs=[PACKAGED_DIR])
    fleet.on_sample("gpu01", Sample(time=0.0, units=[unit]))
    return app


def test_no_journal_is_followed_for_a_unit_the_node_does_not_have():
    no_systemd = UnitSample("dl_train.service", error="no systemd on this node")
    not_found = UnitSample("dl_train.service", load_state="not-found", active_state="inactive")
    assert _unit_app(no_systemd).actions.unit_of("gpu01") is None
    assert _unit_app(not_found).actions.unit_of("gpu01") is None
    running = UnitSample("dl_train.service", load_state="loaded", active_state="active", sub_state="running")
    assert _unit_app(running).actions.unit_of("gpu01") == "dl_train.service"
