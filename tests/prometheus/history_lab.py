"""A week of one GPU node in a real Prometheus: a seeded simulation written as OpenMetrics,
turned into TSDB blocks by ``promtool tsdb create-blocks-from openmetrics``, served by a real
Prometheus that also scrapes dltui's exporter live. The week holds two known events:

- the hot afternoon: GPU 3 at 93 °C from 13:00 to 16:00 (UTC) three days before the end;
- the flapping port: mlx5_0 port 1 down for a minute every ten, 02:00-03:00 (UTC) two days
  before the end, its link_downed counter rising each time.

``Week(host_events=True)`` adds two more, from the series a fleet keeps besides the GPUs':

- the failing drive: dltui's exporter (scraped all week, ``job="dltui"``) says /dev/sda has 8
  pending sectors from 10:00 to 14:00 (UTC) four days before the end, none before or after;
- the memory squeeze: node_exporter's MemAvailable at 3 % of 512 GiB from 20:00 to 21:00 (UTC)
  five days before the end, 60 % otherwise.

dcgm-exporter's series (``Hostname``) and node_exporter's (``instance="gpu01:9100"``,
``nodename``) are what a fleet keeps; dltui's exporter starts only at the end (live)."""

from __future__ import annotations

import json
import math
import random
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.prometheus.tools import (
    PROMETHEUS,
    PROMTOOL,
    Daemon,
    Endpoint,
    free_port,
    require_tool,
    wait_http,
)

NODE = "gpu01"
GPUS = 8
STEP_S = 60  # the simulated scrape interval
DAY = 86400
HOT_GPU, HOT_C = 3, 93.0
DRIVE, PENDING = "/dev/sda", 8
MEM_TOTAL = 512 * 1024**3


@dataclass(frozen=True)
class Week:
    end: float  # the last simulated point (a whole minute)
    seed: int = 33
    host_events: bool = False  # the failing drive and the memory squeeze too

    @property
    def start(self) -> float:
        return self.end - 7 * DAY

    @property
    def hot(self) -> tuple[float, float]:
        day = math.floor(self.end / DAY) * DAY - 3 * DAY
        return day + 13 * 3600, day + 16 * 3600

    @property
    def flap(self) -> tuple[float, float]:
        day = math.floor(self.end / DAY) * DAY - 2 * DAY
        return day + 2 * 3600, day + 3 * 3600

    @property
    def drive(self) -> tuple[float, float]:
        day = math.floor(self.end / DAY) * DAY - 4 * DAY
        return day + 10 * 3600, day + 14 * 3600

    @property
    def squeeze(self) -> tuple[float, float]:
        day = math.floor(self.end / DAY) * DAY - 5 * DAY
        return day + 20 * 3600, day + 21 * 3600

    def times(self) -> range:
        return range(int(self.start), int(self.end) + 1, STEP_S)


def _gpu_values(week: Week, gpu: int, rng: random.Random) -> dict[str, list[tuple[int, float]]]:
    hot0, hot1 = week.hot
    fields = ("GPU_TEMP", "MEMORY_TEMP", "POWER_USAGE", "GPU_UTIL", "SM_CLOCK")
    out: dict[str, list[tuple[int, float]]] = {k: [] for k in fields}
    for t in week.times():
        daily = math.sin(2 * math.pi * ((t % DAY) / DAY - 0.25))  # warmest mid-afternoon
        temp = 58 + 6 * daily + gpu * 0.8 + rng.uniform(-1.0, 1.0)
        hot = gpu == HOT_GPU and hot0 <= t < hot1
        if hot:
            temp = HOT_C + rng.uniform(-0.4, 0.4)
        out["GPU_TEMP"].append((t, round(temp, 1)))
        out["MEMORY_TEMP"].append((t, round(temp + 6, 1)))
        out["POWER_USAGE"].append((t, round(610 + rng.uniform(-25, 25), 1)))
        out["GPU_UTIL"].append((t, float(rng.randint(92, 100))))
        out["SM_CLOCK"].append((t, 1410.0 if hot else 1980.0))
    return out


def openmetrics(week: Week) -> str:
    """The week as OpenMetrics text (each family's samples together, times increasing)."""
    rng = random.Random(week.seed)
    per_gpu = [_gpu_values(week, g, rng) for g in range(GPUS)]
    lines: list[str] = []
    for field in per_gpu[0]:
        lines.append(f"# TYPE DCGM_FI_DEV_{field} gauge")
        for g in range(GPUS):
            labels = f'gpu="{g}",UUID="GPU-{g:08d}",Hostname="{NODE}",instance="{NODE}:9400",job="dcgm"'
            lines += [f"DCGM_FI_DEV_{field}{{{labels}}} {v} {t}" for t, v in per_gpu[g][field]]
    host = f'instance="{NODE}:9100",job="node"'
    lines.append("# TYPE node_uname_info gauge")
    lines += [f'node_uname_info{{{host},nodename="{NODE}",release="6.1.0"}} 1 {t}' for t in week.times()]
    f0, f1 = week.flap
    port = f'{host},device="mlx5_0",port="1"'
    state, downs, n = [], [], 0
    for t in week.times():
        down = f0 <= t < f1 and (t - f0) % 600 < 60
        n += 1 if down and (t - f0) % 600 == 0 else 0
        state.append(f"node_infiniband_state_id{{{port}}} {1 if down else 4} {t}")
        downs.append(f"node_infiniband_link_downed_total{{{port}}} {n} {t}")
    lines += ["# TYPE node_infiniband_state_id gauge", *state]
    lines += ["# TYPE node_infiniband_link_downed_total gauge", *downs]
    if week.host_events:
        lines += _host_events(week, host)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _host_events(week: Week, host: str) -> list[str]:
    """The failing drive (dltui's exporter, which names the node) and the memory squeeze
    (node_exporter), as OpenMetrics lines."""
    own = f'node="{NODE}",instance="monitor:9500",job="dltui"'
    d0, d1 = week.drive
    s0, s1 = week.squeeze
    lines = ["# TYPE dltui_node_up gauge"]
    lines += [f"dltui_node_up{{{own}}} 1 {t}" for t in week.times()]
    lines.append("# TYPE dltui_drive_pending_sectors gauge")
    lines += [
        f'dltui_drive_pending_sectors{{{own},device="{DRIVE}"}} {PENDING if d0 <= t < d1 else 0} {t}'
        for t in week.times()
    ]
    lines.append("# TYPE dltui_drive_smart_passed gauge")
    lines += [f'dltui_drive_smart_passed{{{own},device="{DRIVE}"}} 1 {t}' for t in week.times()]
    lines.append("# TYPE node_memory_MemTotal_bytes gauge")
    lines += [f"node_memory_MemTotal_bytes{{{host}}} {MEM_TOTAL} {t}" for t in week.times()]
    lines.append("# TYPE node_memory_MemAvailable_bytes gauge")
    lines += [
        f"node_memory_MemAvailable_bytes{{{host}}} {MEM_TOTAL * (3 if s0 <= t < s1 else 60) // 100} {t}"
        for t in week.times()
    ]
    return lines


def build_tsdb(base: Path, week: Week) -> Path:
    """The week as TSDB blocks in ``base/tsdb`` (what a Prometheus starts on)."""
    require_tool(PROMTOOL, "prometheus")
    source = base / "week.om"
    source.write_text(openmetrics(week))
    tsdb = base / "tsdb"
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(source), str(tsdb)],
        check=True, capture_output=True, text=True,
    )
    source.unlink()
    return tsdb


class WeekLab:
    """A real Prometheus on the week's blocks, scraping ``exporter`` (dltui's) every second.
    The backfilled node's targets are in its config too (down: nothing answers there), as in
    the fleet the week came from, so their 60 s scrape interval is known."""

    def __init__(self, base: Path, week: Week, exporter: Endpoint | None = None):
        require_tool(PROMETHEUS, "prometheus")
        build_tsdb(base, week)
        port = free_port()
        live = (
            f"  - job_name: dltui\n    scrape_interval: 1s\n"
            f"    static_configs:\n      - targets: [\"{exporter.address}\"]\n"
            if exporter is not None
            else ""
        )
        (base / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 60s\nscrape_configs:\n"
            f"  - job_name: node\n    static_configs:\n      - targets: [\"{NODE}:9100\"]\n"
            f"  - job_name: dcgm\n    static_configs:\n      - targets: [\"{NODE}:9400\"]\n"
            f"{live}"
        )
        self.daemon = Daemon(
            [
                PROMETHEUS,
                f"--config.file={base / 'prometheus.yml'}",
                f"--storage.tsdb.path={base / 'tsdb'}",
                "--storage.tsdb.retention.time=30d",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            base / "prometheus.log",
        )
        self.url = f"http://127.0.0.1:{port}"
        wait_http(self.url + "/-/ready", "prometheus", self.daemon.proc, self.daemon.log)
        # the targets (and their scrape intervals) are listed once discovery has run, ~5 s in
        wait_targets(self.url, 2 if exporter is None else 3)

    def stop(self) -> None:
        self.daemon.stop()


def wait_targets(url: str, count: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with urllib.request.urlopen(f"{url}/api/v1/targets?state=active", timeout=5) as r:
            if len(json.load(r)["data"]["activeTargets"]) >= count:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"Prometheus at {url} lists fewer than {count} targets")
        time.sleep(0.2)


def week_ending_now(host_events: bool = False) -> Week:
    return Week(float(math.floor(time.time() / STEP_S) * STEP_S - STEP_S), host_events=host_events)
