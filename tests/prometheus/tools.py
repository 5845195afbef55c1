"""Real Prometheus tools for the tests: promtool, prometheus, node_exporter (Debian packages
``prometheus`` and ``prometheus-node-exporter``), started unprivileged on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.needs import require

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"


def require_tool(path: str, package: str) -> None:
    """CI must have the tool (a gap fails there); on a workstation it skips."""
    require(os.path.exists(path), f"{path} is missing: install the Debian package {package}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def promtool_check(text: str) -> subprocess.CompletedProcess:
    require_tool(PROMTOOL, "prometheus")
    return subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True
    )


def wait_http(
    url: str, what: str, proc: subprocess.Popen, log: Path, timeout_s: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready at {url}: {log.read_text()[-2000:]}")
        time.sleep(0.05)


class Daemon:
    """A server process of the test's own, output to ``log``; ``stop`` ends it by its PID."""

    def __init__(
        self, argv: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
    ):
        self.log = log
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=cwd,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_node_exporter(base: Path, *args: str) -> tuple[Daemon, str]:
    """``args``: more flags (``--path.sysfs=DIR`` for a captured sysfs tree)."""
    require_tool(NODE_EXPORTER, "prometheus-node-exporter")
    port = free_port()
    d = Daemon(
        [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", *args], base / "node_exporter.log"
    )
    wait_http(f"http://127.0.0.1:{port}/metrics", "node_exporter", d.proc, d.log)
    return d, f"127.0.0.1:{port}"


def start_prometheus(
    base: Path, jobs: dict[str, list[str]], interval: str = "1s", port: int | None = None
) -> tuple[Daemon, str]:
    """A real Prometheus scraping ``jobs`` (job name -> targets) every ``interval``, on
    ``port`` (free one if None: name it beforehand for a job that scrapes Prometheus itself)."""
    require_tool(PROMETHEUS, "prometheus")
    port = port or free_port()
    scrape = "".join(
        f"  - job_name: {json.dumps(job)}\n"
        f"    static_configs:\n      - targets: {json.dumps(targets)}\n"
        for job, targets in jobs.items()
    )
    base.mkdir(parents=True, exist_ok=True)
    cfg = base / "prometheus.yml"
    cfg.write_text(
        f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
        f"scrape_configs:\n{scrape}"
    )
    d = Daemon(
        [
            PROMETHEUS,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={base / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        base / "prometheus.log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/-/ready", "prometheus", d.proc, d.log)
    return d, url


def query(url: str, promql: str) -> list[dict]:
    q = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def wait_query(url: str, promql: str, ok, timeout_s: float = 30.0) -> list[dict]:
    """Poll ``promql`` until ``ok(result)``: scrapes land on Prometheus's own schedule."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = query(url, promql)
        if ok(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{promql}: no satisfying answer in {timeout_s} s, last {result}")
        time.sleep(0.2)


class Endpoint:
    """Serves one exposition page at /metrics on loopback (a scrape target); ``body`` may be
    replaced while it runs (a node whose series change)."""

    def __init__(self, body: str):
        self.body = body
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                data = endpoint.body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def gpu_node_lab(base: Path, dcgm_page: str, *node_exporter_args: str) -> Iterator[tuple[str, str]]:
    """A real Prometheus scraping every second a real node_exporter (this machine) and an
    endpoint serving ``dcgm_page`` with its ``Hostname`` set to this machine's name, so the two
    join as on a real GPU node. Yields (Prometheus URL, node name) once both were scraped twice
    (irate needs two points)."""
    nodename = os.uname().nodename
    dcgm = Endpoint(re.sub(r'Hostname="[^"]*"', f'Hostname="{nodename}"', dcgm_page))
    node_exporter = prom = None
    try:
        node_exporter, node_addr = start_node_exporter(base, *node_exporter_args)
        prom, url = start_prometheus(base / "prom", {"node": [node_addr], "dcgm": [dcgm.address]})
        wait_query(url, "irate(node_cpu_seconds_total[2m])", bool)
        wait_query(url, "DCGM_FI_DEV_GPU_TEMP", bool)
        yield url, nodename
    finally:
        if prom is not None:
            prom.stop()
        if node_exporter is not None:
            node_exporter.stop()
        dcgm.close()
