"""``dltui burn-in``'s progress while it follows a run: in place on a terminal (phase, time
left, samples, verdict so far per node), lines in a log. Fed the seeded two-node run the
burn-in screen's snapshot uses (gpu02's GPU2 runs hot)."""

from __future__ import annotations

import io
import re

from dltui.burnin import progress
from tests.ui.test_burnin_screen import _view


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_line_per_node_redrawn_in_place_with_the_verdict_so_far(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the lines are cut to the terminal's width
    out = Tty()
    display = progress.for_stream(out, ["gpu01", "gpu02"], None)
    assert isinstance(display, progress.LiveProgress)
    views = [_view("gpu01", None), _view("gpu02", 2)]
    for view in views:
        display(view)
    display.draw()
    display.close()
    frames = out.getvalue().split("\x1b[J")
    assert frames[0] == ""  # the first draw moves no cursor
    assert all(f.endswith("\x1b[2F") for f in frames[1:-1])  # each later one rewrites both lines
    last = frames[-1].splitlines()
    assert [line.split()[0] for line in last] == ["gpu01", "gpu02"]
    assert "load (running)" in last[0] and "1h50m left" in last[0] and "600 samples" in last[0]
    assert re.search(r"so far PASS$", last[0]), last[0]
    assert re.search(r"so far (WARN|FAIL) \(GPU2 ", last[1]), last[1]


def test_a_log_gets_plain_lines_only_on_change_or_every_10_s():
    out = io.StringIO()
    display = progress.for_stream(out, ["gpu01"], None)
    assert isinstance(display, progress.LineProgress)
    view = _view("gpu01", None)
    for _ in range(5):
        display(view)
    view.status["phase"] = "post"
    display(view)
    lines = out.getvalue().splitlines()
    assert lines == ["gpu01: load (running), 1h50m left, 600 samples", "gpu01: post (running), 600 samples"]
    assert "\x1b" not in out.getvalue()


def test_node_words_reach_the_terminal_without_their_escapes():
    out = io.StringIO()
    display = progress.LineProgress(out)
    view = _view("gpu01", None)
    view.status["phase"] = "load\x1b]0;PWNED\x07\x1b[2J"
    display(view)
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()


def test_a_line_wider_than_the_terminal_is_cut_with_an_ellipsis_never_wrapped(monkeypatch):
    """A wrapped line would throw off the count of lines to redraw."""
    monkeypatch.setenv("COLUMNS", "40")
    out = Tty()
    display = progress.LiveProgress(out, ["gpu01"], None)
    display(_view("gpu01", None))
    display.draw()
    [line] = out.getvalue().split("\x1b[J")[-1].splitlines()
    assert len(line) <= 39 and line.endswith("…")
