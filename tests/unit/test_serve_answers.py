"""``dltui serve``'s web side in process, on a real aiohttp server and raw HTTP: every answer
carries the security headers (aiohttp's own 400, 404 and 405 too); the page is anyone's and
sets no cookie; the websocket opens only with the token presented as a subprotocol AND an
Origin that is this server's own, scheme included. The browser end to end is
tests/integration/test_serve_trust_fake_smi.py."""

from __future__ import annotations

import asyncio
import socket

import pytest

from dltui.ui.serve.auth import TOKEN_PROTOCOL, TokenCheck
from dltui.ui.serve.server import HEADERS, DashboardServer, serve

TOKEN = "the-token-of-this-test-server"
PROTOCOLS = f"dltui, {TOKEN_PROTOCOL}{TOKEN.encode().hex()}"


@pytest.fixture
async def server():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    # each tab's "dashboard" is `true`: what is tested here is whether a tab opens at all
    runner = await serve(DashboardServer("true", TokenCheck(TOKEN)), sock)
    try:
        yield sock.getsockname()[1]
    finally:
        await runner.cleanup()


async def _answer(port: int, request: bytes) -> tuple[int, dict[str, str]]:
    """The status and headers of the server's answer to ``request``, sent as raw bytes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    finally:
        writer.close()
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if ": " in line)
    return int(status.split()[1]), headers


def _get(path: str, port: int, **headers: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _upgrade(port: int, **headers: str) -> bytes:
    return _get(
        "/ws", port, Upgrade="websocket", Connection="Upgrade", Sec_WebSocket_Version="13",
        Sec_WebSocket_Key="dGhlIHNhbXBsZSBub25jZQ==", **headers,
    )


async def test_every_answer_carries_the_security_headers_aiohttps_own_errors_too(server):
    port = server
    answers = {
        "page": await _answer(port, _get("/", port)),
        "script": await _answer(port, _get("/static/dltui.js", port)),
        "404": await _answer(port, _get("/nothing-here", port)),
        "405": await _answer(port, f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\r\n".encode()),
        "400": await _answer(port, b"GARBAGE\r\n\r\n"),  # not HTTP: aiohttp answers before any app code
        "401": await _answer(port, _upgrade(port)),
    }
    assert {k: status for k, (status, _) in answers.items()} == {
        "page": 200, "script": 200, "404": 404, "405": 405, "400": 400, "401": 401,
    }
    for what, (_, headers) in answers.items():
        missing = {k: v for k, v in HEADERS.items() if headers.get(k) != v}
        assert missing == {}, what
        assert "Set-Cookie" not in headers, what  # no credential a browser would send elsewhere


async def test_the_websocket_needs_the_token_and_this_servers_own_origin(server):
    port = server
    ours = f"http://127.0.0.1:{port}"
    offer = {"Sec_WebSocket_Protocol": PROTOCOLS}
    in_query = _upgrade(port, Origin=ours).replace(b"/ws ", f"/ws?token={TOKEN} ".encode())
    refused = {
        "nothing": await _answer(port, _upgrade(port, Origin=ours)),
        "a cookie": await _answer(port, _upgrade(port, Origin=ours, Cookie=f"dltui={TOKEN}; token={TOKEN}")),
        "in the query": await _answer(port, in_query),
        "wrong token": await _answer(
            port, _upgrade(port, Origin=ours, Sec_WebSocket_Protocol=f"dltui, {TOKEN_PROTOCOL}00ff")
        ),
        "no Origin": await _answer(port, _upgrade(port, **offer)),
        "another port": await _answer(port, _upgrade(port, Origin="http://127.0.0.1:1", **offer)),
        "https": await _answer(port, _upgrade(port, Origin=f"https://127.0.0.1:{port}", **offer)),
        "null": await _answer(port, _upgrade(port, Origin="null", **offer)),
    }
    assert {k: status for k, (status, _) in refused.items()} == {
        "nothing": 401, "a cookie": 401, "in the query": 401, "wrong token": 403,
        "no Origin": 403, "another port": 403, "https": 403, "null": 403,
    }
    status, headers = await _answer(port, _upgrade(port, Origin=ours, Sec_WebSocket_Protocol=PROTOCOLS))
    assert status == 101 and headers["Sec-WebSocket-Protocol"] == "dltui"  # the token is not echoed
