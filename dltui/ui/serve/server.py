"""The web side of ``dltui serve``: textual-serve's process model and browser code behind a token.

Each browser tab gets its own dashboard process (textual-serve's ``AppService``: the app's
screen streamed over a websocket, keys sent back). What is ours: the page (``page``), served to
anyone, which holds no secret; the websocket, opened only with the token and from this server's
own page (``auth``); the security headers on every answer, aiohttp's own errors included; a cap
on tabs (each is a dashboard with its own SSH connections); and the browser's address handed to
its dashboard, which writes it into every action's audit record.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from functools import partial

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from . import ORIGIN_ENV, page
from .auth import PROTOCOL, TokenCheck, own_origin

log = logging.getLogger("dltui.serve")

MAX_TABS = 8  # each tab is a whole dashboard: 8 x the fleet's SSH connections at most
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    # this server's scripts only; no framing (no clickjacked keys)
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def browser_origin(request: web.Request) -> str:
    """Who acts, in the audit: the peer's address, and what a reverse proxy says it forwarded
    for (as the proxy said it: a claim, not a proof)."""
    origin = f"browser {request.remote or 'unknown'}"
    forwarded = request.headers.get("X-Forwarded-For")
    if forwarded:
        claim = "".join(c for c in forwarded if c.isprintable())[:200]
        origin += f" (forwarded for {claim})"
    return origin


class _TabService(AppService):
    """One tab's dashboard, told who is at the other end of the websocket."""

    def __init__(self, command: str, origin: str, **kwargs) -> None:
        super().__init__(command, **kwargs)
        self.origin = origin

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width=width, height=height)
        env[ORIGIN_ENV] = self.origin
        return env

    async def on_meta(self, data: bytes) -> None:
        """The dashboard opens no URL and offers no file in the browser: asked to, the browser
        would open whatever the app named, so such a request is dropped here."""
        try:
            kind = json.loads(data).get("type")
        except (ValueError, AttributeError):
            kind = None
        if kind in ("open_url", "deliver_file_start"):
            log.warning("a tab's dashboard asked the browser to %s: not passed on", kind)
            return
        await super().on_meta(data)


class _Request(web.Request):
    """A request whose every answer carries ``HEADERS``. aiohttp answers a request it cannot
    parse (400) before any middleware or signal of the app sees it, so the headers are added
    where every answer is prepared, aiohttp's own 400, 404 and 405 included."""

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        response.headers.update(HEADERS)
        await super()._prepare_hook(response)


class DashboardServer:
    """Serves ``command`` (a shell command line running the dashboard) to token holders.
    Raises ``page.PageError`` when textual-serve's terminal code cannot be made safe."""

    def __init__(self, command: str, check: TokenCheck):
        self.command = command
        self.check = check
        self.files = {
            "/static/textual.js": (page.terminal_js(), "text/javascript"),
            "/static/dltui.js": (page.SCRIPT.encode(), "text/javascript"),
            "/static/xterm.css": (page.terminal_css(), "text/css"),
        }
        self.downloads = DownloadManager()  # AppService wants one; the dashboard offers none
        self.tabs: set[web.WebSocketResponse] = set()

    def make_app(self) -> web.Application:
        app = web.Application()
        app.add_routes(
            [web.get("/", self.index), web.get("/ws", self.websocket)]
            + [web.get(path, self.static) for path in self.files]
        )
        app.on_shutdown.append(self._close_tabs)
        return app

    async def index(self, request: web.Request) -> web.Response:
        return web.Response(text=page.PAGE, content_type="text/html")

    async def static(self, request: web.Request) -> web.Response:
        body, kind = self.files[request.path]
        return web.Response(body=body, content_type=kind)

    def refusal(self, request: web.Request) -> web.Response | None:
        """Why this websocket request may not open a dashboard, as the answer; None when it may."""
        code = self.check.refusal(",".join(request.headers.getall("Sec-WebSocket-Protocol", ())))
        if code == 401:
            return _plain(401, "dltui serve: open the URL it printed (ending in #token=...)\n")
        if code == 403:
            return _plain(403, "dltui serve: wrong token\n")
        if not own_origin(request.headers.get("Origin"), _scheme(request), request.host):
            return _plain(403, "dltui serve: this websocket was not opened by dltui serve's page\n")
        return None

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request)
        if refused is not None:
            return refused
        if len(self.tabs) >= MAX_TABS:
            return _plain(503, f"dltui serve: {MAX_TABS} tabs are open already; close one\n")
        ws = web.WebSocketResponse(heartbeat=15, protocols=(PROTOCOL,))
        await ws.prepare(request)
        self.tabs.add(ws)
        service = _TabService(
            self.command,
            browser_origin(request),
            write_bytes=ws.send_bytes,
            write_str=ws.send_str,
            close=ws.close,
            download_manager=self.downloads,
        )
        log.info("tab opened from %s", request.remote)
        try:
            await service.start(_size(request, "width", 80), _size(request, "height", 24))
            await _pump(ws, service)
        except asyncio.CancelledError:
            await ws.close()
        finally:
            self.tabs.discard(ws)
            await service.stop()
            log.info("tab closed from %s", request.remote)
        return ws

    async def _close_tabs(self, app: web.Application) -> None:
        for ws in list(self.tabs):
            await ws.close()


def _scheme(request: web.Request) -> str:
    """The scheme the browser used: https behind a TLS-terminating proxy that says so."""
    forwarded_https = request.headers.get("X-Forwarded-Proto", "").lower() == "https"
    return "https" if request.secure or forwarded_https else "http"


async def _pump(ws: web.WebSocketResponse, service: AppService) -> None:
    """The browser's keys, resizes, pings and focus changes, to the tab's dashboard."""
    async for message in ws:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            kind, *rest = message.json()
        except (ValueError, TypeError):
            continue  # not an envelope: ignore, as a terminal ignores line noise
        data = rest[0] if rest else None
        if kind == "stdin" and isinstance(data, str):
            await service.send_bytes(data.encode("utf-8"))
        elif kind == "resize" and isinstance(data, dict):
            width, height = data.get("width"), data.get("height")
            if isinstance(width, int) and isinstance(height, int):
                await service.set_terminal_size(_clamp(width), _clamp(height))
        elif kind == "ping":
            await ws.send_json(["pong", data])
        elif kind == "blur":
            await service.blur()
        elif kind == "focus":
            await service.focus()


def _size(request: web.Request, key: str, default: int) -> int:
    try:
        return _clamp(int(request.query.get(key, default)))
    except ValueError:
        return default


def _clamp(cells: int) -> int:
    return max(10, min(cells, 1000))


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text)


async def serve(server: DashboardServer, sock) -> web.AppRunner:
    """Start serving on a bound socket; the caller keeps the loop running."""
    app = server.make_app()
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    assert runner.server is not None
    # every request made a _Request (its answers headed), those aiohttp could not parse too
    runner.server.request_factory = partial(app._make_request, _cls=_Request)
    await web.SockSite(runner, sock).start()
    return runner


def quiet_logging(debug: bool = False) -> None:
    """textual-serve logs every process start at INFO through rich; ours says less."""
    logging.getLogger("textual-serve").setLevel(logging.DEBUG if debug else logging.WARNING)
    if os.environ.get("DLTUI_SERVE_DEBUG"):
        logging.basicConfig(level=logging.INFO)
