"""``dltui serve gpu01 gpu02`` (real sshd nodes, the real probe, a fake ``nvidia-smi`` replaying
the real H100 capture) in a real headless Chromium (Debian's package, driven by Playwright,
which downloads no browser of its own): the token in the URL's fragment opens the dashboard and
leaves the address bar, the fleet renders, a key opens a node, ``q`` ends the tab's dashboard;
without the token the page opens no dashboard.

What the browser shows is read from the websocket frames it received (the dashboard's
terminal output): textual-serve paints with WebGL, so the page's DOM holds no text.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from .conftest import require
from .sshd import REPO, client_env

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")
WAIT_S = 60.0


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


class Screen:
    """The text the browser received over the dashboard's websocket, escapes stripped."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def received(self, frame: str | bytes) -> None:
        self.frames.append(frame if isinstance(frame, bytes) else frame.encode())

    def text_since(self, start: int) -> str:
        return ESCAPES.sub(b"", b"".join(self.frames[start:])).decode("utf-8", "replace")

    async def wait_for(self, *words: str, since: int = 0) -> str:
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            text = self.text_since(since)
            if all(w in text for w in words):
                return text
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{words} never reached the browser; last: {text[-1500:]!r}")
            await asyncio.sleep(0.1)


def _serve(env: dict[str, str], log: Path, *args: str, cwd: Path = REPO) -> tuple[subprocess.Popen, str]:
    """``dltui serve ARGS`` (gpu01 gpu02 by default) on a free port; its printed URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dltui", "serve", *(args or ("gpu01", "gpu02")), "--listen", "127.0.0.1:0"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log.open("wb"),
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not (url.startswith("http://127.0.0.1:") and "/#token=" in url):
        _stop(proc)  # not left serving after the test
        raise AssertionError((url, log.read_text()))
    return proc, url


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()


async def test_serve_in_chromium_token_fleet_node_and_quit_fake_smi(shared_lab, tmp_path):
    require(os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: install the Debian package chromium")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        require(False, "the Python package playwright is missing: pip install -e '.[test]'")
    env = client_env(shared_lab.make_home(tmp_path / "home"))
    proc, url = _serve(env, tmp_path / "serve.log")
    base, _, token = url.partition("/#token=")
    presented = {"Sec-WebSocket-Protocol": f"dltui, dltui.token.{token.encode().hex()}"}
    try:
        # the websocket is refused without the token, with a wrong one, and from another page
        assert _status(base + "/ws", {"Origin": base}) == 401
        wrong = {"Sec-WebSocket-Protocol": "dltui, dltui.token." + "78" * len(token)}
        assert _status(base + "/ws", {"Origin": base, **wrong}) == 403
        assert _status(base + "/ws", {"Origin": "http://evil.example", **presented}) == 403

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1400, "height": 800})
                screen = Screen()
                page.on("websocket", lambda ws: ws.on("framereceived", screen.received))
                response = await page.goto(url)
                assert response is not None and response.status == 200
                assert page.url == base + "/", "the token left the address bar (kept by the tab)"
                fleet = await screen.wait_for("gpu01 ● ok", "gpu02 ● ok")  # both rows, connected
                assert "Quit" in fleet
                shown = len(screen.frames)
                await page.locator(".xterm-screen").click()  # focus the terminal, as a user does
                await page.keyboard.press("Enter")  # opens the node under the cursor
                # the node screen's top: its header and alerts pane (what lies lower depends
                # on the height and on this machine's NICs)
                await screen.wait_for("sample ", "Alerts", since=shown)
                await page.screenshot(path=str(tmp_path / "node.png"))
                children = psutil.Process(proc.pid).children()
                assert len(children) == 1, "one dashboard for the one tab"
                shown = len(screen.frames)
                await page.keyboard.press("Escape")  # back to the fleet: its column header
                await screen.wait_for("NODE", since=shown)  # (escape then q at once reads as alt+q)
                await page.keyboard.press("q")
                await page.wait_for_selector("body.-closed", timeout=WAIT_S * 1000)
                psutil.wait_procs(children, timeout=15)
                assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)

                # a fresh browser profile at the bare address: the page, and no dashboard
                stranger = await (await browser.new_context()).new_page()
                stranger_screen = Screen()
                stranger.on("websocket", lambda ws: ws.on("framereceived", stranger_screen.received))
                bare = await stranger.goto(base + "/")
                assert bare is not None and bare.status == 200
                await stranger.wait_for_selector("body.-no-token", timeout=WAIT_S * 1000)
                await stranger.wait_for_selector("body.-closed", timeout=WAIT_S * 1000)
                assert stranger_screen.frames == []
                # the printed address pasted into that tab (only its fragment changes): it opens
                await stranger.goto(url)
                await stranger_screen.wait_for("NODE")
                assert stranger.url == base + "/"
            finally:
                await browser.close()
    finally:
        _stop(proc)
    assert proc.returncode == 0, (tmp_path / "serve.log").read_text()
