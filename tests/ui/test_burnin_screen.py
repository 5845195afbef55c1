"""The burn-in screen mid-run, on fixed data: two nodes, 8 GPUs each, 10 minutes of 1 Hz
samples (seeded, ``dltui.burnin.demo``), gpu_burn's progress taken from the real capture
read up to its middle."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from dltui.burnin import demo
from dltui.node.burnin.parse import GpuBurnParser
from dltui.burnin.remote import NodeRunView, RunCollector
from dltui.core.models import Sample
from dltui.ui.screens.burnin import BurnInScreen

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"
T0 = demo.T0
SIZE = (160, 60)


def _view(node: str, hot_gpu: int | None) -> NodeRunView:
    view = NodeRunView(node, "r1", RunCollector())
    for t in range(600):
        gpus = demo.gpus_at(t, hot_gpu)  # the seeded run the report screenshot draws too
        view.collector.on_sample(node, Sample(time=T0 + t, gpus=gpus))
    text = (FIX / "superbench_gpu_burn.log").read_text()
    parser = GpuBurnParser()
    parser.feed(text[: len(text) // 2])
    view.status = {
        "run_id": "r1",
        "state": "running",
        "phase": "load",
        "time": T0 + 599,
        "duration_s": 7200,
        "phases": {"preflight": [T0, T0 + 10], "load": [T0 + 10, None], "post": [None, None]},
        "load_ends": T0 + 7210,
        "samples": 600,
        "tools": {"gpu": "gpu-burn"},
        "progress": {"gpu_burn": parser.result.to_dict()},
    }
    view.collector.on_run_status(view.status)  # as the follow does with each status line
    return view


class _App(App):
    def __init__(self, screen: BurnInScreen):
        super().__init__()
        self._bi = screen

    def on_mount(self) -> None:
        self.push_screen(self._bi)


def _app() -> _App:
    views = {"gpu01": _view("gpu01", None), "gpu02": _view("gpu02", 2)}
    return _App(BurnInScreen("r1", views, live_refresh=False))


def test_burnin_screen_mid_run(snap_compare):
    """gpu01 in view: load phase, 1:50:11 of load left, 600 samples, PASS so far; each GPU's
    gpu_burn progress (Gflop/s, iterations, 0 errors) from the real capture; six charts (temp,
    HBM, margin, power vs limit, SM clock vs max, utilisation) over the 10 minutes, a line per
    GPU; gpu02 FAIL (its GPU2 at 90 °C)."""
    assert snap_compare(_app(), terminal_size=SIZE)


def test_burnin_screen_next_node_shows_the_hot_gpu(snap_compare):
    """After n: gpu02 in view, its GPU2 FAIL with "thermal: core 90 °C > 85 °C" and the SM clock
    5th-percentile drop; the charts show GPU2 above the others."""
    assert snap_compare(_app(), press=["n"], terminal_size=SIZE)


async def test_burnin_screen_verdict_so_far_text():
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        nodes = str(app.screen.query_one("#bi-nodes").render())
        assert "gpu01" in nodes and "PASS so far" in nodes and "FAIL" in nodes
        assert "1:50:11" in nodes
        await pilot.press("n")
        gpus = str(app.screen.query_one("#bi-gpus").render())
        assert "thermal: core 90 °C > 85 °C" in gpus


async def test_burnin_screen_stop_asks_first_and_then_stops():
    stopped = []
    views = {"gpu01": _view("gpu01", None)}
    app = _App(BurnInScreen("r1", views, on_stop=lambda: stopped.append(True), live_refresh=False))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("x")
        await pilot.press("n", "o", "enter")  # anything but "yes" leaves the run alone
        await pilot.pause()
        assert stopped == []
        await pilot.press("x")
        await pilot.press("y", "e", "s", "enter")
        await pilot.pause()
        assert stopped == [True]


async def test_burnin_command_needs_ssh_nodes():
    from .demo_fleet import demo_app

    app, _ = demo_app()
    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        app.execute("burnin 30s")
        await pilot.pause()
    assert notes and "SSH nodes" in notes[0]


async def test_a_node_where_the_run_did_not_start_says_why_and_an_ended_run_its_verdict():
    views = {"gpu01": _view("gpu01", None), "gpu02": _view("gpu02", 2)}
    views["gpu01"].status = {**views["gpu01"].status, "state": "done", "phase": "post"}
    failed = {"gpu02": "a burn-in is already running on this node (run r0); stop it first"}
    app = _App(BurnInScreen("r1", views, live_refresh=False, failed=failed))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        nodes = str(app.screen.query_one("#bi-nodes").render())
        assert "gpu02     not started: a burn-in is already running on this node (run r0)" in nodes
        gpu01 = next(line for line in nodes.splitlines() if "gpu01" in line)
        assert gpu01.rstrip().endswith("PASS") and "so far" not in gpu01
