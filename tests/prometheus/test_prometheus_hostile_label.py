"""A hostile Prometheus label end to end: a real Prometheus scrapes a target whose GPU model label
holds ESC sequences, BEL, markup, HTML, a bidi override and an 8-bit CSI (any target that gets
scraped can write that); ``dltui snapshot --prometheus`` prints none of those bytes, and shows
the label's words in the visible form (the real dcgm-exporter capture of test_prometheus_e2e,
with that ``modelName`` label added to every series, as newer dcgm-exporters label them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.core.text import clean
from tests.hostile import HOSTILE_PRINTED

from .promtext import capture
from .tools import gpu_node_lab

pytestmark = pytest.mark.oldest_python_only  # a real Prometheus: test_prometheus_e2e is the newest Python's smoke

REPO = Path(__file__).resolve().parents[2]
TERMINAL_BYTES = (b"\x1b", b"\x07", "\x9b".encode(), "\u202e".encode(), "\u202c".encode())


@pytest.fixture(scope="module")
def hostile_prometheus(tmp_path_factory):
    page = capture("a100-mig_ub20-a100-k8s.prom").replace(
        'Hostname="ub20-a100-k8s"', f'Hostname="ub20-a100-k8s",modelName="{HOSTILE_PRINTED}"'
    )
    with gpu_node_lab(tmp_path_factory.mktemp("hostile-prometheus"), page) as lab:
        yield lab


def _snapshot(url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "--seconds", "1.5", "--prometheus", url,
         "--match", '{job=~"node|dcgm"}', "--interval", "0.5", *args],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, timeout=60,
    )


@pytest.mark.parametrize("json_output", [False, True])
def test_a_hostile_gpu_model_label_reaches_no_terminal(hostile_prometheus, json_output):
    url, _ = hostile_prometheus
    done = _snapshot(url, *(["--json"] if json_output else []))
    for raw in TERMINAL_BYTES:
        assert raw not in done.stdout + done.stderr, (raw, done.stdout[:400])
    if json_output:
        (node,) = json.loads(done.stdout)["nodes"]
        assert node["facts"]["gpus"][0]["name"] == clean(HOSTILE_PRINTED)
    else:
        assert "␛]0;PWNED␇␛[2J[@click=app.quit]x[/]<script>" in done.stdout.decode()
