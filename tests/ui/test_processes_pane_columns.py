"""The processes pane's NAME stays readable: USER and JOB / CONTAINER are as wide as what they
hold, vanish when nothing fills them, and give way in a narrow pane (at 160 columns the pane is
half the screen; fixed columns left NAME 9 cells, and a URL-named process never showed whole)."""

from __future__ import annotations

from dltui.ui.widgets import ProcessesPane
from dltui.ui.widgets.processes_pane import NAME_MIN_W, column_widths

from .demo_fleet import demo_app, feed

URL = "http://evil.example/pwn"
LONG_JOB = "job 48213 llama-finetune-70b"


def test_columns_nothing_fills_are_not_drawn():
    assert column_widths(["", ""], ["", ""], [URL, "python3"], 73) == (0, 0)


def test_columns_are_as_wide_as_their_longest_entry_or_heading():
    assert column_widths(["alice", "bob"], ["ctr trainer", ""], ["python3"], 200) == (5, 15)
    assert column_widths(["a-very-long-user"], [LONG_JOB], ["python3"], 200) == (10, 24)


def test_a_narrow_pane_keeps_the_name_and_narrows_job_then_user():
    user_w, holder_w = column_widths(["alice"], [LONG_JOB], [URL], 73)
    assert 26 + user_w + 1 + holder_w + 1 + len(URL) <= 73  # the cursor, GPU, PID, GPU MEM: 26
    assert user_w == 5 and 8 <= holder_w < 24
    user_w, holder_w = column_widths(["a-very-long-user"], [LONG_JOB], ["x" * 40], 50)
    assert (user_w, holder_w) == (4, 8)  # the least each keeps; NAME gets what is left
    assert 26 + user_w + 1 + holder_w + 1 + NAME_MIN_W > 50


async def test_at_160_columns_each_process_shows_its_user_job_and_name_on_screen():
    app, demo = demo_app()
    async with app.run_test(size=(160, 48)) as pilot:
        feed(app, demo)
        app.open_node("gpu01")
        await pilot.pause()
        pane = app.screen.query_one(ProcessesPane)
        await pilot.pause()
        shown = ["".join(seg.text for seg in pane.render_line(y)) for y in range(1, 1 + len(pane.pids))]
        node = app.fleet.node("gpu01")
        processes = [p for g in node.sample.gpus for p in g.processes]
        assert processes and len(shown) == len(processes)
        for line, p in zip(shown, processes, strict=True):
            assert str(p.pid) in line and p.user in line and f"job {p.slurm_job}" in line
            assert f" {p.name} " in line + " " and "…" not in line, line  # whole, nothing cut
