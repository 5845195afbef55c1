"""``dltui serve`` against the attacks of issue 34, in a real headless Chromium (Debian's
package, driven by Playwright, which downloads no browser) over real sshd nodes with a fake
``nvidia-smi`` replaying the real H100 captures:

- another HTTP server on another port of 127.0.0.1 gets nothing from the browser that opens the
  dashboard (a browser sends a host's cookies to all its ports: the secret is never one), and
  whatever it got, replayed onto the dashboard's websocket with or without an Origin, opens none;
- a URL that a node shows is text, never a live link;
- a read-only tab's burn-in refusal and attach are audited with the browser's address, and the
  tab writes no report folder in serve's working directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re

import psutil
import pytest
from aiohttp import web
from rich.cells import cell_len

from .conftest import require
from .sshd import SSHD, SshLab, client_env
from .test_hostile_node_fake_smi import APPS_CAPTURE
from .test_serve_browser_fake_smi import CHROMIUM, CHROMIUM_ARGS, WAIT_S, Screen, _serve, _stop

pytestmark = pytest.mark.sshd


def _playwright():
    require(os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: install the Debian package chromium")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        require(False, "the Python package playwright is missing: pip install -e '.[test]'")
    return async_playwright()


# -- another server on another port of the same host ---------------------------------------------

# What the other server's page does in the browser: open the dashboard's websocket from there
# (the browser adds whatever it would send to 127.0.0.1), and say what came of it.
SNOOP_PAGE = """<!DOCTYPE html><html><body><script>
function attempt(name, protocols) {
  return new Promise(function (done) {
    var ws = protocols ? new WebSocket("ws://127.0.0.1:APP/ws", protocols)
                       : new WebSocket("ws://127.0.0.1:APP/ws");
    ws.onopen = function () { done(name + ":open"); ws.close(); };
    ws.onerror = function () { done(name + ":error"); };
    ws.onclose = function () { done(name + ":closed"); };
  });
}
(async function () {
  for (const [name, protocols] of [["bare", null], ["dltui", ["dltui"]]]) {
    const result = await attempt(name, protocols);
    await fetch("/result?r=" + encodeURIComponent(result));
  }
  await fetch("/result?r=done");
})();
</script></body></html>
"""


class Snoop:
    """An HTTP server on another port of 127.0.0.1 that keeps every byte a browser sends it."""

    def __init__(self, app_port: int):
        self.app_port = app_port
        self.received: list[bytes] = []  # each request: its line, headers and body
        self.results: list[str] = []  # what its page's websockets came to

    async def handle(self, request: web.Request) -> web.Response:
        head = f"{request.method} {request.path_qs}\r\n".encode()
        head += b"".join(k + b": " + v + b"\r\n" for k, v in request.raw_headers)
        self.received.append(head + await request.read())
        if request.path == "/result":
            self.results.append(request.query["r"])
        return web.Response(text=SNOOP_PAGE.replace("APP", str(self.app_port)), content_type="text/html")

    async def start(self) -> tuple[web.AppRunner, int]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, runner.addresses[0][1]


async def _upgrade_status(port: int, headers: list[tuple[str, str]]) -> int:
    """The status the dashboard's server answers a websocket upgrade with these headers."""
    lines = ["GET /ws HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
    lines += [f"{k}: {v}" for k, v in headers]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = await asyncio.wait_for(reader.readline(), 10)
    finally:
        writer.close()
    return int(status.split()[1])


_NOT_REPLAYED = {"host", "origin", "connection", "upgrade", "content-length"}


def _replayable(raw: bytes) -> list[tuple[str, str]]:
    """The headers a browser sent the other server, as that server would send them on."""
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    pairs = [tuple(line.split(": ", 1)) for line in head if ": " in line]
    return [(k, v) for k, v in pairs if k.lower() not in _NOT_REPLAYED and not k.lower().startswith("sec-websocket")]


async def test_serve_another_server_on_the_host_gets_nothing_that_opens_the_dashboard_fake_smi(shared_lab, tmp_path):
    pw = _playwright()
    env = client_env(shared_lab.make_home(tmp_path / "home"))
    proc, url = _serve(env, tmp_path / "serve.log", "gpu01", "gpu02", "--allow-actions")
    base, _, token = url.partition("/#token=")
    app_port = int(base.rsplit(":", 1)[1])
    snoop = Snoop(app_port)
    snoop_runner, snoop_port = await snoop.start()
    try:
        async with pw as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context = await browser.new_context()
                page = await context.new_page()
                screen = Screen()
                page.on("websocket", lambda ws: ws.on("framereceived", screen.received))
                await page.goto(url)
                await screen.wait_for("NODE", "gpu01", "gpu02")  # the operator's tab: its fleet
                # where the secret lives: this tab's sessionStorage, not the address, no cookie
                assert page.url == base + "/"
                assert await page.evaluate("sessionStorage.getItem('dltui-token')") == token
                assert await context.cookies() == []

                # the same browser visits the other server (another port of the same host)
                other = await context.new_page()
                await other.goto(f"http://127.0.0.1:{snoop_port}/")
                deadline = asyncio.get_running_loop().time() + WAIT_S
                while "done" not in snoop.results and asyncio.get_running_loop().time() < deadline:
                    await asyncio.sleep(0.1)
            finally:
                await browser.close()
        # its page's websockets to the dashboard: none opened
        assert snoop.results[-1:] == ["done"], snoop.results
        assert not [r for r in snoop.results if r.endswith(":open")], snoop.results
        # nothing the browser sent it holds the secret, in any form, or any cookie at all
        sent = b"\n".join(snoop.received)
        assert sent and token.encode() not in sent and token.encode().hex().encode() not in sent
        assert b"\ncookie:" not in sent.lower()
        # replayed onto the dashboard's websocket, with no Origin, the dashboard's, its own
        ours, theirs = base, f"http://127.0.0.1:{snoop_port}"
        for raw in snoop.received:
            for origin in (None, ours, theirs):
                headers = _replayable(raw) + ([("Origin", origin)] if origin else [])
                assert await _upgrade_status(app_port, headers) in (401, 403), (raw, origin)
        # with everything it holds but the token, the dashboard's own Origin included: refused
        assert await _upgrade_status(app_port, [("Origin", ours), ("Sec-WebSocket-Protocol", "dltui")]) == 401
        children = psutil.Process(proc.pid).children()
        assert len(children) <= 1, "no dashboard but the operator's tab's was ever started"
    finally:
        await snoop_runner.cleanup()
        _stop(proc)


# -- a URL on a node -------------------------------------------------------------------------------

LINK = "http://evil.example/pwn"


@pytest.fixture(scope="module")
def link_lab(tmp_path_factory):
    """gpu01, whose GPU processes are all named as a URL (any user on a node names theirs)."""
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    require(os.geteuid() == 0, "real-sshd tests run as root (sshd must switch users and use /run/sshd)")
    base = tmp_path_factory.mktemp("links")
    lab = SshLab(base / "lab")
    lab.add_node("jump", jump=True, fake_smi=False)
    node = lab.add_node("gpu01")
    header, *rows = APPS_CAPTURE.read_text().splitlines()
    renamed = [", ".join([*row.split(", ")[:6], LINK, row.split(", ")[-1]]) for row in rows]
    (base / "apps.csv").write_text("\n".join([header, *renamed]) + "\n")
    node.env["FAKE_SMI_APPS"] = str(base / "apps.csv")
    try:
        lab.start()
        yield lab, lab.make_home(base / "home")
    finally:
        lab.close()


_CUP = re.compile(rb"\x1b\[(\d*)(?:;(\d*))?H")
_OTHER = re.compile(rb"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def _cells(frames: list[bytes]) -> dict[tuple[int, int], str]:
    """The terminal's cells as the dashboard drew them: Textual places every run of text with a
    cursor move (CUP), so following those and the text's cell widths is enough here."""
    cells: dict[tuple[int, int], str] = {}
    row = col = 0
    data = b"".join(frames)
    at = 0
    while at < len(data):
        cup = _CUP.match(data, at)
        other = None if cup else _OTHER.match(data, at)
        if cup:
            row, col = int(cup.group(1) or 1) - 1, int(cup.group(2) or 1) - 1
            at = cup.end()
        elif other:
            at = other.end()
        else:
            end = data.find(b"\x1b", at)
            end = len(data) if end < 0 else end
            for char in data[at:end].decode("utf-8", "replace"):
                if char == "\n":
                    row, col = row + 1, 0
                elif char.isprintable():
                    cells[(row, col)] = char
                    col += cell_len(char)
            at = end
    return cells


def _find(cells: dict[tuple[int, int], str], text: str) -> tuple[int, int]:
    rows = {r for r, _ in cells}
    for r in sorted(rows):
        line = "".join(cells.get((r, c), " ") for c in range(max(c for rr, c in cells if rr == r) + 1))
        if text in line:
            return r, line.index(text)
    raise AssertionError(f"{text!r} is not on the screen")


async def _located(frames: list[bytes], resized_at: list[int], text: str) -> tuple[int, int]:
    """Where ``text`` stands on the screen as drawn since the last resize (cells drawn before it
    are stale), waiting for the frames that draw it (a loaded machine delivers them late)."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        await asyncio.sleep(0.5)  # let the frame that shows it settle
        try:
            return _find(_cells(frames[resized_at[-1]:]), text)
        except AssertionError:
            if asyncio.get_running_loop().time() > deadline:
                raise


async def test_serve_a_url_a_node_shows_is_text_never_a_link_fake_smi(link_lab, tmp_path):
    pw = _playwright()
    lab, home = link_lab
    proc, url = _serve(client_env(home), tmp_path / "serve.log", "gpu01")
    try:
        async with pw as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1400, "height": 800})
                # any window the page would open, counted (a link's click calls window.open)
                await page.add_init_script(
                    "window.opened = []; window.open = function (u) { window.opened.push(String(u)); return null; };"
                )
                frames: list[bytes] = []
                sizes: list[dict] = []
                screen = Screen()

                resized_at = [0]  # frames[i:] after the last resize repaint the whole screen

                def sent(f) -> None:
                    if f.startswith('["resize"'):
                        sizes.append(json.loads(f)[1])
                        resized_at.append(len(frames))

                def watch(ws) -> None:
                    ws.on("framereceived", lambda f: (screen.received(f), isinstance(f, bytes) and frames.append(f)))
                    ws.on("framesent", sent)

                page.on("websocket", watch)
                popups: list = []
                page.on("popup", lambda popup: popups.append(popup))
                await page.goto(url)
                await screen.wait_for(LINK)  # one node: its screen, with its processes
                row, col = await _located(frames, resized_at, LINK)
                box = await page.locator(".xterm-screen").bounding_box()
                cell_w, cell_h = box["width"] / sizes[-1]["width"], box["height"] / sizes[-1]["height"]
                x, y = box["x"] + (col + len(LINK) / 2) * cell_w, box["y"] + (row + 0.5) * cell_h
                await page.mouse.move(x - cell_w, y)
                await page.mouse.move(x, y)
                await asyncio.sleep(0.5)  # xterm looks for a link under the pointer after a move
                pointer = await page.evaluate(
                    "document.querySelector('.xterm-screen').classList.contains('xterm-cursor-pointer')"
                )
                await page.mouse.click(x, y)
                await asyncio.sleep(0.5)
                assert not pointer, "the URL is a link under the pointer"
                assert await page.evaluate("window.opened") == []
                assert popups == []
            finally:
                await browser.close()
    finally:
        _stop(proc)


# -- a read-only tab and the burn-in ---------------------------------------------------------------

async def test_serve_read_only_tab_burnin_refusal_and_attach_audited_with_origin_no_report_fake_smi(
    shared_lab, tmp_path
):
    pw = _playwright()
    env = client_env(shared_lab.make_home(tmp_path / "home"))
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    workdir = tmp_path / "cwd"  # serve's working directory: where a report folder would go
    workdir.mkdir()
    proc, url = _serve(env, tmp_path / "serve.log", cwd=workdir)  # gpu01 gpu02, read-only
    run_id = "20260101-000000-abcdef"  # no such run on gpu01
    try:
        async with pw as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1400, "height": 800})
                screen = Screen()
                page.on("websocket", lambda ws: ws.on("framereceived", screen.received))
                await page.goto(url)
                await screen.wait_for("NODE", "gpu01", "gpu02")  # the fleet screen
                await page.locator(".xterm-screen").click()
                for line, words in (("burnin 5s", "refused under"), (f"attach {run_id}", "exit 3")):
                    shown = len(screen.frames)
                    await page.keyboard.press(":")
                    await screen.wait_for("filter util<5", since=shown)  # the prompt's placeholder
                    await page.keyboard.type(line, delay=20)
                    await screen.wait_for(f":{line}", since=shown)  # in the prompt, then sent
                    await page.keyboard.press("Enter")
                    await screen.wait_for(words, since=shown)
            finally:
                await browser.close()
    finally:
        _stop(proc)
    entries = [json.loads(line) for line in (tmp_path / "state" / "dltui" / "audit.jsonl").read_text().splitlines()]
    done = {(e["action"], e["outcome"]): e for e in entries}  # one of each per node
    assert set(done) == {("burnin-start", "refused"), ("burnin-attach", "ok")}, entries
    assert {e["node"] for e in entries} == {"gpu01", "gpu02"}
    assert all(e["origin"] == "browser 127.0.0.1" for e in entries)
    assert done[("burnin-attach", "ok")]["run_id"] == run_id
    assert list(workdir.iterdir()) == [], "a read-only tab wrote in serve's working directory"
    assert not (tmp_path / "state" / "dltui" / "burnin-spool" / run_id).exists()
