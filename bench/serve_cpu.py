"""``dltui serve`` with one browser against the terminal dashboard, on the same fleet, same window.

    python bench/serve_cpu.py [--nodes 8] [--seconds 20]

A lab of real sshd nodes on loopback (8 fake H100s each: a test nvidia-smi replaying a real
capture), all behind one jump host. At the same time, over the same window:
- ``dltui gpu01 ...`` in tmux at 160x48: the dashboard process's CPU;
- ``dltui serve gpu01 ...`` with one headless Chromium (Debian's package, driven by Playwright)
  showing it: the serve process and the tab's dashboard process together, and the browser's
  own CPU apart (what the terminal emulator costs is not counted on the other side either:
  tmux's server is reported apart too).
Target: serve (server + tab) <= 1.5x the terminal dashboard. Prints figures and ratios; asserts
nothing. Needs root (sshd), tmux and /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.integration.sshd import SshLab, client_env  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")
CELL_PX = (9.03, 18.25)  # xterm.js cell at font size 16 with this machine's monospace fallback, measured


def cpu_s(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


async def main(nodes: int, seconds: float) -> None:
    from playwright.async_api import async_playwright

    tmp = Path(tempfile.mkdtemp(prefix="dltui-serve-bench-"))
    lab = SshLab(tmp / "lab")
    lab.add_node("jump", jump=True, fake_smi=False)
    names = [f"gpu{i:02d}" for i in range(1, nodes + 1)]
    for name in names:
        lab.add_node(name).env["FAKE_SMI_GPU_COUNT"] = "8"
    lab.start()
    env = client_env(lab.make_home(tmp / "home"))
    env["XDG_STATE_HOME"] = str(tmp / "state")
    tmux = ["tmux", "-S", str(tmp / "tmux.sock"), "-f", "/dev/null"]
    serve = None
    try:
        cmd = " ".join([sys.executable, "-m", "dltui", *names])
        subprocess.run([*tmux, "new-session", "-d", "-s", "term", "-x", "160", "-y", "48", f"exec {cmd}"],
                       check=True, env=env, cwd=REPO)
        term_pid = int(subprocess.run([*tmux, "display", "-p", "-t", "term", "#{pane_pid}"],
                                      check=True, capture_output=True, text=True, env=env).stdout)
        tmux_server = psutil.Process(term_pid).parent()
        serve = subprocess.Popen([sys.executable, "-m", "dltui", "serve", *names, "--listen", "127.0.0.1:0"],
                                 cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = serve.stdout.readline().strip()
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = await browser.new_page(viewport={"width": int(160 * CELL_PX[0]), "height": int(48 * CELL_PX[1])})
            frames: list[bytes] = []
            page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(
                f if isinstance(f, bytes) else f.encode())))
            await page.goto(url)
            last = names[-1]
            while f"{last} ● ok" not in subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "term"], capture_output=True, text=True, env=env
            ).stdout or f"{last} ● ok".encode() not in ESCAPES.sub(b"", b"".join(frames)):
                await asyncio.sleep(0.5)
            await asyncio.sleep(5)  # past the first samples' burst on both sides
            tab_env = psutil.Process(serve.pid).children()[0].environ()
            size = f"{tab_env.get('COLUMNS')}x{tab_env.get('ROWS')}"  # as the page first asked
            browser_procs = [p for p in psutil.Process(os.getpid()).children(recursive=True)
                             if "chrom" in p.name() or p.name() == "node"]
            sides = {"terminal dashboard": tree(term_pid), "serve + its tab": tree(serve.pid),
                     "tmux server": [tmux_server], "chromium (+ playwright)": browser_procs}
            before = {k: cpu_s(v) for k, v in sides.items()}
            start = time.monotonic()
            await asyncio.sleep(seconds)
            wall = time.monotonic() - start
            share = {k: (cpu_s(v) - before[k]) / wall for k, v in sides.items()}
            await browser.close()
        print(f"{nodes} real sshd nodes x 8 fake H100 (1 Hz), one {seconds:.0f} s window, same fleet at once")
        print(f"  terminal 160x48 in tmux; the browser's tab started at {size}")
        for k, v in share.items():
            print(f"  {k:<26} {100 * v:6.1f} % of one core")
        term, served = share["terminal dashboard"], share["serve + its tab"]
        print(f"  ratio serve / terminal: {served / term:.2f}x (target <= 1.5x)")
        with_clients = (served + share["chromium (+ playwright)"]) / (term + share["tmux server"])
        print(f"  ratio with their displays (browser vs tmux): {with_clients:.2f}x")
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(15)
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)
        lab.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    a = parser.parse_args()
    asyncio.run(main(a.nodes, a.seconds))
