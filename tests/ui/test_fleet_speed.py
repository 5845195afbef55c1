"""The fleet screen's cheap paths draw what they should: the cursor where it is, a colour
change repainted, a key answered by repainting only its lines, and its latency measured."""

from dataclasses import replace
from pathlib import Path

from textual.strip import Strip

from dltui.ui.frame_stats import FrameStats
from dltui.ui.widgets import FleetTable, fleet_row

from .demo_fleet import demo_app, feed

SIZE = (160, 48)


def highlighted(table: FleetTable, strip: Strip) -> list[int]:
    """The cells of a line drawn in the cursor's background."""
    cursor = table.get_component_rich_style("fleet-table--cursor").bgcolor
    cells, x = [], 0
    for segment in strip:
        if segment.style is not None and segment.style.bgcolor == cursor:
            cells += range(x, x + len(segment.text))
        x += len(segment.text)
    return cells


async def test_the_compact_cursor_is_drawn_on_the_tile_it_is_on():
    """A tile with the cursor has the same text as without it: a cache keyed by text (Content
    compares text only) kept the highlight on the first tile wherever the cursor went."""
    app, demo = demo_app(nodes=256)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=5)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        assert table.compact
        tile = fleet_row.tile_width(table._name_w, table._gpus) + 2  # a tile and its gap
        first = highlighted(table, table.render_line(1))
        assert first and max(first) < tile
        await pilot.press("l")
        on_line = highlighted(table, table.render_line(1))
        assert on_line and min(on_line) >= tile and max(on_line) < 2 * tile
        await pilot.press("j")  # the next line, same column
        assert highlighted(table, table.render_line(1)) == []
        below = highlighted(table, table.render_line(2))
        assert below and min(below) >= tile and max(below) < 2 * tile


async def test_a_tile_whose_colour_alone_changed_is_repainted():
    """A GPU turning hot keeps its utilisation bar: only the style says it. The line must be
    seen as changed, and drawn in the new style."""
    app, demo = demo_app(nodes=256)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=5)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        before = table.render_line(1)
        node = table.nodes[0]
        cold = table.thresholds.of(node.name)  # cached per node: replaced to turn every GPU warm
        table.thresholds._by_node[node.name] = replace(cold, margin_warning_c=200.0)
        node.version += 1
        repainted = []
        real_refresh = table.refresh
        table.refresh = lambda *regions, **kw: repainted.append(regions) or real_refresh(*regions, **kw)
        app.tick()
        assert any(r and r[0].y == 1 for r in repainted)
        after = table.render_line(1)
        assert before.text == after.text and list(before) != list(after)


async def test_a_cursor_key_repaints_only_the_two_lines_it_touches():
    app, demo = demo_app(nodes=256)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=5)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        repainted = []
        table.refresh = lambda *regions, **kw: repainted.append(regions)
        table.action_move(1)
        assert sorted(r[0].y for r in repainted) == [1, 2]


async def test_key_latency_is_measured_from_the_key_to_the_paint_after_its_action():
    app, demo = demo_app(nodes=64)
    app.frame_stats = stats = FrameStats(Path("unused"))
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=5)
        await pilot.pause()
        await pilot.press("j", "j", "k")
        await pilot.pause()
    assert len(stats.keys_ms) == 3 and all(ms >= 0 for ms in stats.keys_ms)


async def test_a_redraw_in_steps_answers_a_key_between_them_and_ends_as_a_whole_redraw(monkeypatch):
    """A large fleet's redraw runs as steps (keys are handled between them): a key pressed
    half-way moves the cursor, and the screen at the end is what a redraw in one go draws."""
    from dltui.ui.screens import fleet as fleet_screen
    from dltui.ui.widgets import FleetSummary

    monkeypatch.setattr(fleet_screen, "COUNT_SLICE", 64)
    app, demo = demo_app(nodes=256)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, demo, steps=5)
        await pilot.pause()
        screen, table = app.screen, app.screen.query_one(FleetTable)
        demo.step_into(app.fleet, 1)
        steps = screen.update_steps(app.fleet.clock())
        next(steps)
        await pilot.press("j")
        taken = 1 + sum(1 for _ in steps)
        await pilot.pause()
        lines = [table.render_line(y).text for y in range(1, 8)]
        summary = str(screen.query_one(FleetSummary).render())
        assert taken == 256 // 64 + 1  # the summary's four slices, the table's cells, the drawing
        assert table.cursor == table.per_line  # the line below
        screen.update_view(app.fleet.clock())
        await pilot.pause()
        assert [table.render_line(y).text for y in range(1, 8)] == lines
        assert str(screen.query_one(FleetSummary).render()) == summary
        assert "256 nodes" in summary
