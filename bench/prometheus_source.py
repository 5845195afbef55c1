"""The Prometheus source at fleet scale: 2,000 nodes x 8 GPUs.

A real Prometheus scrapes a real node_exporter (this machine) and a loopback endpoint serving
the dcgm-exporter A100 capture (tests/fixtures/dcgm-exporter), as in the tests. The source's
three queries are answered once by that Prometheus; the answers are then *recorded* and scaled
to 2,000 nodes (each series copied per node with its ``instance`` / ``Hostname`` rewritten, the
GPU series also per GPU 0-7 with their own UUIDs) and served back from a loopback HTTP server
speaking Prometheus's /api/v1/query, so the transport does exactly what it does against a real
server: three HTTP queries, JSON decoding, mapping, delivery into the fleet state and rules.

Measured:
- time to the first full fleet: from the transport's start to all 2,000 nodes holding a sample
  in the FleetState the screens draw from; and, on screen, from launching
  ``dltui --prometheus URL`` in tmux (160x48) to its fleet screen counting every node ok and
  every GPU (the process start, imports and first frames included);
- CPU per refresh of this process (the answers come gzip-compressed, as Prometheus sends them,
  from a server process of their own) over several refreshes, and queries per refresh;
- reference in the same run: decoding the same answers' JSON alone (json.loads), the floor
  any client of these answers pays.

    python bench/prometheus_source.py [--nodes 2000] [--gpus 8] [--refreshes 5]

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
        out[key] = json.dumps(
            {"status": "success", "data": {"resultType": data["resultType"], "result": series}}
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
    wire = sum(len(gzip.compress(b, 6)) for b in bodies.values())
    return proc, f"http://127.0.0.1:{port}", wire


async def measure(url: str, nodes: int, refreshes: int) -> dict[str, float]:
    transport = PrometheusTransport(url, interval_s=1.0)
    fleet = FleetState([], engine=build_engine())
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await transport.update(fleet)
    first_s = time.perf_counter() - wall0
    first_cpu = time.process_time() - cpu0
    full = sum(1 for n in fleet if n.sample is not None)
    cpu0 = time.process_time()
    for _ in range(refreshes):
        await transport.update(fleet)
    per_refresh = (time.process_time() - cpu0) / refreshes
    return {
        "first_s": first_s,
        "first_cpu_s": first_cpu,
        "nodes_with_sample": full,
        "cpu_per_refresh_s": per_refresh,
        "queries_per_refresh": transport.client.queries / transport.refreshes,
    }


def first_screen(url: str, nodes: int, gpus: int, tmp: Path) -> float:
    """Seconds from launching the dashboard to its header counting the whole fleet."""
    from bench.ui_cpu import Terminal, clean_env

    started = time.monotonic()
    term = Terminal(
        tmp / "sock", "prom", f"{sys.executable} -m dltui --prometheus {url}", clean_env(tmp)
    )
    try:
        term.wait_for(f"● {nodes}  · {nodes * gpus} GPUs", limit_s=120)
        return time.monotonic() - started
    finally:
        term.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--refreshes", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        answers, nodename = record(Path(tmp))
    bodies = scale(answers, nodename, args.nodes, args.gpus)
    size_mb = sum(len(b) for b in bodies.values()) / 1e6
    series = {k: len(json.loads(b)["data"]["result"]) for k, b in bodies.items()}
    cpu0 = time.process_time()
    for body in bodies.values():
        json.loads(body)
    decode_s = time.process_time() - cpu0
    with tempfile.TemporaryDirectory() as tmp:
        server, url, wire = serve(bodies, Path(tmp))
        try:
            r = asyncio.run(measure(url, args.nodes, args.refreshes))
            screen_s = first_screen(url, args.nodes, args.gpus, Path(tmp))
        finally:
            server.terminate()
            server.wait()
    print(
        f"fleet: {args.nodes} nodes x {args.gpus} GPUs from Prometheus (recorded answers, scaled)"
    )
    print(
        f"answers: {size_mb:.1f} MB JSON ({wire / 1e6:.1f} MB gzip on the wire) per refresh; "
        f"series gpu {series['gpu']}, host {series['host']}, rates {series['rates']}"
    )
    print(f"queries per refresh: {r['queries_per_refresh']:.0f} (independent of the fleet size)")
    print(
        f"first full fleet: {r['first_s']:.2f} s wall ({r['first_cpu_s']:.2f} s CPU), "
        f"{r['nodes_with_sample']}/{args.nodes} nodes with a sample"
    )
    print(
        f"first full fleet screen, dltui --prometheus in tmux, from launch: {screen_s:.2f} s "
        "(target <= 3 s)"
    )
    print(
        f"CPU per refresh: {r['cpu_per_refresh_s']:.2f} s "
        f"(reference, json.loads of the same answers: {decode_s:.2f} s; "
        f"ratio {r['cpu_per_refresh_s'] / decode_s:.1f}x)"
    )


if __name__ == "__main__":
    main()
