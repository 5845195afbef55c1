"""The /metrics HTTP server on asyncio streams, and the --listen rules (loopback by default,
every other address named explicitly)."""

from __future__ import annotations

import asyncio

import pytest

from dltui.cli import main
from dltui.core.state import FleetState
from dltui.export.metrics import CONTENT_TYPE, CachedPage
from dltui.export.server import ListenError, is_loopback, parse_listen, serve
from dltui.transport.demo import DemoTransport


async def _get(port: int, request: bytes) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


async def test_serves_metrics_404_elsewhere_and_renders_once_for_many_scrapes():
    demo = DemoTransport(nodes=2, gpus=2)
    fleet = FleetState(demo.names, clock=demo.clock)
    demo.step_into(fleet, 2)
    page = CachedPage(fleet)
    server = await serve(page, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        head, body = await _get(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK")
        assert f"Content-Type: {CONTENT_TYPE}".encode() in head
        assert b'dltui_gpu_info{node="gpu01",gpu="0"' in body
        answers = await asyncio.gather(
            *(_get(port, b"GET /metrics HTTP/1.0\r\n\r\n") for _ in range(5))
        )
        assert {b for _, b in answers} == {body} and page.renders == 1
        head, body2 = await _get(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and body2 == b""
        head, _ = await _get(port, b"GET /nope HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 404")
        head, _ = await _get(port, b"POST /metrics HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 405")
        head, _ = await _get(port, b"garbage\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400")
    finally:
        server.close()
        await server.wait_closed()


def test_listen_addresses():
    assert parse_listen("127.0.0.1:9400") == ("127.0.0.1", 9400)
    assert parse_listen("9401") == ("127.0.0.1", 9401)
    assert parse_listen("[::1]:9400") == ("::1", 9400)
    assert parse_listen("0.0.0.0:9400") == ("0.0.0.0", 9400)
    for bad in (":9400", "host:port", "127.0.0.1:70000"):
        with pytest.raises(ListenError):
            parse_listen(bad)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("gpu01")


def test_an_unnamed_listen_address_is_a_usage_error(capsys):
    assert main(["export", "--listen", ":9400"]) == 2
    assert "name the address" in capsys.readouterr().err
