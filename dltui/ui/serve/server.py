"""The web side of ``dltui serve``: textual-serve's process model and browser code behind a token.

Each browser tab gets its own dashboard process (textual-serve's ``AppService``: the app's
screen streamed over a websocket, keys sent back). What is ours: the token on every request
(``auth``), a page without third-party fonts, a cap on tabs (each is a dashboard with its own
SSH connections), and the browser's address handed to its dashboard, which writes it into
every action's audit record.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
from collections.abc import Callable
from pathlib import Path

import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from . import ORIGIN_ENV
from .auth import TokenCheck, same_origin

log = logging.getLogger("dltui.serve")

STATIC = Path(textual_serve.__file__).resolve().parent / "static"
MAX_TABS = 8  # each tab is a whole dashboard: 8 x the fleet's SSH connections at most
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the first URL carries the token
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "frame-ancestors 'none'",  # no framing: no clickjacked keys
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


class DashboardServer:
    """Serves ``command`` (a shell command line running the dashboard) to token holders."""

    def __init__(self, command: str, check: TokenCheck, title: str = "dltui"):
        self.command = command
        self.check = check
        self.title = title
        self.downloads = DownloadManager()
        self.tabs: set[web.WebSocketResponse] = set()

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.add_routes(
            [
                web.get("/", self.index),
                web.get("/ws", self.websocket),
                web.get("/download/{key}", self.download),
                web.static("/static", STATIC),
            ]
        )
        app.on_shutdown.append(self._close_tabs)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable) -> web.StreamResponse:
        query_token = request.query.get("token")
        refusal = self.check.refusal(query_token, request.cookies.get(self.check.cookie))
        if refusal == 401:
            return _plain(401, "dltui serve: open the URL it printed (with ?token=...)\n")
        if refusal == 403:
            return _plain(403, "dltui serve: wrong token\n")
        if request.path == "/ws" and not same_origin(request.headers.get("Origin"), request.host):
            return _plain(403, "dltui serve: this websocket was opened by another site\n")
        if query_token is not None and request.path == "/":
            # the token goes into a cookie and out of the address bar
            response: web.StreamResponse = web.HTTPSeeOther("/")
            response.set_cookie(
                self.check.cookie, query_token, httponly=True, samesite="Strict", path="/"
            )
        else:
            response = await handler(request)
        response.headers.update(_HEADERS)
        return response

    async def index(self, request: web.Request) -> web.Response:
        forwarded_https = request.headers.get("X-Forwarded-Proto", "").lower() == "https"
        scheme = "wss" if request.secure or forwarded_https else "ws"
        return web.Response(
            text=PAGE.format(
                title=html.escape(self.title),
                ws_url=html.escape(f"{scheme}://{request.host}/ws"),
            ),
            content_type="text/html",
        )

    async def download(self, request: web.Request) -> web.StreamResponse:
        """A file the dashboard offers (textual's deliver_file); the dashboard offers none yet,
        but the route is textual-serve's and stays behind the token."""
        try:
            meta = await self.downloads.get_download_metadata(request.match_info["key"])
        except KeyError:
            raise web.HTTPNotFound(text="no such download\n") from None
        response = web.StreamResponse()
        response.headers["Content-Type"] = meta.mime_type
        response.headers["Content-Disposition"] = f"attachment; filename={meta.file_name}"
        await response.prepare(request)
        async for chunk in self.downloads.download(request.match_info["key"]):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        if len(self.tabs) >= MAX_TABS:
            return _plain(503, f"dltui serve: {MAX_TABS} tabs are open already; close one\n")
        ws = web.WebSocketResponse(heartbeat=15)
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
    return web.Response(status=status, text=text, headers=_HEADERS)


async def serve(server: DashboardServer, sock) -> web.AppRunner:
    """Start serving on a bound socket; the caller keeps the loop running."""
    runner = web.AppRunner(server.make_app(), handle_signals=False, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    return runner


def quiet_logging(debug: bool = False) -> None:
    """textual-serve logs every process start at INFO through rich; ours says less."""
    logging.getLogger("textual-serve").setLevel(logging.DEBUG if debug else logging.WARNING)
    if os.environ.get("DLTUI_SERVE_DEBUG"):
        logging.basicConfig(level=logging.INFO)


# The page: textual-serve's app_index.html (MIT, Textualize) cut to what dltui needs, without
# its third-party web font (a browser on the bridge need not tell a font host who is looking).
PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="/static/css/xterm.css">
<script src="/static/js/textual.js"></script>
<style>
  html, body {{ margin: 0; height: 100%; background: #0c181f; }}
  .textual-terminal {{ width: 100vw; height: 100vh; }}
  .ended {{ display: none; position: absolute; inset: 0; z-index: 10; align-items: center;
           justify-content: center; color: #eee; font: 16px monospace; background: #0c181fd0; }}
  body.-closed .ended {{ display: flex; }}
  .ended button {{ margin-left: 1em; font: inherit; padding: 0.4em 1em; }}
</style>
</head>
<body>
<div class="ended">The dashboard ended.<button onclick="location.href='/'">Open again</button></div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="{ws_url}"
     data-font-size="16"></div>
</body>
</html>
"""
