"""Pictures of the dashboard on the seeded demo fleet (fixed size, frozen clock, no live data).

Each docstring says what the picture must show. Regenerate with ``--snapshot-update`` and look.
"""

import pytest
from textual.widgets import Input

from .demo_fleet import charts_drawn, demo_app, feed

pytestmark = pytest.mark.oldest_python_only  # pictures: Textual draws the same SVG on every Python

FULL = (160, 48)
SMALL = (80, 24)


def _fed(app, demo):
    async def run_before(pilot):
        feed(app, demo)
        await charts_drawn(app, pilot)

    return run_before


def test_fleet_screen(snap_compare):
    """12 nodes, one row each: gpu02 GPU3 reversed red (hot, throttling) with ▲4 and its alert in
    NOTE, gpu03's disk red (saturated) with △8 starvation warnings, gpu04 ✖ unreachable with its
    reason and greyed values 31 s old, gpu06's GPUs idle (0, in blue). HOT 5m: each node's
    hottest GPU over 5 min (gpu02's in red, at the top; gpu06 low). Under the table, the fleet
    chart: the 8 hottest nodes' hottest GPU over the last 10 min (3 min held), gpu02 near
    90 °C above the others."""
    app, demo = demo_app()
    assert snap_compare(app, terminal_size=FULL, run_before=_fed(app, demo))


def test_node_screen_of_the_hot_gpu(snap_compare):
    """gpu02 drilled into: four open alerts for GPU3 (SW thermal, HW slowdown, margin, core temp),
    GPU3's pane with temp 90 °C and margin 1 °C in red, SM clock 990/1980 MHz in amber and
    "clocks held by HW slowdown, SW thermal"; CPU cores, memory, PSI, disks and network panes."""
    app, demo = demo_app()
    assert snap_compare(app, press=["j", "enter"], terminal_size=FULL, run_before=_fed(app, demo))


def test_node_screen_of_the_starved_loader(snap_compare):
    """gpu03: loader-starvation warnings naming I/O as the cause, io pressure ~48 % in red,
    D-state tasks in amber, nvme1n1 100 % busy in red."""
    app, demo = demo_app()
    assert snap_compare(app, press=["j", "j", "enter"], terminal_size=FULL, run_before=_fed(app, demo))


def test_node_screen_of_the_hca_port_down(snap_compare):
    """gpu05: the critical "HCA port mlx5_3 DOWN (physical link Polling), up earlier" alert with
    the cable as next step and the link-down warning under it; the network pane lists the eight
    HCA ports under the NICs, mlx5_3 at 0 B/s "polling" in red with "down 1"; each GPU pane's
    "NVLink 18/18 · 26.562 GB/s · errors 0"."""
    app, demo = demo_app()
    assert snap_compare(app, press=["j"] * 4 + ["enter"], terminal_size=(200, 60), run_before=_fed(app, demo))


def test_help_lists_every_key(snap_compare):
    """The help box over the fleet: keys everywhere, on the fleet and on a node, the filter syntax
    with its keys, and the : commands."""
    app, demo = demo_app()
    assert snap_compare(app, press=["question_mark"], terminal_size=FULL, run_before=_fed(app, demo))


def test_filter_keeps_the_hot_node(snap_compare):
    """``/temp>85`` typed: only gpu02 listed, the summary says "filter temp>85 (1 of 12)", the
    prompt at the bottom still open with the text."""
    app, demo = demo_app()

    async def run_before(pilot):
        feed(app, demo)
        await pilot.press("slash", *"temp>85")
        app.screen.query_one(Input).cursor_blink = False
        await charts_drawn(app, pilot)

    assert snap_compare(app, terminal_size=FULL, run_before=run_before)


def test_light_theme(snap_compare):
    """The fleet in dltui-light: dark text on near-white, the same states in darker colours."""
    app, demo = demo_app(theme="dltui-light")
    assert snap_compare(app, terminal_size=FULL, run_before=_fed(app, demo))


def test_high_contrast_theme(snap_compare):
    """gpu02 in dltui-high-contrast: white on black, ok sky blue, warning yellow, critical
    vermillion; the hot cell reversed and alerts marked ▲/△, so no state is told by colour alone."""
    app, demo = demo_app(theme="dltui-high-contrast")
    assert snap_compare(app, press=["j", "enter"], terminal_size=FULL, run_before=_fed(app, demo))


def test_compact_fleet_of_256_nodes(snap_compare):
    """256 nodes x 8 GPUs fit 160x48 as tiles, one character per GPU; the 16 hot GPUs are a
    reversed red "!", the 16 unreachable nodes ✖ with grey cells."""
    app, demo = demo_app(nodes=256)
    assert snap_compare(app, terminal_size=FULL, run_before=_fed(app, demo))


def test_fleet_on_a_small_terminal(snap_compare):
    """80x24: every node and every GPU still listed, GPU cells shortened to a bar and the
    temperature, host columns dropped."""
    app, demo = demo_app()
    assert snap_compare(app, terminal_size=SMALL, run_before=_fed(app, demo))


def test_node_on_a_small_terminal(snap_compare):
    """80x24 node screen: header and alerts on top, GPU panes one per row, scrollable."""
    app, demo = demo_app()
    assert snap_compare(app, press=["j", "enter"], terminal_size=SMALL, run_before=_fed(app, demo))


def test_node_without_gpus(snap_compare):
    """A single CPU-only node opens straight on its node screen: "no NVIDIA driver found" where
    the GPU panes would be, host panes filled, no GPU processes."""
    app, demo = demo_app(nodes=1, gpus=0)
    assert snap_compare(app, terminal_size=FULL, run_before=_fed(app, demo))


def test_demo_five_seconds_in(snap_compare):
    """``dltui demo`` 5 s after start (the prefilled past plus five live steps): gpu02 GPU3 hot
    with ▲4 and "SW thermal slowdown active", gpu03 △8 starved, gpu04 ✖ unreachable, gpu07 ▲1
    with the OOM kill of pt_data_worker in NOTE."""
    app, demo = demo_app()

    async def run_before(pilot):
        feed(app, demo, demo.prefill_steps + 5)
        await charts_drawn(app, pilot)

    assert snap_compare(app, terminal_size=FULL, run_before=run_before)


def test_node_screen_of_the_failing_drive(snap_compare):
    """gpu10 drilled into: a critical alert naming /dev/nvme1 (model, serial) and its NVMe critical
    warning 0x04 (reliability_degraded), an info alert for its 38 media errors; in the Disks
    pane, under the file systems, a SMART row per drive with nvme1 FAILED in red and its
    warning bit on the line below, nvme0 and nvme2 PASSED."""
    app, demo = demo_app()
    assert snap_compare(app, press=["j"] * 9 + ["enter"], terminal_size=FULL, run_before=_fed(app, demo))


def test_stack_view_marks_the_odd_node(snap_compare):
    """``V`` on the fleet: every node's kernel, driver, module, packages, CUDA, held and upgrades;
    gpu11, left unheld under unattended-upgrades and rebooted into 5.15.0-122 and 550.127.05,
    has its kernel, driver and "not held (5)" cells in amber, the other eleven plain."""
    app, demo = demo_app()
    assert snap_compare(app, press=["V"], terminal_size=FULL, run_before=_fed(app, demo))
