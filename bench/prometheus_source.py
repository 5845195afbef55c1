"""The Prometheus source at fleet scale: 2,000 nodes x 8 GPUs.

A real Prometheus scrapes a real node_exporter (this machine) and a loopback endpoint serving
the dcgm-exporter A100 capture (tests/fixtures/dcgm-exporter), as in the tests. The source's
queries (three a refresh, and the GPU facts query) are answered once by that Prometheus; the
answers are then *recorded* and scaled to 2,000 nodes (each series copied per node with its
``instance`` / ``Hostname`` rewritten, the GPU series also per GPU 0-7 with their own UUIDs)
and served back, gzip-compressed as Prometheus sends them, from a loopback HTTP server of
their own speaking Prometheus's /api/v1/query, so the transport does exactly what it does
against a real server: HTTP queries, JSON decoding, mapping, delivery into the fleet state
and rules.

Measured, ``--runs`` times (ranges printed):
- on screen, as a user sees it: from launching ``dltui --prometheus URL`` in tmux (160x48)
  to the first frame showing the full fleet: the header counting all 2,000 nodes ok and
  16,000 GPUs, and every visible row filled (process start, imports, first frames included);
  reference in the same run, the same dashboard on 10 nodes (its start-up floor);
- the same without a UI: from the transport's start to all 2,000 nodes holding a sample in
  the FleetState the screens draw from (rules on);
- CPU per refresh at steady state: of this process over ``--refreshes`` (no UI), and of the
  dashboard process over ``--window`` seconds (its 5 s refresh, UI included); reference in
  the same run: decoding the same answers' JSON alone (json.loads);
- queries per refresh.

    python bench/prometheus_source.py [--nodes 2000] [--gpus 8] [--refreshes 5] [--runs 3]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.core.rules import build_engine  # noqa: E402
from dltui.core.state import FleetState  # noqa: E402
from dltui.transport.prometheus import Client, PrometheusTransport, queries  # noqa: E402
from dltui.transport.prometheus.queries import (  # noqa: E402
    FACTS_EVERY_S,
    GPU_FACTS_QUERY,
    REFRESH_QUERIES,
)
from dltui.transport.prometheus.source import DEFAULT_REFRESH_S  # noqa: E402
from tests.prometheus.promtext import capture  # noqa: E402
from tests.prometheus.tools import gpu_node_lab  # noqa: E402


def record(base: Path) -> tuple[dict[str, dict], str]:
    """The three answers from a real Prometheus over a real node_exporter and the capture."""
    with gpu_node_lab(base, capture("a100-mig_ub20-a100-k8s.prom")) as (url, nodename):
        client = Client(url)
        keys = list(queries())

        async def ask() -> list[dict]:
            return await asyncio.gather(*(client.query(queries()[k]) for k in keys))

        return dict(zip(keys, asyncio.run(ask()), strict=True)), nodename


def scale(answers: dict[str, dict], nodename: str, nodes: int, gpus: int) -> dict[str, bytes]:
    """Each series copied per node (and per GPU for DCGM series), as the query API answers."""
    out: dict[str, bytes] = {}
    for key, data in answers.items():
        series = []
        for i in range(nodes):
            name = f"node{i:04d}"
            for s in data["result"]:
                m = s["metric"]
                copies = range(gpus) if key in ("gpu", "gpu_facts") else (None,)
                for gpu in copies:
                    c = copy.deepcopy(s)
                    c["metric"]["instance"] = m["instance"].replace("127.0.0.1", name)
                    if m.get("Hostname"):
                        c["metric"]["Hostname"] = name
                    if m.get("nodename") == nodename:
                        c["metric"]["nodename"] = name
                    if gpu is not None:
                        c["metric"]["gpu"] = str(gpu)
                        c["metric"]["UUID"] = f"GPU-{i:08d}-{gpu:04d}"
                    series.append(c)
        out[key] = json.dumps(  # compact, as Prometheus writes it
            {"status": "success", "data": {"resultType": data["resultType"], "result": series}},
            separators=(",", ":"),
        ).encode()
    return out


_SERVER = r"""
import gzip, json, sys, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
index = json.load(open(sys.argv[1]))
by_query = {q: gzip.compress(open(path, "rb").read(), 6) for q, path in index.items()}
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        body = by_query[form["query"][0]]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def serve(bodies: dict[str, bytes], tmp: Path) -> tuple[subprocess.Popen, str, int]:
    """The recorded answers, gzip-compressed as Prometheus sends them, from a process of their
    own (as a Prometheus server is): this process's CPU is the client's alone."""
    tmp.mkdir(parents=True, exist_ok=True)
    index = {}
    for key, text in queries().items():
        path = tmp / f"{key}.json"
        path.write_bytes(bodies[key])
        index[text] = str(path)
    (tmp / "index.json").write_text(json.dumps(index))
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(tmp / "index.json")], stdout=subprocess.PIPE, text=True
    )
    port = int(proc.stdout.readline())
    wire = sum(len(gzip.compress(bodies[k], 6)) for k in REFRESH_QUERIES)
    return proc, f"http://127.0.0.1:{port}", wire


async def measure(url: str, refreshes: int) -> dict[str, float]:
    """In this process, into the FleetState the screens draw from (rules on), no UI."""
    transport = PrometheusTransport(url, interval_s=1.0)
    fleet = FleetState([], engine=build_engine())
    stalls = [0.0]
    watch = asyncio.create_task(loop_stalls(stalls))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await transport.update(fleet)
    first_s = time.perf_counter() - wall0
    first_cpu = time.process_time() - cpu0
    watch.cancel()
    full = sum(1 for n in fleet if n.sample is not None)
    first_queries = transport.client.queries
    cpu0 = time.process_time()
    for _ in range(refreshes):
        await transport.update(fleet)
    return {
        "first_s": first_s,
        "first_cpu_s": first_cpu,
        "nodes_with_sample": full,
        "cpu_per_refresh_s": (time.process_time() - cpu0) / refreshes,
        "first_queries": first_queries,
        "longest_stall_s": stalls[0],
        "queries_per_refresh": (transport.client.queries - first_queries) / refreshes,
    }


async def loop_stalls(longest: list[float], every_s: float = 0.005) -> None:
    """The longest the event loop went without running this task (a key press waits that
    long): each wake-up's lateness past its ``every_s`` sleep."""
    while True:
        t = time.perf_counter()
        await asyncio.sleep(every_s)
        longest[0] = max(longest[0], time.perf_counter() - t - every_s)


def full_screen(text: str, nodes: int, gpus: int) -> bool:
    """The fleet screen as a user reads it: the header counts every node ok and every GPU,
    and each visible row is filled (a temperature for each GPU, a CPU share)."""
    lines = text.splitlines()
    if not lines or f"● {nodes}  · {nodes * gpus} GPUs" not in lines[0]:
        return False
    rows = [line for line in lines if line.startswith(" node")]
    return len(rows) >= min(nodes, 40) and all(
        line.count("°") == gpus and "%" in line for line in rows
    )


def dashboard(
    url: str, nodes: int, gpus: int, tmp: Path, window_s: float
) -> tuple[float, float, float]:
    """Launch ``dltui --prometheus URL`` in tmux (160x48): seconds to the first full fleet
    screen (process start, imports, first frames included) and the CPU the dashboard had
    used by then (what a loaded machine stretches), then its own CPU per refresh (every 5 s,
    its default) over ``window_s`` of steady state, its UI included."""
    from bench.ui_cpu import Terminal, clean_env

    started = time.monotonic()
    term = Terminal(
        tmp / "sock", "prom", f"{sys.executable} -m dltui --prometheus {url}", clean_env(tmp)
    )
    try:
        while not full_screen(term.tmux("capture-pane", "-p", "-t", "prom"), nodes, gpus):
            if time.monotonic() - started > 120:
                raise SystemExit("the full fleet never showed")
            time.sleep(0.05)
        screen_s, screen_cpu = time.monotonic() - started, term.cpu_s()
        if window_s <= 0:
            return screen_s, screen_cpu, float("nan")
        time.sleep(DEFAULT_REFRESH_S)  # past the first refresh and its delivery
        cpu0, t0 = term.cpu_s(), time.monotonic()
        time.sleep(window_s)
        per_refresh = (term.cpu_s() - cpu0) / (time.monotonic() - t0) * DEFAULT_REFRESH_S
        return screen_s, screen_cpu, per_refresh
    finally:
        term.quit()


def span(values: list[float], unit: str = " s") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2f}{unit}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}{unit}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--refreshes", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3, help="dashboard launches (ranges reported)")
    ap.add_argument("--window", type=float, default=10.0, help="steady-state CPU window, s")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        answers, nodename = record(Path(tmp))
    bodies = scale(answers, nodename, args.nodes, args.gpus)
    small = scale(answers, nodename, 10, args.gpus)
    refresh_bodies = [bodies[k] for k in REFRESH_QUERIES]
    size_mb = sum(len(b) for b in refresh_bodies) / 1e6
    series = {k: len(json.loads(b)["data"]["result"]) for k, b in bodies.items()}
    decode = []
    for _ in range(args.runs):
        cpu0 = time.process_time()
        for body in refresh_bodies:
            json.loads(body)
        decode.append(time.process_time() - cpu0)
    runs, screens, screen_cpu, floors, dash_cpu = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        server, url, wire = serve(bodies, Path(tmp) / "big")
        floor_server, floor_url, _ = serve(small, Path(tmp) / "small")
        try:
            for _ in range(args.runs):
                runs.append(asyncio.run(measure(url, args.refreshes)))
                screen_s, cpu_s, cpu = dashboard(
                    url, args.nodes, args.gpus, Path(tmp), args.window
                )
                screens.append(screen_s)
                screen_cpu.append(cpu_s)
                dash_cpu.append(cpu)
                floors.append(dashboard(floor_url, 10, args.gpus, Path(tmp), 0)[0])
        finally:
            for proc in (server, floor_server):
                proc.terminate()
                proc.wait()
    steady_q = runs[0]["queries_per_refresh"]
    print(
        f"fleet: {args.nodes} nodes x {args.gpus} GPUs from Prometheus (recorded answers, scaled); "
        f"{args.runs} runs, ranges min-max"
    )
    print(
        f"answers per refresh: {size_mb:.1f} MB JSON ({wire / 1e6:.1f} MB gzip on the wire); "
        f"series gpu {series['gpu']}, host {series['host']}, rates {series['rates']}; "
        f"facts query {series[GPU_FACTS_QUERY]} series"
    )
    print(
        f"queries per refresh: {steady_q:.0f}, plus the facts query on the first refresh "
        f"({runs[0]['first_queries']:.0f} then) and every {FACTS_EVERY_S:.0f} s: "
        f"{steady_q + DEFAULT_REFRESH_S / FACTS_EVERY_S:.2f} on average at the default "
        f"{DEFAULT_REFRESH_S:g} s refresh (independent of the fleet size)"
    )
    print(
        f"first full fleet in the state (no UI): {span([r['first_s'] for r in runs])} wall, "
        f"{span([r['first_cpu_s'] for r in runs])} CPU; "
        f"{min(r['nodes_with_sample'] for r in runs):.0f}/{args.nodes} nodes with a sample; "
        f"longest event-loop stall meanwhile {span([r['longest_stall_s'] for r in runs])}"
    )
    print(
        f"first full fleet screen, dltui --prometheus in tmux, from launch: {span(screens)} "
        f"(target <= 3 s), the dashboard's CPU by then {span(screen_cpu)}; reference, the "
        f"same dashboard on 10 nodes: {span(floors)}"
    )
    per = [r["cpu_per_refresh_s"] for r in runs]
    print(
        f"CPU per refresh, steady state, no UI: {span(per)} "
        f"(reference, json.loads of the same answers: {span(decode)}; "
        f"ratio {span([p / d for p, d in zip(per, decode, strict=True)], 'x')})"
    )
    print(
        f"CPU per refresh, steady state, the dashboard process (UI included, {args.window:g} s "
        f"window): {span(dash_cpu)}"
    )


if __name__ == "__main__":
    main()
