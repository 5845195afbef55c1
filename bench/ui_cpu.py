"""Dashboard CPU, frame time and memory on the demo fleet, and against glances in the same run.

    python bench/ui_cpu.py [--seconds 10] [--sizes 8,64,256]

1. ``dltui demo --nodes N`` (8 GPUs a node, 1 Hz) in tmux at 160x48: the process's CPU per
   second (utime+stime from /proc before and after the window), CPU per node-sample, frame
   time and key latency (from ``DLTUI_FRAME_STATS``: a key from its arrival to the repainted
   screen), measured once the demo's simulated past is filled in. A cursor key (j, k in turn)
   is sent every KEY_EVERY_S during the window, while samples stream in. How the cost grows
   with the fleet; 512 and 2048 nodes against their targets are rows of bench/outside.py.
2. ``dltui`` on this machine and ``glances -t 1`` side by side, both in tmux at 160x48 over the
   same window. Target: at most 1.0x glances' CPU.
4. The chart view's redraw time as its widget pays it (data squeezed to the width, braille
   drawing, Rich text) for 2 hours x 8 GPUs at 160x48: the node chart (8 GPUs overlaid) and a
   GPU's four charts, each window, with plotext's drawing of the same charts as the reference
   in the same run (bench/plotext_chart.py). Target (issue 35): node chart <= 33 ms a redraw.
3. RSS with 2 hours of 1 Hz history for 64 nodes x 8 GPUs (the fleet state filled with 7200 demo
   samples per node, rules engine and UI modules loaded). Target: at most 200 MB (issue 22).

Needs tmux. Installs glances from PyPI into bench/results/glances-venv the first time. Prints
figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from dltui.ui.frame_stats import summarise  # noqa: E402  (the repository's, not an installed one)
RESULTS = REPO / "bench" / "results"
TICKS = os.sysconf("SC_CLK_TCK")
HISTORY_S = 7200
RSS_NODES = 64
RSS_TARGET_MB = 200
KEY_EVERY_S = 0.5


class Terminal:
    """One 160x48 tmux window on a private server; ``pid`` is the program's own process."""

    def __init__(self, sock: Path, name: str, command: str, env: dict[str, str], cwd: Path = REPO):
        self.base = ["tmux", "-S", str(sock), "-f", "/dev/null"]
        self.name = name
        self.env = env
        # in the checkout measured: ``python -m dltui`` imports from its working directory first
        self.tmux("new-session", "-d", "-s", name, "-c", str(cwd), "-x", "160", "-y", "48", f"exec {command}")
        self.pid = int(self.tmux("display", "-p", "-t", name, "#{pane_pid}"))

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            [*self.base, *args], check=True, capture_output=True, text=True, env=self.env
        ).stdout.strip()

    def wait_for(self, text: str, limit_s: float = 60.0) -> None:
        deadline = time.monotonic() + limit_s
        while text not in self.tmux("capture-pane", "-p", "-t", self.name):
            if time.monotonic() > deadline:
                raise SystemExit(f"{self.name}: {text!r} never showed")
            time.sleep(0.1)

    def settle(self, past_samples: int, limit_s: float = 180.0) -> None:
        """Wait until the demo's simulated past (``past_samples`` node-samples) is filled in:
        at least 2 ms a node-sample (a busy machine's pace), then until a second under 60 %
        of one core (the filling runs flat out, the live dashboard does not)."""
        time.sleep(past_samples * 0.002)
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            (share,) = measure([self], 1.0)
            if share < 0.6:
                return

    def cpu_s(self) -> float:
        """CPU seconds of the program and everything it started (a journalctl it reads, ...)."""
        return tree_cpu_s(self.pid)

    def written_bytes(self) -> int:
        """Bytes the program has written so far (its terminal output: it writes nothing else)."""
        line = next(ln for ln in Path(f"/proc/{self.pid}/io").read_text().splitlines() if ln.startswith("wchar:"))
        return int(line.split()[1])

    def quit(self, keys: str = "q") -> None:
        self.tmux("send-keys", "-t", self.name, keys)
        deadline = time.monotonic() + 20
        while Path(f"/proc/{self.pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def tree_cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` and its descendants, with the children they have reaped."""
    parent: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parent[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    total = 0
    for p in times:
        q = p
        while q > 1 and q != pid:
            q = parent.get(q, 0)
        if q == pid:
            total += times[p]
    return total / TICKS


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    env.update(PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(tmp), TERM="xterm-256color", **extra)
    return env


def pressing(t: Terminal, stop: threading.Event) -> None:
    """Cursor down and up in turn, every KEY_EVERY_S, until ``stop``."""
    keys = ("j", "k")
    n = 0
    while not stop.wait(KEY_EVERY_S):
        t.tmux("send-keys", "-t", t.name, keys[n % 2])
        n += 1


def measure(terminals: list[Terminal], seconds: float) -> list[float]:
    """CPU share of one core for each terminal's process over the same window."""
    before = [t.cpu_s() for t in terminals]
    start = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - start
    return [(t.cpu_s() - b) / wall for t, b in zip(terminals, before)]


def demo_window(n: int, seconds: float, tmp: Path) -> dict:
    """``dltui demo --nodes n`` in tmux 160x48 past its start-up, a key every KEY_EVERY_S:
    its CPU share of one core, its frames and keys (``DLTUI_FRAME_STATS``) and the bytes it
    wrote to the terminal (``wchar`` of /proc/PID/io), all over the same window."""
    stats = tmp / f"frames-{n}.json"
    env = clean_env(tmp, DLTUI_FRAME_STATS=str(stats))
    t = Terminal(tmp / "sock", f"demo{n}", f"{sys.executable} -m dltui demo --nodes {n}", env)
    t.wait_for(f"{n} nodes")
    t.settle(past_samples(n))  # past start-up: the simulated past filled in, all streaming
    window = (time.time(), time.time() + seconds)
    stop = threading.Event()
    presser = threading.Thread(target=pressing, args=(t, stop))
    presser.start()
    written = t.written_bytes()
    try:
        (share,) = measure([t], seconds)
        written = t.written_bytes() - written
    finally:
        stop.set()
        presser.join()
    t.quit()
    found = json.loads(stats.read_text())
    inside = [f for f in found["each"] if window[0] <= f[0] <= window[1] + 0.5]
    frames = summarise([f[1] for f in inside])
    frames_cpu = summarise([f[2] for f in inside if len(f) > 2])  # a build before CPU timings: none
    # a build without key timings (before they existed) reads as no keys, not as zero
    keys = summarise([ms for end, ms in found.get("each_key", []) if window[0] <= end <= window[1] + 0.5])
    return {
        "share": share, "frames": frames, "frames_cpu": frames_cpu, "keys": keys, "bytes_per_s": written / seconds
    }


def fleet_sizes(sizes: list[int], seconds: float, tmp: Path) -> None:
    print(f"1. dltui demo --nodes N (8 GPUs, 1 Hz) in tmux 160x48, {seconds:.0f} s windows")
    print(
        f"   {'nodes':>5} {'CPU of one core':>16} {'per node-sample':>16} {'vs 8 nodes':>11}"
        f" {'frame p50':>10} {'p95':>8} {'max':>8} {'key p95':>8} {'max':>8}"
    )
    per_sample_8 = None
    for n in sizes:
        r = demo_window(n, seconds, tmp)
        share, frames, keys = r["share"], r["frames"], r["keys"]
        per_sample = share / n  # CPU seconds per second / node-samples per second
        per_sample_8 = per_sample_8 or per_sample
        print(
            f"   {n:>5} {share * 100:>15.1f}% {per_sample * 1e6:>13.0f} µs {per_sample / per_sample_8:>10.2f}x"
            f" {frames.get('p50_ms', 0):>7.1f} ms {frames.get('p95_ms', 0):>5.1f} ms {frames.get('max_ms', 0):>5.1f} ms"
            + (
                f" {keys['p95_ms']:>5.1f} ms {keys['max_ms']:>5.1f} ms ({keys['frames']:.0f} keys)"
                if keys["frames"]
                else "      n/a (no key timings)"
            )
        )


def past_samples(nodes: int) -> int:
    """How many node-samples ``dltui demo`` simulates before streaming (0 before it did)."""
    from dltui.transport.demo import DemoTransport

    demo = DemoTransport(nodes=nodes)
    return nodes * getattr(demo, "prefill_steps", 0)


def glances_command() -> str:
    found = shutil.which("glances")
    if found:
        return found
    venv = RESULTS / "glances-venv"
    if not (venv / "bin" / "glances").exists():
        print("   installing glances from PyPI into", venv)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "glances"], check=True)
    return str(venv / "bin" / "glances")


def against_glances(seconds: float, tmp: Path) -> None:
    glances = glances_command()
    version = subprocess.run([glances, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"2. this machine: dltui vs {version.strip()} -t 1, both in tmux 160x48 over the same {seconds:.0f} s")
    env = clean_env(tmp)
    dltui = Terminal(tmp / "sock", "local", f"{sys.executable} -m dltui", env)
    other = Terminal(tmp / "sock", "glances", f"{glances} -t 1", env)
    dltui.wait_for("Memory")
    other.wait_for("MEM")
    time.sleep(3)
    ours, theirs = measure([dltui, other], seconds)
    dltui.quit()
    other.quit()
    ratio = ours / theirs if theirs else float("inf")
    print(
        f"   dltui {ours * 100:.1f} % of one core, glances {theirs * 100:.1f} %: ratio {ratio:.2f}x"
        f" (target <= 1.0x: {'met' if ratio <= 1.0 else 'NOT met'})"
    )


def history_rss() -> None:
    print(f"3. RSS with {HISTORY_S // 3600} h of 1 Hz history, {RSS_NODES} nodes x 8 GPUs (filling takes a while)")
    out = subprocess.run(
        [sys.executable, __file__, "--rss-child"],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ).stdout
    r = json.loads(out)
    print(
        f"   RSS {r['empty_mb']:.0f} MB with the modules loaded, {r['full_mb']:.0f} MB full"
        f" (peak {r['peak_mb']:.0f} MB; {r['fill_s']:.0f} s to fill): {r['full_mb'] / RSS_TARGET_MB:.2f}x the {RSS_TARGET_MB} MB target"
        f" ({'met' if r['full_mb'] <= RSS_TARGET_MB else 'NOT met'})"
    )


def rss_child() -> None:
    """Runs in its own process so the RSS is the dashboard's alone."""
    import dltui.ui.app  # noqa: F401  (the UI's modules count: the dashboard loads them)
    from dltui.config import Config
    from dltui.transport.demo import DemoTransport
    from dltui.wiring import fleet_state

    def mb(field: str) -> float:
        line = next(ln for ln in Path("/proc/self/status").read_text().splitlines() if ln.startswith(field))
        return int(line.split()[1]) / 1024

    demo = DemoTransport(nodes=RSS_NODES, gpus=8, seed=7)
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    empty = mb("VmRSS:")
    start = time.monotonic()
    demo.step_into(fleet, HISTORY_S)
    fleet.tick()
    assert len(fleet.nodes["gpu01"].history.time) == HISTORY_S
    print(
        json.dumps(
            {"empty_mb": empty, "full_mb": mb("VmRSS:"), "peak_mb": mb("VmHWM:"), "fill_s": time.monotonic() - start}
        )
    )


def chart_render(repeats: int = 9) -> None:
    """Part 4, in this process: one node with 2 h of 1 Hz history, charts drawn at 160x48 as the
    chart widget draws them (squeeze, draw, Rich text), against plotext (bench/plotext_chart.py,
    the drawing before issue 35) on the same charts, interleaved in the same run."""
    import statistics

    import plotext_chart  # this directory: the reference

    from dltui.config import Config
    from dltui.transport.demo import DemoTransport
    from dltui.ui import charts
    from dltui.wiring import fleet_state

    print(
        f"4. chart view redraw, 2 h x 8 GPUs of history, 160x48 (median of {repeats};"
        " plotext reference in the same run)"
    )
    demo = DemoTransport(nodes=2, gpus=8, seed=7)  # gpu02: the hot GPU, alerts open
    fleet = fleet_state(Config(), demo.names, clock=demo.clock)
    demo.step_into(fleet, HISTORY_S)
    node = fleet.nodes["gpu02"]
    end = charts.end_of(node)
    width, points = 156, 2 * 156

    def node_view(window_s: int, draw) -> None:
        draw(charts.node_chart(node, window_s, end, points), width, 44)

    def gpu_view(window_s: int, draw) -> None:
        for kind in charts.GPU_CHARTS:
            draw(charts.gpu_chart(node, 3, kind, window_s, end, points), width, 15 if kind == "heat" else 9)

    def timed(view, window_s: int, draw) -> float:
        started = time.perf_counter()
        view(window_s, draw)
        return (time.perf_counter() - started) * 1000

    print(
        f"   {'window':>7} {'node chart p50':>15} {'max':>8} {'plotext':>8} {'ratio':>6}"
        f" {'GPU charts p50':>15} {'max':>8} {'plotext':>8} {'ratio':>6}  [load {os.getloadavg()[0]:.2f}]"
    )
    node_2h = 0.0
    for window_s in charts.WINDOWS_S:
        row = []
        for view in (node_view, gpu_view):
            ours, theirs = [], []
            for _ in range(repeats):
                ours.append(timed(view, window_s, charts.render_text))
                theirs.append(timed(view, window_s, plotext_chart.render_text))
            mine, ref = statistics.median(ours), statistics.median(theirs)
            row += [mine, max(ours), ref, mine / ref]
            if view is node_view and window_s == charts.WINDOWS_S[-1]:
                node_2h = mine
        print(
            f"   {charts.window_label(window_s):>7} {row[0]:>12.1f} ms {row[1]:>5.1f} ms"
            f" {row[2]:>5.1f} ms {row[3]:>5.2f}x {row[4]:>12.1f} ms {row[5]:>5.1f} ms {row[6]:>5.1f} ms {row[7]:>5.2f}x"
        )
    print(
        f"   node chart, 2 h: {node_2h:.1f} ms a redraw (target <= 33 ms: {'met' if node_2h <= 33 else 'NOT met'})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement window")
    parser.add_argument("--sizes", default="8,64,256", help="fleet sizes for part 1")
    parser.add_argument("--parts", default="1,2,3,4", help="which parts to run")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child()
        return 0
    if not shutil.which("tmux"):
        print("tmux not found: apt-get install tmux")
        return 2
    print(
        f"host: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}"
        " (frame times are wall clock: other load on the machine shows in p95 and max)"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            if "1" in parts:
                fleet_sizes([int(s) for s in args.sizes.split(",")], args.seconds, Path(tmp))
            if "2" in parts:  # a few % of a core: a longer window for resolution
                against_glances(3 * args.seconds, Path(tmp))
        finally:
            subprocess.run(["tmux", "-S", str(Path(tmp) / "sock"), "kill-server"], capture_output=True)
    if "3" in parts:
        history_rss()
    if "4" in parts:
        chart_render()
    return 0


if __name__ == "__main__":
    sys.exit(main())
