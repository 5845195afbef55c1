"""A pane draws each line that fits through its own short path (pane._line_strip): the strips
must be Textual's own (Visual.to_strips), segment for segment, styles and mouse offsets too."""

from textual.content import Content
from textual.visual import Visual

from dltui.ui.screens import NodeScreen
from dltui.ui.widgets import CpuPane
from dltui.ui.widgets.pane import Pane, _plain_fit

from .demo_fleet import demo_app, feed

SIZE = (160, 48)


def _textuals(pane: Pane, line: Content, y: int):
    strips = Visual.to_strips(pane, line, pane.size.width, 1, pane.visual_style)
    return list(strips[0].apply_offsets(0, y))


async def test_every_pane_line_on_the_node_screen_is_textuals_own_drawing():
    app, demo = demo_app(nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)
        compared = short = 0
        for pane in app.screen.query(Pane):
            for y, line in enumerate(pane._lines):
                assert list(pane.render_line(y)) == _textuals(pane, line, y), (type(pane).__name__, y)
                compared += 1
                short += _plain_fit(line, pane.size.width)
        assert compared > 60  # 8 GPU panes and the host panes
        assert short > compared * 0.9  # nearly every line takes the short path


async def test_a_line_too_long_is_cut_with_an_ellipsis_as_textual_cuts_it():
    app, demo = demo_app(nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo)
        await pilot.press("enter")
        await pilot.pause()
        pane = app.screen.query_one(CpuPane)  # unwrapped: one line a row
        long = Content.assemble(("x" * 300, "$foreground-muted"), "tail")
        pane._lines[0] = long
        assert not _plain_fit(long, pane.size.width)
        strip = pane.render_line(0)
        assert list(strip) == _textuals(pane, long, 0)
        assert strip.text.endswith("…")
