"""The exporter's cost per scrape for 64 nodes x 8 GPUs, against node_exporter's for one node.

The fleet is the demo's (seeded, 64 nodes x 8 GPUs, stepped two minutes so alerts are open),
held in a FleetState with the rule engine, as ``dltui export`` holds it. Per scrape:

- dltui: the CPU of rendering the page (``render`` + encoding: what a scrape costs when the
  fleet changed since the last one), and of a scrape served from the cache (many scrapers
  between two samples); measured with ``time.process_time`` over repeated renders;
- reference, in the same run: a real node_exporter (Debian's prometheus-node-exporter, default
  collectors) on loopback scraped over HTTP; its CPU per scrape read from /proc/PID/stat.

    python bench/exporter_scrape.py [--nodes 64] [--gpus 8] [--scrapes 50]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.core.rules import build_engine  # noqa: E402
from dltui.core.state import FleetState  # noqa: E402
from dltui.export.metrics import CachedPage, render  # noqa: E402
from dltui.transport.demo import DemoTransport  # noqa: E402
from tests.prometheus.tools import start_node_exporter  # noqa: E402


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def node_exporter_per_scrape(scrapes: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        daemon, addr = start_node_exporter(Path(tmp))
        try:
            url = f"http://{addr}/metrics"
            for _ in range(3):  # warm up: first scrapes open files and start collectors
                urllib.request.urlopen(url).read()
            before = cpu_seconds(daemon.proc.pid)
            size = 0
            for _ in range(scrapes):
                size = len(urllib.request.urlopen(url).read())
            return (cpu_seconds(daemon.proc.pid) - before) / scrapes, size
        finally:
            daemon.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--scrapes", type=int, default=50)
    args = ap.parse_args()
    demo = DemoTransport(nodes=args.nodes, gpus=args.gpus)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 130)
    alerts = sum(len(n.alerts) for n in fleet)

    t0 = time.process_time()
    for _ in range(args.scrapes):
        body = render(fleet).encode()
    fresh = (time.process_time() - t0) / args.scrapes
    page = CachedPage(fleet)
    page.body()
    t0 = time.process_time()
    for _ in range(args.scrapes * 100):
        page.body()
    cached = (time.process_time() - t0) / (args.scrapes * 100)

    ne_cpu, ne_size = node_exporter_per_scrape(args.scrapes)
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    print(
        f"dltui export, {args.nodes} nodes x {args.gpus} GPUs ({alerts} open alerts): "
        f"{series} series, {len(body) / 1e3:.0f} kB a page"
    )
    print(f"  CPU per scrape, fleet changed since the last one: {fresh * 1e3:.1f} ms")
    print(f"  CPU per scrape, served from the cache: {cached * 1e6:.1f} us")
    print(
        f"node_exporter (reference, one node, default collectors): {ne_cpu * 1e3:.1f} ms CPU "
        f"per scrape, {ne_size / 1e3:.0f} kB a page"
    )
    if ne_cpu > 0:
        print(
            f"ratio dltui ({args.nodes}x{args.gpus}) / node_exporter (1 node): "
            f"{fresh / ne_cpu:.2f}x per changed scrape, {cached / ne_cpu:.4f}x from the cache"
        )


if __name__ == "__main__":
    main()
