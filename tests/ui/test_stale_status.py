"""A node connected but silent reads ``◐ stale`` wherever its status shows — row, tile, fleet
summary, node header and the ``status`` filter — from the moment node_stale's limit passes,
and ``● ok`` again with its next sample. A hung probe keeps its SSH connection up for a
minute of keepalives: a green ``ok`` beside a critical alert read as healthy."""

from dltui.ui.fleet_query import parse_filter
from dltui.ui.widgets import FleetSummary, FleetTable, NodeHeader

from .demo_fleet import demo_app, feed


def lines(table: FleetTable) -> list[str]:
    return ["".join(s.text for s in table.render_line(y)) for y in range(1, table.size.height)]


def summary(app) -> str:
    return app.screen.query_one(FleetSummary)._drawn.plain


async def test_a_silent_connected_node_reads_stale_in_rows_summary_filter_and_header():
    app, demo = demo_app(nodes=12)
    async with app.run_test(size=(160, 48)) as pilot:
        feed(app, demo, steps=20)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        gpu01 = next(line for line in lines(table) if "gpu01" in line)
        assert "● ok" in gpu01 and "stale" not in gpu01
        assert "◐" not in summary(app)
        live = [n.name for n in app.fleet if n.status == "ok"]
        assert len(live) == 12  # all connected at step 20 (gpu04 goes away at 150)

        demo.now += 3 * demo.interval_s  # at node_stale's limit: not past it
        app.tick()
        await pilot.pause()
        assert not any("stale" in line for line in lines(table))

        demo.now += 1.0  # past it: no node has sent a sample for 4 intervals
        app.tick()
        await pilot.pause()
        rows = [line for line in lines(table) if any(f"{name} " in line for name in live)]
        assert len(rows) == 12 and all("◐ stale" in row for row in rows)
        assert "◐ 12" in summary(app) and "● 0" in summary(app)
        stale = parse_filter("status=stale")
        assert sorted(n.name for n in app.fleet if stale(n, demo.clock())) == sorted(live)

        await pilot.press("enter")  # the node screen of the first node
        await pilot.pause()
        assert "◐ stale" in app.screen.query_one(NodeHeader)._drawn.plain
        await pilot.press("escape")
        await pilot.pause()

        demo.step_into(app.fleet, 1)  # samples again
        app.tick()
        await pilot.pause()
        assert not any("stale" in line for line in lines(table))
        assert "◐" not in summary(app)


async def test_a_silent_node_s_tile_turns_stale():
    """The compact view's tiles too (a tile is rebuilt only when its node's version moved:
    node_stale's alert moves it on the tick the node goes stale)."""
    app, demo = demo_app(nodes=12)
    async with app.run_test(size=(160, 8)) as pilot:  # 12 nodes on 5 lines: tiles
        feed(app, demo, steps=20)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        assert table.compact
        assert "◐" not in lines(table)[0]
        demo.now += 4 * demo.interval_s
        app.tick()
        await pilot.pause()
        first = lines(table)[0]
        assert first.count("◐") == first.count("gpu") > 0
