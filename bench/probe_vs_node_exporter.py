"""CPU cost of one host sample of the probe against one scrape of Prometheus node_exporter.

Both read the same kernel files (/proc/stat, meminfo, diskstats, net/dev, pressure, loadavg,
mounts + statvfs), so node_exporter restricted to those collectors is a fair reference,
measured in the same run on the same machine. The probe also counts processes in D state, a
read of every /proc/<pid>/stat every D_STATE_EVERY_TICKS samples that none of those collectors
does (node_exporter's own, ``processes``, reads every thread's on every scrape: ~15 ms here);
so the sample is measured twice: as the node sends it (that scan's share included) and
without the scan (the same work as the reference). Target (issue 22): the probe at most 0.10x.

    python bench/probe_vs_node_exporter.py [--rounds 7] [--per-round 200]

Needs the Debian package prometheus-node-exporter. Prints figures only; nothing is asserted.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dltui.node.probe.host import HostCollector  # noqa: E402
from dltui.node.probe.problems import Problems  # noqa: E402
from dltui.node.wire import Encoder  # noqa: E402

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
COLLECTORS = ("cpu", "meminfo", "diskstats", "filesystem", "netdev", "pressure", "loadavg", "stat")
WARM_UP = 20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating measurement rounds")
    parser.add_argument("--per-round", type=int, default=200, help="samples and scrapes per round")
    args = parser.parse_args()
    if not os.path.exists(NODE_EXPORTER):
        print("%s not found. Install it with:" % NODE_EXPORTER)
        print("    apt-get install prometheus-node-exporter")
        return 2

    print("host: %d CPUs, %d processes, Python %s, load average %.2f"
          % (os.cpu_count(), count_processes(), sys.version.split()[0], os.getloadavg()[0]))
    probe_s, bare_s, exporter_s, scrape_bytes = measure(args.rounds, args.per_round)
    print("node_exporter --collector.{%s}: %.3f ms CPU per scrape (%s; %d bytes per scrape)"
          % (",".join(COLLECTORS), statistics.median(exporter_s) * 1e3, spread(exporter_s),
             scrape_bytes))
    for what, samples in (("as sent (D-state scan's share included)", probe_s),
                          ("without the D-state scan (the reference's work)", bare_s)):
        ratios = [p / e for p, e in zip(samples, exporter_s)]
        print("probe HostCollector.sample(), %s: %.3f ms CPU per sample (median of %d rounds"
              " of %d; %s); ratio to node_exporter %.3fx median (rounds %.3f..%.3f;"
              " target <= 0.10x)"
              % (what, statistics.median(samples) * 1e3, args.rounds, args.per_round,
                 spread(samples), statistics.median(ratios), min(ratios), max(ratios)))

    keyframe, deltas = wire_sizes()
    print("host part of a sample line (wire.Encoder, compact JSON): keyframe %d bytes, "
          "steady-state delta median %d bytes (min %d, max %d; lines 1 s apart)"
          % (keyframe, statistics.median(deltas), min(deltas), max(deltas)))
    return 0


def measure(rounds, per_round):
    """Alternate rounds of probe samples and exporter scrapes, so that load from anything
    else on the machine weighs on both alike. Returns per-round CPU seconds per sample (as
    sent, and without the D-state scan) and per scrape, and the size of one scrape."""
    collector = HostCollector(Problems())
    bare = HostCollector(Problems())
    for _ in range(WARM_UP):
        collector.sample()
        bare.sample()
    port = free_port()
    command = [
        NODE_EXPORTER,
        "--web.listen-address=127.0.0.1:%d" % port,
        "--web.disable-exporter-metrics",  # no go_* / process_* self-metrics: not comparable
        "--collector.disable-defaults",
    ] + ["--collector." + name for name in COLLECTORS]
    probe_s, bare_s, exporter_s = [], [], []
    with tempfile.TemporaryFile() as log:
        exporter = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            url = "http://127.0.0.1:%d/metrics" % port
            wait_ready(url, exporter, log)
            for _ in range(WARM_UP):
                scrape_bytes = len(scrape(url))
            for _ in range(rounds):
                start = time.process_time()
                for _ in range(per_round):
                    collector.sample()
                probe_s.append((time.process_time() - start) / per_round)
                bare._ticks_to_d_state_scan = per_round + 1  # not due within the round
                start = time.process_time()
                for _ in range(per_round):
                    bare.sample()
                bare_s.append((time.process_time() - start) / per_round)
                # Clock ticks are 10 ms; a round of scrapes spans a few hundred of them.
                before = cpu_seconds(exporter.pid)
                for _ in range(per_round):
                    scrape(url)
                exporter_s.append((cpu_seconds(exporter.pid) - before) / per_round)
        finally:
            exporter.terminate()
            exporter.wait()
    return probe_s, bare_s, exporter_s, scrape_bytes


def spread(values):
    return "rounds %.3f..%.3f ms" % (min(values) * 1e3, max(values) * 1e3)


def wire_sizes(lines=6):
    """Encoded sizes of host sample lines taken 1 s apart, as the probe sends them
    (``gpus`` empty: this measures the host part)."""
    collector = HostCollector(Problems())
    encoder = Encoder()
    sizes = []
    collector.sample()
    for _ in range(lines):
        time.sleep(1.0)
        sample = {"time": round(time.time(), 3)}
        sample.update(collector.sample())
        sample["gpus"] = []
        sizes.append(len(json.dumps(encoder.encode(sample), separators=(",", ":"))))
    return sizes[0], sizes[1:]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url, process, log, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            scrape(url)
            return
        except OSError:
            time.sleep(0.05)
    log.seek(0)
    raise SystemExit("node_exporter did not start:\n" + log.read().decode(errors="replace"))


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def cpu_seconds(pid):
    """utime + stime of a process, from /proc/<pid>/stat (fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_processes():
    return sum(name.isdigit() for name in os.listdir("/proc"))


if __name__ == "__main__":
    sys.exit(main())
