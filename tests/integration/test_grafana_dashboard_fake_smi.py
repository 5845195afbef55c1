"""grafana/dltui-fleet.json against a real Prometheus scraping ``dltui export gpu01`` (real sshd,
the real probe, a fake ``nvidia-smi`` replaying the real H100 capture): every panel's PromQL,
template variables substituted as Grafana would, is accepted, and the panels that a healthy
GPU node always feeds return data. The checked-in JSON is what scripts/grafana_dashboard.py
writes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from .sshd import REPO, client_env
from tests.prometheus.tools import Daemon, free_port, start_prometheus, wait_http, wait_query

DASHBOARD = REPO / "grafana" / "dltui-fleet.json"
# What Grafana puts in for its own variables (a 1 s scrape: a rate needs a few scrapes' span)
GRAFANA_VARS = {"$__rate_interval": "15s", "$__interval": "5s", "$__range": "5m"}
# Panels a node that reports no such thing leaves empty, and why; every other panel must
# answer with data for the node.
MAY_BE_EMPTY = {
    "Open alerts by severity": "a healthy node has no open alert",
    "Open alerts (how long, in seconds)": "a healthy node has no open alert",
    "Errors: ECC (volatile), pending row remaps, PCIe replays in the last hour": "the capture has no replay counter",
    "Unit and checkpoint alerts (failed, flapping, stale checkpoint)": "the node runs no unit",
}


def panels() -> list[dict]:
    return [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]


def substitute(expr: str, node: str) -> str:
    for name, value in GRAFANA_VARS.items():
        expr = expr.replace(name, value)
    return expr.replace("$node", node)


def ask(url: str, promql: str) -> dict:
    q = urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as exc:  # 400: Prometheus refused the query
        return json.load(exc)


def test_the_checked_in_dashboard_is_what_the_script_writes():
    out = subprocess.run(
        [sys.executable, "-c", "import scripts.grafana_dashboard as g; print(g.text(), end='')"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == DASHBOARD.read_text()


def test_the_dashboard_has_a_datasource_and_a_node_variable_and_every_panel_uses_them():
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["node"]["query"]["query"] == "label_values(dltui_node_up, node)"
    assert board["schemaVersion"] >= 36  # Grafana 9.x+; 39 is Grafana 10.x
    for p in panels():
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        for target in p["targets"]:
            assert '$node"' in target["expr"], (p["title"], target["expr"])


@pytest.mark.oldest_python_only  # Prometheus runs the queries
@pytest.mark.sshd
def test_every_panel_query_runs_against_prometheus_scraping_dltui_export_fake_smi(shared_lab, tmp_path):
    env = client_env(shared_lab.make_home(tmp_path / "home"))
    port = free_port()
    exporter = Daemon(
        [sys.executable, "-m", "dltui", "export", "gpu01", "--listen", f"127.0.0.1:{port}", "--interval", "0.5"],
        tmp_path / "export.log",
        env=env,
        cwd=REPO,
    )
    prom = None
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", "dltui export", exporter.proc, exporter.log)
        prom, url = start_prometheus(tmp_path / "prom", {"dltui": [f"127.0.0.1:{port}"]})
        wait_query(url, 'dltui_gpu_temperature_celsius{node="gpu01"}', bool)
        time.sleep(3)  # a few more scrapes, so [1m] windows and rates have points (not asserted on)
        empty, refused = [], []
        for node in (".*", "gpu01"):  # "All", and the one node picked
            for p in panels():
                for target in p["targets"]:
                    answer = ask(url, substitute(target["expr"], node))
                    if answer.get("status") != "success":
                        refused.append((p["title"], target["expr"], answer.get("error")))
                    elif not answer["data"]["result"] and p["title"] not in MAY_BE_EMPTY:
                        empty.append((node, p["title"], target["expr"]))
        assert refused == []
        assert empty == []
    finally:
        if prom is not None:
            prom.stop()
        exporter.stop()
