"""How long the attribution scan holds the dashboard's event loop at once, 2048 demo nodes.

``AttributionLookups.scan`` looks at every node's newest sample once a second (issue 35: a
key waits behind whatever holds the loop). Measured in the same run, on the seeded demo
fleet (2048 x 8 GPUs, two steps in, every GPU process with its Slurm job), after a first
pass has asked about every job, i.e. a steady second with nothing due:

- the reference: the scan as it was before, a task for every node started at once
  (``asyncio.gather`` over 2048 coroutines: their first steps all run in one turn of the loop);
- the scan as it is: plain loops, ``SCAN_SLICE`` nodes between yields, a coroutine only for a
  node with a lookup due.

For each: the longest gap between two turns of a ticker task while the scan runs (what a key
would wait at most) and the scan's CPU (``time.thread_time``). Target: the longest hold under
a frame's share, a few milliseconds.

    python bench/attribution_scan.py [--rounds 3] [--nodes 2048]

Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dltui.config import Config  # noqa: E402
from dltui.transport.attribution import AttributionLookups  # noqa: E402
from dltui.transport.demo import DemoTransport  # noqa: E402
from dltui.wiring import fleet_state  # noqa: E402


class Quiet:
    """The sink: lookups say nothing a steady second (no tool missing in the demo)."""

    def on_event(self, *args) -> None:
        pass

    def on_status(self, *args) -> None:
        pass


async def task_per_node_scan(lookups: AttributionLookups, sink) -> None:
    """The reference: the scan before issue 35, one task per node, all at once."""

    async def refresh(name: str) -> None:
        lookup = lookups.refresh_due(name, sink)
        if lookup is not None:
            await lookup

    await asyncio.gather(*(refresh(name) for name in lookups.nodes))


async def held(scan, lookups: AttributionLookups) -> tuple[float, float]:
    """(longest gap between the loop's turns, scan CPU), milliseconds, while ``scan`` runs."""
    gaps: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    cpu = time.thread_time()
    await scan(lookups, Quiet())
    cpu = time.thread_time() - cpu
    done = True
    await task
    return max(gaps) * 1000, cpu * 1000


async def measure(nodes: int, rounds: int) -> None:
    demo = DemoTransport(nodes=nodes, gpus=8, seed=7)
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    demo.step_into(fleet, 2)
    scans = (("task per node (before)", task_per_node_scan), ("slices (now)", AttributionLookups.scan))
    for r in range(1, rounds + 1):
        for name, scan in scans:
            lookups = AttributionLookups(fleet, demo, demo.names)
            await scan(lookups, Quiet())  # the first pass asks about every job
            gap, cpu = await held(scan, lookups)
            print(
                f"   round {r}: {name:>22}: loop held at most {gap:6.2f} ms, scan CPU {cpu:6.2f} ms"
                f" [load {os.getloadavg()[0]:.2f}]"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=2048)
    args = parser.parse_args()
    print(f"attribution scan, {args.nodes} demo nodes x 8 GPUs, a steady second (nothing due)")
    asyncio.run(measure(args.nodes, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
