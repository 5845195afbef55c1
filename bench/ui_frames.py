"""Frame cost of the fleet screen per fleet size, in this process's CPU time, and key latency.

    python bench/ui_frames.py [--sizes 8,64,256,512,2048] [--seconds 20] [--profile 512]

A headless Textual app (the same ``build_app`` as the command line) at 160x48 on the seeded
demo fleet (8 GPUs a node). Every simulated second: all nodes' samples go in (not counted:
that is the transports' and the rules' cost, not the screen's), then two redraw ticks, each
timed from the tick to the painted screen. CPU time (``time.process_time``) is what this
process spent, so other load on a shared machine does not count; wall time is printed too.
Samples go in through the app's own intake (``heap.watching``: what transports write into).
Then a key (cursor down) is pressed between samples, and the time from the key event until the
screen under it has been painted is measured by the app itself (``FrameStats.key_done``; the
Pilot's own waits are not counted).
Targets (issue 11): 512 nodes frame p95 <= 33 ms, max <= 100 ms; 2048 usable (compact).
Prints figures and ratios against 8 nodes measured in the same run; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dltui.config import Config  # noqa: E402
from dltui.transport.demo import DemoTransport  # noqa: E402
from dltui.ui.app import build_app  # noqa: E402
from dltui.ui.frame_stats import FrameStats, summarise  # noqa: E402
from dltui.ui.themes import PACKAGED_DIR  # noqa: E402
from dltui.wiring import fleet_state  # noqa: E402

SIZE = (160, 48)
WARM_UP_S = 30  # simulated seconds before measuring: rules past their durations


async def frames(nodes: int, seconds: int, profile: cProfile.Profile | None) -> dict:
    demo = DemoTransport(nodes=nodes, gpus=8, seed=7)
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    app = build_app([], Config(), fleet=fleet, theme_dirs=[PACKAGED_DIR])
    cpu_ms: list[float] = []
    wall_ms: list[float] = []
    app.frame_stats = stats = FrameStats(Path("/dev/null"))  # key latencies, kept in memory
    async with app.run_test(size=SIZE) as pilot:
        # what transports write into (a build before the intake existed: the fleet itself)
        intake = app.heap.watching(fleet) if hasattr(app.heap, "watching") else fleet
        demo.step_into(intake, WARM_UP_S)
        app.tick()
        await pilot.pause()
        stats.frames_ms.clear()
        for second in range(seconds):
            demo.step_into(intake, 1)
            for _ in range(2):  # TICK_S = 0.5: two redraws a second
                if profile:
                    profile.enable()
                cpu, wall = time.process_time(), time.perf_counter()
                app.tick()
                await pilot.pause()  # until the screen has been painted
                cpu_ms.append((time.process_time() - cpu) * 1000)
                wall_ms.append((time.perf_counter() - wall) * 1000)
                if profile:
                    profile.disable()
            if second % 4 == 3:
                await pilot.press("down")
    return {"cpu": summarise(cpu_ms), "wall": summarise(wall_ms), "keys": summarise(getattr(stats, "keys_ms", []))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,64,256,512,2048")
    parser.add_argument("--seconds", type=int, default=20, help="simulated seconds measured")
    parser.add_argument("--profile", type=int, default=0, help="profile the frames of this size")
    parser.add_argument("--sort", default="cumulative", help="profile order (pstats key)")
    args = parser.parse_args()
    print(f"fleet screen frames, headless {SIZE[0]}x{SIZE[1]}, 2 redraws per simulated second")
    print(
        f"   {'nodes':>5} {'CPU p50':>9} {'p95':>8} {'max':>8} {'vs 8':>6}"
        f" {'wall p95':>9} {'max':>8} {'key p95':>9} {'CPU/s of one core':>18}"
    )
    base = None
    for n in (int(s) for s in args.sizes.split(",")):
        profile = cProfile.Profile() if n == args.profile else None
        sort_by = args.sort
        r = asyncio.run(frames(n, args.seconds, profile))
        cpu, wall, keys = r["cpu"], r["wall"], r["keys"]
        base = base or cpu["p95_ms"]
        share = 2 * cpu["mean_ms"] / 1000  # two frames a second
        print(
            f"   {n:>5} {cpu['p50_ms']:>6.1f} ms {cpu['p95_ms']:>5.1f} ms {cpu['max_ms']:>5.1f} ms"
            f" {cpu['p95_ms'] / base:>5.1f}x {wall['p95_ms']:>6.1f} ms {wall['max_ms']:>5.1f} ms"
            + (f" {keys['p95_ms']:>6.1f} ms" if keys["frames"] else "       n/a")
            + f" {share * 100:>16.1f} %"
        )
        if n == 512:
            met = cpu["p95_ms"] <= 33 and cpu["max_ms"] <= 100
            verdict = "met" if met else "NOT met"
            print(f"   512 nodes: frame p95 <= 33 ms and max <= 100 ms (CPU time): {verdict}")
        if profile:
            pstats.Stats(profile).sort_stats(sort_by).print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
