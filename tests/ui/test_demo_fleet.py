"""The demo fleet: seeded, stepped by hand, and showing the troubles it promises."""

import subprocess
import sys

from dltui.core import status as st
from dltui.core.state import FleetState
from dltui.transport.demo import EPOCH, DemoTransport


def stepped(steps, nodes=12, seed=7):
    demo = DemoTransport(nodes=nodes, seed=seed)
    fleet = FleetState(demo.names, clock=demo.clock)
    demo.step_into(fleet, steps)
    return demo, fleet


def test_the_same_seed_gives_the_same_fleet_and_times():
    _, a = stepped(30)
    _, b = stepped(30)
    assert a.nodes["gpu02"].sample == b.nodes["gpu02"].sample
    assert a.nodes["gpu02"].sample.time == EPOCH + 30
    _, c = stepped(30, seed=8)
    assert c.nodes["gpu02"].sample != a.nodes["gpu02"].sample


def test_a_node_keeps_its_values_when_the_fleet_grows():
    _, small = stepped(10, nodes=4)
    _, large = stepped(10, nodes=64)
    assert small.nodes["gpu03"].sample == large.nodes["gpu03"].sample


def test_one_gpu_runs_hot_and_throttles():
    _, fleet = stepped(180)
    gpus = fleet.nodes["gpu02"].sample.gpus
    hot = gpus[3]
    assert hot.temperature_c == 90.0 and hot.temperature_margin_c == 1.0
    assert hot.clock_event_reasons == ["hw_slowdown", "sw_thermal_slowdown"]
    assert hot.sm_clock_mhz == 990.0 and hot.clock_event_sw_thermal_us > 0
    assert all(
        g.temperature_c < 80 and not {"sw_thermal_slowdown", "hw_slowdown"} & set(g.clock_event_reasons)
        for g in gpus
        if g.index != 3
    )


def test_the_starved_loader_drops_to_zero_every_four_seconds_while_its_disk_is_saturated():
    demo, fleet = stepped(3)
    node = fleet.nodes["gpu03"]
    samples = []
    for _ in range(8):
        demo.step_into(fleet)
        samples += node.sample.gpus[0].utilization_samples_percent
    zero_starts = [i for i, v in enumerate(samples) if v == 0 and (i == 0 or samples[i - 1] != 0)]
    assert [b - a for a, b in zip(zero_starts, zero_starts[1:])] == [24]  # 24 x 1/6 s = 4 s
    assert samples.count(0.0) == 2 * 9  # 1.5 s of zeros per period
    data_disk = next(d for d in node.sample.disks if d.name == "nvme1n1")
    assert data_disk.busy_percent == 100.0 and data_disk.read_bytes_per_s > 3e9
    assert node.sample.pressure.io_some_avg10_percent > 30
    assert node.sample.tasks.d_state_processes > 0


def test_one_node_drops_off_and_comes_back():
    _, fleet = stepped(200)
    node = fleet.nodes["gpu04"]
    assert node.status == st.OK
    words = [e.message.split(":")[0] for e in node.timeline if e.kind == "status"]
    assert words == ["ok", "unreachable", "reconnecting", "ok"]
    assert node.age(fleet.clock()) == 0.0
    _, during = stepped(180)
    assert during.nodes["gpu04"].status == st.UNREACHABLE
    assert during.nodes["gpu04"].age(during.clock()) == 31.0


def test_a_node_without_gpus_reports_why():
    demo = DemoTransport(nodes=1, gpus=0)
    fleet = FleetState(demo.names, clock=demo.clock)
    demo.step_into(fleet, 2)
    node = fleet.nodes["gpu01"]
    assert node.sample.gpus == [] and node.facts.gpu_note == "no NVIDIA driver found"
    assert node.facts.gpu_source is None and node.sample.cpu.total_percent is not None


def test_one_node_has_a_dataloader_worker_oom_killed():
    from dltui.core.rules import build_engine

    demo = DemoTransport(nodes=12, seed=7)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 140)
    node = fleet.nodes["gpu07"]
    (kill,) = [e for e in node.timeline if e.kind == "oom-kill"]
    assert kill.message.startswith("OOM killer ended pt_data_worker:3 (pid 48213) holding 31.0 GiB")
    alert = node.alerts[("host_memory_low", None)]
    assert alert.severity == "critical" and "OOM killer ended pt_data_worker:3" in alert.message
    assert all(("host_memory_low", None) not in n.alerts for n in fleet if n.name != "gpu07")


async def test_the_demo_opens_on_its_story_already_under_way():
    """``run`` first simulates the recent past: before its first live sample the hot GPU, the
    starved loader, the OOM kill and the dropped node all hold their alerts, and the samples
    carry wall-clock times in the past (ages and durations agree with the live ones)."""
    import asyncio
    import time

    from dltui.core.rules import build_engine

    demo = DemoTransport(nodes=12, seed=7)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    started = time.time()
    task = asyncio.create_task(demo.run(fleet))
    while fleet.nodes["gpu12"].history.samples < demo.prefill_steps:
        await asyncio.sleep(0)
    task.cancel()
    fleet.tick()  # as the app's first redraw does: time-driven rules (the node gone quiet)
    alerts = {n.name: {rule for rule, _ in n.alerts} for n in fleet}
    assert {"thermal_slowdown", "hw_slowdown"} <= alerts["gpu02"]
    assert "loader_starvation" in alerts["gpu03"]
    assert fleet.nodes["gpu04"].status == st.UNREACHABLE and alerts["gpu04"]
    assert "host_memory_low" in alerts["gpu07"]
    times = fleet.nodes["gpu01"].history.time.values()
    assert len(times) >= demo.prefill_steps and times[-1] <= time.time()
    assert times[0] < started - demo.prefill_steps + 2  # the first step is one interval in


def test_a_demo_of_no_nodes_waits_instead_of_spinning(tmp_path):
    """`demo --nodes 0` once spun the event loop at 100 % CPU, deaf to `q`: the stream loop
    had nothing to await. Run with no nodes, the transport must hand the loop back (the
    timeout fires); a spinning one never would (the subprocess would be cut off)."""
    code = (
        "import asyncio\n"
        "from dltui.core.state import FleetState\n"
        "from dltui.transport.demo import DemoTransport\n"
        "demo = DemoTransport(nodes=0, interval_s=0.05)\n"
        "try:\n"
        "    asyncio.run(asyncio.wait_for(demo.run(FleetState([], clock=demo.clock)), 0.5))\n"
        "except asyncio.TimeoutError:\n"
        "    print('handed back')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "handed back", done.stderr


def _everything(demo, fleet) -> dict:
    """What a screen or a further step can read of a fleet: the snapshot report (samples,
    alerts, timeline), every history series, each node's version, the demo's clock and step."""
    from dltui import snapshot

    return {
        "report": snapshot.report(fleet),
        "timelines": {n.name: [e.to_dict() for e in n.timeline] for n in fleet},
        "history": {n.name: {k: r.values() for k, r in n.history.series.items()} for n in fleet},
        "versions": {n.name: n.version for n in fleet},
        "clock": (demo.step_count, demo.now, fleet.clock()),
    }


def test_a_fed_copy_is_what_stepping_makes_and_steps_on_alike():
    """The UI tests' ``feed`` copies one stepped fleet into each test's own objects: the nodes
    a screen holds stay the ones it holds; the copy equals a fleet stepped for real, stays equal
    when both step on (the simulators' random state and the rules' timers came along), and
    stepping it leaves the next copy untouched."""
    from .demo_fleet import demo_app, feed, new_fleet

    app, demo = demo_app(nodes=4)
    held = [(n, n.history, n.history.time) for n in app.fleet]
    feed(app, demo, 60)
    assert all(a is b for was, now in zip(held, app.fleet) for a, b in zip(was, (now, now.history, now.history.time)))
    real_demo, real = new_fleet(nodes=4)
    real_demo.step_into(real, 60)
    assert app.fleet.clock() == real.clock()  # the copy's clock is the test's own demo
    assert _everything(demo, app.fleet) == _everything(real_demo, real)
    demo.step_into(app.fleet, 30)
    real_demo.step_into(real, 30)
    assert _everything(demo, app.fleet) == _everything(real_demo, real)
    again_app, again = demo_app(nodes=4)
    feed(again_app, again, 60)
    assert again.step_count == 60 and again_app.fleet.nodes["gpu01"].history.samples == 60
