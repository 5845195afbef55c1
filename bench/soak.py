"""Cost over hours watched: does a tick, a sample or the heap grow with the time on screen?

    python bench/soak.py [--nodes 16] [--hours 2] [--period-min 10] [--gpus 1]
    python bench/soak.py --lab 16 [--jump] [--interval 0.25] [--minutes 30] [--period-min 5]
                         [--faults 6 [--down-s 15] [--seed 7]] [--heap-collect] [--tracemalloc]

Time-compressed, in this process: the seeded demo fleet (``--nodes`` x ``--gpus``) is fed
through the app's own intake (``heap.watching``, what transports write into) as fast as it
goes, one simulated second at a time, into a headless app on the fleet screen at 160x48 with
two redraw ticks each simulated second, as the live dashboard has. Two hours of history fill
in minutes instead of hours; what is printed is per simulated period (``--period-min``):

- intake CPU per simulated second (the samples into the fleet state and the rules: what grows
  if the history rings or the rule windows are walked whole),
- frame CPU p95 (tick to painted screen, this process's CPU time: what grows if a screen
  draws from every sample in the window),
- a chart redraw (the node chart of the hottest node at 160x48, 2 h window): what grows if a
  chart draws from every sample,
- RSS and the allocated blocks at the period's end (what grows if rings reallocate or caches
  are unbounded).

``--lab N``: the same question over real OpenSSH, on the wall clock: N lab nodes
(tests/integration/sshd.py, fake nvidia-smi replaying a real capture; ``--jump``: all behind
one jump host) and ``dltui node00 ...`` in tmux 160x48 with ``DLTUI_FRAME_STATS``. The probes
sample every ``--interval`` s (0.25: history fills four times faster than at 1 Hz, so 30
minutes hold what two hours would); per period: the dashboard process's CPU (utime+stime),
RSS, open fds, and its frames' p95. ``--faults K``: K nodes (a seeded rotating choice) crashed
every wall-clock minute — sshd and all it started SIGKILLed: the connection reset, new ones
refused — and restarted ``--down-s`` later on the same port (bench/_soak_faults.py); per period
also the faults made, those seen going down and those back to ``● ok`` on the screen
(tmux capture-pane once a second), with the seconds from restart to ok. The dashboard runs
under bench/_soak_child.py: a thread that notes its heap once a period (gc, allocated blocks,
the most numerous types; ``--tracemalloc``: the lines whose allocations grew), printed as
what grew from the second period to the last (``--heap-collect``: alive objects only, after
a full collection; without it the count includes the garbage cycles the dashboard's heap
freezer keeps frozen until its next thaw). Frames and heap notes are kept in bench/results/.
Needs root, openssh-server and tmux.

The target (issue 35): from the second period to the last, CPU and RSS within 10 %. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dltui.config import Config  # noqa: E402
from dltui.transport.demo import DemoTransport  # noqa: E402
from dltui.ui import charts  # noqa: E402
from dltui.ui.app import build_app  # noqa: E402
from dltui.ui.frame_stats import summarise  # noqa: E402
from dltui.ui.themes import PACKAGED_DIR  # noqa: E402
from dltui.wiring import fleet_state  # noqa: E402

SIZE = (160, 48)


def rss_mb() -> float:
    line = next(
        ln for ln in Path("/proc/self/status").read_text().splitlines() if ln.startswith("VmRSS:")
    )
    return int(line.split()[1]) / 1024


async def soak(nodes: int, gpus: int, hours: float, period_s: int) -> list[dict]:
    demo = DemoTransport(nodes=nodes, gpus=gpus, seed=7)
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    app = build_app([], Config(), fleet=fleet, theme_dirs=[PACKAGED_DIR])
    rows: list[dict] = []
    async with app.run_test(size=SIZE) as pilot:
        intake = app.heap.watching(fleet)
        demo.step_into(intake, 1)
        app.tick()
        await pilot.pause()
        total = int(hours * 3600)
        for first in range(0, total, period_s):
            intake_ms: list[float] = []
            frames_ms: list[float] = []
            for second in range(period_s):
                if second % 30 == 0:
                    # The freezer looks at the heap every 30 s of the wall clock; here a
                    # simulated half-minute passes in a second or two: it looks at that pace.
                    app.heap._next_check = 0.0
                cpu = time.process_time()
                demo.step_into(intake, 1)
                intake_ms.append((time.process_time() - cpu) * 1000)
                for _ in range(2):  # TICK_S = 0.5: two redraws a simulated second
                    cpu = time.process_time()
                    app.tick()
                    await pilot.pause()
                    frames_ms.append((time.process_time() - cpu) * 1000)
            hottest = max(fleet.nodes.values(), key=lambda n: charts.end_of(n))
            end = charts.end_of(hottest)
            chart_ms = []
            for _ in range(3):
                cpu = time.process_time()
                charts.render_text(charts.node_chart(hottest, 7200, end, 312), 156, 44)
                chart_ms.append((time.process_time() - cpu) * 1000)
            rows.append(
                {
                    "minute": (first + period_s) / 60,
                    "intake_ms": statistics.mean(intake_ms),
                    "frame_p50_ms": summarise(frames_ms)["p50_ms"],
                    "frame_p95_ms": summarise(frames_ms)["p95_ms"],
                    "chart_ms": statistics.median(chart_ms),
                    "rss_mb": rss_mb(),
                    "blocks_k": sys.getallocatedblocks() / 1000,
                }
            )
            r = rows[-1]
            print(
                f"   {r['minute']:>6.0f} min {r['intake_ms']:>8.2f} ms {r['frame_p50_ms']:>8.1f} ms"
                f" {r['frame_p95_ms']:>8.1f} ms"
                f" {r['chart_ms']:>8.1f} ms {r['rss_mb']:>7.1f} MB {r['blocks_k']:>8.0f}k"
                f"  [load {os.getloadavg()[0]:.2f}]",
                flush=True,
            )
    return rows


def lab_soak(
    nodes: int,
    jump: bool,
    interval_s: float,
    minutes: float,
    period_s: float,
    faults: int = 0,
    down_s: float = 15.0,
    seed: int = 7,
    trace: bool = False,
    collect: bool = False,
) -> list[dict]:
    """``dltui`` on N real sshd lab nodes in tmux; CPU, RSS and open fds of its process each
    period, and with ``faults`` that many nodes crashed and restarted a minute (soak_faults)."""
    import json
    import shutil
    import subprocess
    import tempfile

    sys.path.insert(0, str(REPO / "bench"))
    import _soak_faults as soak_faults
    import ui_cpu  # this directory: the tmux terminal and the process-tree CPU

    from tests.integration.sshd import SshLab

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        lab = SshLab(tmp / "lab")
        lab.keepalive_s, lab.keepalive_count, lab.connect_timeout_s = 15, 3, 60  # dltui's defaults
        if jump:
            lab.add_node("jump", jump=True, fake_smi=False)
        names = [f"node{i:02d}" for i in range(nodes)]
        for name in names:
            lab.add_node(name)  # behind the jump when there is one (the client's ProxyJump)
        lab.start()
        stats = tmp / "frames.json"
        chaos = (
            soak_faults.Faults({n: lab.nodes[n] for n in names}, faults, down_s, seed)
            if faults
            else None
        )
        try:
            home = lab.make_home(tmp / "client")
            env = ui_cpu.clean_env(
                tmp, LANG="C.UTF-8", HOME=str(home), DLTUI_FRAME_STATS=str(stats)
            )
            env.pop("SSH_AUTH_SOCK", None)
            heap = tmp / "heap.jsonl"  # soak_child's watcher: a line a period
            command = (
                f"{sys.executable} bench/_soak_child.py {heap} {period_s:g}"
                f"{' --tracemalloc' if trace else ''}{' --collect' if collect else ''}"
                f" -- --interval {interval_s:g} {' '.join(names)}"
            )
            t = ui_cpu.Terminal(tmp / "sock", "soak", command, env)
            if chaos:  # crashes start once every node is up (a fault on a node never seen ok
                # would be no recovery to see)
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and len(
                    soak_faults.ok_nodes(t.tmux("capture-pane", "-p", "-t", t.name), names)
                ) < len(names):
                    time.sleep(0.5)
            started = time.time()
            if chaos:  # the rounds half a minute into each minute: a period's faults are its own
                chaos.first_round_at(started + 30)
            ends = []
            while time.time() - started < minutes * 60:
                cpu0, t0, since = t.cpu_s(), time.monotonic(), time.time()
                while (left := period_s - (time.monotonic() - t0)) > 0:
                    if chaos:
                        chaos.step(time.time(), t.tmux("capture-pane", "-p", "-t", t.name))
                    time.sleep(min(left, 1.0) if chaos else left)
                row: dict[str, Any] = {
                    "minute": (time.time() - started) / 60,
                    "cpu_pct": (t.cpu_s() - cpu0) / (time.monotonic() - t0) * 100,
                    "rss_mb": _rss_of(t.pid),
                    "fds": soak_faults.fd_count(t.pid),
                    "load": os.getloadavg()[0],  # the machine's, at the period's end
                }
                if chaos:
                    row.update(chaos.take(since, time.time()))
                rows.append(row)
                ends.append(time.time())
            t.quit()
        finally:
            lab.close()
            subprocess.run(["tmux", "-S", str(tmp / "sock"), "kill-server"], capture_output=True)
        each = json.loads(stats.read_text())["each"] if stats.exists() else []
        dumps = [json.loads(ln) for ln in heap.read_text().splitlines()] if heap.exists() else []
        kept = (
            REPO / "bench" / "results" / time.strftime("soak-%Y%m%dT%H%M%S", time.gmtime(started))
        )
        kept.mkdir(parents=True, exist_ok=True)  # the raw figures, for a second look
        for found in (stats, heap):
            if found.exists():
                shutil.copy(found, kept / found.name)
    begin = started
    for row, end in zip(rows, ends, strict=True):
        mine = [f for f in each if begin < f[0] <= end]
        row["frame_p95_ms"] = summarise([f[1] for f in mine]).get("p95_ms", 0.0)
        # the UI thread's own CPU over a frame: the wall clock also counts waiting for a core,
        # which on a loaded machine is most of it
        row["frame_cpu_p95_ms"] = summarise([f[2] for f in mine if len(f) > 2]).get("p95_ms", 0.0)
        begin = end
        line = (
            f"   {row['minute']:>6.1f} min {row['cpu_pct']:>8.2f} % {row['frame_p95_ms']:>9.1f} ms"
            f" {row['frame_cpu_p95_ms']:>9.1f} ms"
            f" {row['rss_mb']:>8.1f} MB {row['fds']:>5}"
        )
        if chaos:
            recover = row["recover_s"]
            line += (
                f" {row['faults']:>6} {row['seen_down']:>5} {row['recovered']:>9}"
                f" {statistics.median(recover) if recover else 0:>7.1f} s"
                f" {max(recover) if recover else 0:>5.1f} s {row['open']:>5}"
            )
        print(line + f"  [load {row['load']:.2f}]")
    print(f"   (frames and heap notes kept in {kept})")
    if chaos and chaos.restart_errors:
        print(f"   ({chaos.restart_errors} restarts retried: the port was still held)")
    heap_growth([d for d in dumps if d["t"] <= ends[-1]])  # not one taken while quitting
    return rows


def heap_growth(dumps: list[dict]) -> None:
    """What piled up in the dashboard's heap from the second period's end to the last's."""
    if len(dumps) < 3:
        return
    second, last = dumps[1], dumps[-1]
    print(
        f"   heap, second period's end -> last: objects gc tracks {second['gc_objects']} -> {last['gc_objects']}"
        f" (frozen {second['frozen']} -> {last['frozen']}),"
        f" blocks {second['blocks']} -> {last['blocks']},"
        f" gen2 collections {second['gc_stats'][2]['collections']} -> {last['gc_stats'][2]['collections']}"
    )
    before, after = dict(second["types"]), dict(last["types"])
    grew = sorted(((after[k] - before.get(k, 0), k) for k in after), reverse=True)[:8]
    print("   types that grew most: " + ", ".join(f"{k} +{n}" for n, k in grew if n > 0))
    print(
        "   at each period's end"
        + (" (after a full collection: alive only)" if last.get("collected_first") else "")
        + ": k objects "
        + " ".join(f"{d['gc_objects'] / 1000:.0f}" for d in dumps)
        + ", k blocks "
        + " ".join(f"{d['blocks'] / 1000:.0f}" for d in dumps)
    )
    for where, size, count in last.get("grew", [])[:10]:
        print(f"      {size / 1024:>9.1f} KiB {count:>+7} blocks  {where}")


def _rss_of(pid: int) -> float:
    line = next(
        ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("VmRSS:")
    )
    return int(line.split()[1]) / 1024


def spread(rows: list[dict], key: str) -> str:
    """Largest over smallest from the second period on (the first fills the windows)."""
    values = [r[key] for r in rows[1:]] or [r[key] for r in rows]
    low, high = min(values), max(values)
    return f"{key} {low:.3g}–{high:.3g} ({(high / low - 1) * 100 if low else 0:.0f} %)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--hours", type=float, default=2.0, help="simulated hours")
    parser.add_argument("--period-min", type=float, default=10.0, help="(simulated) minutes a row")
    parser.add_argument(
        "--lab", type=int, default=0, help="N real sshd lab nodes instead of the demo"
    )
    parser.add_argument("--jump", action="store_true", help="the lab nodes behind one jump host")
    parser.add_argument("--interval", type=float, default=0.25, help="the lab probes' interval, s")
    parser.add_argument(
        "--minutes", type=float, default=30.0, help="wall-clock minutes of the lab soak"
    )
    parser.add_argument(
        "--faults", type=int, default=0, help="lab nodes crashed and restarted every minute"
    )
    parser.add_argument(
        "--down-s", type=float, default=15.0, help="how long a crashed node stays down"
    )
    parser.add_argument("--seed", type=int, default=7, help="the faults' rotating choice")
    parser.add_argument(
        "--heap-collect",
        action="store_true",
        help="count only live objects in the heap notes (a full collection before each)",
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="trace the dashboard's allocations (a diagnosis: its CPU is then not the dashboard's)",
    )
    args = parser.parse_args()
    if args.lab:
        print(
            f"soak over real sshd: {args.lab} lab nodes{' behind one jump' if args.jump else ''}, probes every"
            f" {args.interval:g} s (history fills {1 / args.interval:g}x faster than at 1 Hz),"
            f" {args.minutes:g} wall-clock min"
            + (
                f", {args.faults} nodes crashed a minute (down {args.down_s:g} s, seed {args.seed};"
                " recovery read from the screen)"
                if args.faults
                else ""
            )
            + f" [load {os.getloadavg()[0]:.2f}]"
        )
        head = f"   {'at':>10} {'CPU':>10} {'frame p95':>12} {'its CPU':>12} {'RSS':>11} {'fds':>5}"
        if args.faults:
            head += f" {'faults':>6} {'seen':>5} {'recovered':>9} {'back p50':>9} {'max':>7} {'open':>5}"
        print(head)
        rows = lab_soak(
            args.lab,
            args.jump,
            args.interval,
            args.minutes,
            args.period_min * 60,
            args.faults,
            args.down_s,
            args.seed,
            args.tracemalloc,
            args.heap_collect,
        )
        lab_keys = ("cpu_pct", "frame_p95_ms", "frame_cpu_p95_ms", "rss_mb", "fds")
        print(f"   from the second period on: {', '.join(spread(rows, k) for k in lab_keys)}")
        return 0
    period_s = max(1, int(args.period_min * 60))
    print(
        f"soak, time-compressed: {args.nodes} demo nodes x {args.gpus} GPUs, {args.hours:g} simulated h,"
        f" fleet screen headless {SIZE[0]}x{SIZE[1]}; CPU is this process's [load {os.getloadavg()[0]:.2f}]"
    )
    print(
        f"   {'period':>10} {'intake/s':>11} {'frame p50':>11} {'p95':>11} {'2 h chart':>11} {'RSS':>10} {'blocks':>9}"
    )
    started = time.monotonic()
    rows = asyncio.run(soak(args.nodes, args.gpus, args.hours, period_s))
    keys = ("intake_ms", "frame_p50_ms", "frame_p95_ms", "chart_ms", "rss_mb")
    print(f"   from the second period on: {', '.join(spread(rows, k) for k in keys)}")
    print(f"   (target: CPU and RSS within 10 %; {time.monotonic() - started:.0f} s of wall clock)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
