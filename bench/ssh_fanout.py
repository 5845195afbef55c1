"""SSH fan-out: time to the first sample from every node, and transport CPU per node-sample.

Starts a real sshd jump host and N real sshd nodes behind it on loopback (the integration
tests' harness, tests/integration/sshd.py), then measures in the same run:

- OpenSSH reference: ``ssh -F cfg nodeNN true`` for every node in parallel (each through
  ``ProxyJump jump``, as an operator's pdsh-style loop would), start to last exit;
- dltui: ``SshFleet`` start to the first sample from every node (one shared jump connection,
  the real probe started on every node), and the ratio of the two;
- dltui's process CPU per node-sample over a steady-state window, split into decoding
  (``ProbeReader.feed`` into a ``FleetState``, clocked in place) and the rest: the SSH
  transport (asyncssh through two hops: decryption, channels, readline, keepalive timers).

The nodes run on the same CPUs as dltui, so start-up times include every node's sshd and
probe starting; dltui's own CPU and the whole machine's busy CPU until the first samples are
printed beside them. Probes sample on wall-clock ticks, so a fleet's samples reach dltui in
one burst: the transport's fixed cost per wake-up is shared by more nodes the larger the fleet.
Also, before the fleets: a cold probe start on this machine, as a node runs it (the loader
and its payload from ``bundle``, ``python3 -I -S``, ``--count 1``: hello and one sample), its
CPU (the median of a few) and the payload's bytes, the node-side share of a connection.
Targets: first sample from 64 nodes <= 2 s; <= 0.1 ms CPU per node-sample in the transport.
Needs root and openssh-server. Prints figures only; nothing is asserted.

    python bench/ssh_fanout.py [--nodes 16 64] [--steady 10] [--interval 1]
"""

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.core.state import FleetState  # noqa: E402
from dltui.node import bundle  # noqa: E402
from dltui.transport.protocol import ProbeReader  # noqa: E402
from dltui.transport.ssh.fleet import SshFleet  # noqa: E402
from dltui.transport.ssh.options import SshOptions  # noqa: E402
from tests.integration.sshd import SYSTEM_PATH, SshLab  # noqa: E402


def openssh_fanout(names, home):
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    # ssh(1) takes ~ from the passwd entry, not $HOME: name the client home's files outright
    cfg = home / ".ssh" / "openssh_config"
    cfg.write_text(
        (home / ".ssh" / "config").read_text()
        + f"\nHost *\n  UserKnownHostsFile {home}/.ssh/known_hosts\n  IdentityFile {home}/.ssh/id_ed25519\n"
    )
    start = time.perf_counter()
    procs = [
        subprocess.Popen(["ssh", "-F", str(cfg), "-o", "BatchMode=yes", name, "true"], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for name in names
    ]
    failed = [p.stderr.read().decode().strip() for p in procs if p.wait() != 0]
    elapsed = time.perf_counter() - start
    if failed:
        raise SystemExit(f"OpenSSH reference failed on {len(failed)} nodes: {failed[0]}")
    return elapsed


async def dltui_fanout(names, interval_s, steady_s):
    state = FleetState(names)
    fleet = SshFleet(names, interval_s, SshOptions())
    start, cpu_start, busy_start = time.perf_counter(), time.process_time(), machine_busy_s()
    task = asyncio.create_task(fleet.run(state))
    try:
        while not all(node.sample is not None for node in state):
            if task.done():
                task.result()
            await asyncio.sleep(0.005)
        first_s, first_cpu = time.perf_counter() - start, time.process_time() - cpu_start
        busy_now = machine_busy_s()
        first_busy, first_steal = busy_now[0] - busy_start[0], busy_now[1] - busy_start[1]
        await asyncio.sleep(2 * interval_s)  # let every probe settle into its rhythm
        samples0 = sum(len(node.history.time) for node in state)
        cpu0, wall0, decode0 = time.process_time(), time.perf_counter(), DECODE.cpu_s
        await asyncio.sleep(steady_s)
        cpu, decode = time.process_time() - cpu0, DECODE.cpu_s - decode0
        samples = sum(len(node.history.time) for node in state) - samples0
        wall = time.perf_counter() - wall0
        down = [n.name for n in state if n.status != "ok"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return first_s, first_cpu, first_busy, first_steal, cpu, decode, samples, wall, down


def machine_busy_s():
    """(busy, stolen): CPU-seconds this machine's CPUs have spent busy since boot, and those
    the hypervisor gave to other guests (/proc/stat; steal counts as busy here)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / hz, ticks[7] / hz  # less idle and iowait


class DecodeClock:
    """Adds up the CPU spent in ``ProbeReader.feed`` (JSON + models + FleetState), in place,
    so the rest of the process CPU is the SSH transport's."""

    def __init__(self):
        self.cpu_s = 0.0
        feed = ProbeReader.feed
        clock = time.thread_time

        def timed_feed(reader, line):
            t0 = clock()
            feed(reader, line)
            self.cpu_s += clock() - t0

        ProbeReader.feed = timed_feed


def run(n, interval_s, steady_s):
    with tempfile.TemporaryDirectory() as tmp:
        lab = SshLab(Path(tmp))
        lab.keepalive_s, lab.keepalive_count = 15, 3  # dltui's defaults, not the tests' 1 s
        lab.connect_timeout_s = 60  # a loaded 2-core machine must not turn slowness into failure
        lab.add_node("jump", jump=True, fake_smi=False)
        names = [f"node{i:02d}" for i in range(n)]
        for name in names:
            lab.add_node(name, fake_smi=False)
        t0 = time.perf_counter()
        lab.start()
        spawn_s = time.perf_counter() - t0
        try:
            home = lab.make_home(Path(tmp) / "client")
            os.environ["HOME"] = str(home)
            os.environ.pop("SSH_AUTH_SOCK", None)
            openssh_s = openssh_fanout(names, home)
            fanout = asyncio.run(dltui_fanout(names, interval_s, steady_s))
        finally:
            lab.close()
    return (spawn_s, openssh_s, *fanout)


DECODE = DecodeClock()


def cold_probe_start(runs=7, python="python3"):
    """(median CPU seconds of a cold probe start to its first sample, payload bytes): the
    command and payload ssh would carry, run here ``runs`` times (children's rusage) with the
    lab nodes' PATH (this shell's may find a pyenv shim first: +50 ms of bash a start)."""
    command = bundle.ssh_command(1.0, 0.0, python=python) + " --count 1"
    payload = bundle.payload()
    spent = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            ["sh", "-c", command], input=payload, capture_output=True, check=True, env={"PATH": SYSTEM_PATH}
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if b'"hello"' not in done.stdout:
            raise SystemExit("probe did not start: %s" % done.stderr.decode()[-300:])
        spent.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(spent), len(payload)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 64], help="fleet sizes (default 16 64)")
    parser.add_argument(
        "--steady", type=float, default=30.0, help="seconds of steady state measured (default 30: whole ping periods)"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="probe interval in seconds (default 1)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; probe interval {args.interval:g} s; steady window {args.steady:g} s; "
          f"load {' '.join(open('/proc/loadavg').read().split()[:3])}")
    cold_s, payload_bytes = cold_probe_start()
    print(f"cold probe start (python3 -I -S, hello + 1 sample): {cold_s * 1e3:.1f} ms CPU (median of 7); "
          f"payload {payload_bytes / 1024:.0f} KiB to every node")
    for n in args.nodes:
        spawn_s, openssh_s, first_s, first_cpu, first_busy, first_steal, cpu, decode, samples, wall, down = run(
            n, args.interval, args.steady
        )
        per_sample, decode_s = cpu / max(samples, 1), decode / max(samples, 1)
        print(f"\n{n} nodes behind one jump (sshd spawn + ready {spawn_s:.2f} s)")
        print(f"  OpenSSH `ssh node true`, all in parallel: {openssh_s:.2f} s")
        print(f"  dltui first sample from every node:      {first_s:.2f} s   "
              f"ratio dltui/OpenSSH {first_s / openssh_s:.2f}")
        print(f"    dltui's own CPU until then: {first_cpu:.2f} s ({first_cpu / n * 1e3:.0f} ms per node); the machine "
              f"was busy {first_busy:.2f} of {first_s * os.cpu_count():.2f} CPU-s, the rest being every sshd and "
              f"probe starting ({(first_busy - first_cpu - first_steal) / n * 1e3:.0f} ms per node) and "
              f"{first_steal:.2f} CPU-s stolen by the hypervisor")
        print(f"  steady state: {samples} samples in {wall:.1f} s ({samples / wall / n:.2f} per node per s), "
              f"process CPU {cpu * 1e3:.0f} ms = {cpu / wall * 100:.1f} % of one core")
        print(f"  CPU per node-sample: {per_sample * 1e3:.3f} ms total, of which SSH transport "
              f"{(per_sample - decode_s) * 1e3:.3f} ms and decode {decode_s * 1e3:.3f} ms")
        if down:
            print(f"  not ok at the end: {', '.join(down)}")


if __name__ == "__main__":
    main()
