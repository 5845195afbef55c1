"""The /metrics HTTP server on asyncio streams, and the --listen rules (loopback by default,
every other address named explicitly; on loopback only loopback or named Host headers, against
DNS rebinding)."""

from __future__ import annotations

import asyncio
import http.client
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.cli import main
from dltui.core.state import FleetState
from dltui.export.metrics import CONTENT_TYPE, CachedPage
from dltui.export.server import (
    ListenError,
    allowed_hosts,
    host_allowed,
    is_loopback,
    parse_listen,
    serve,
)
from dltui.transport.demo import DemoTransport

from .tools import Daemon, free_port, wait_http

ROOT = Path(__file__).resolve().parents[2]


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


# -- DNS rebinding: on loopback, only loopback names (or the ones named) are answered --------


def _ask(port: int, host: str | None, method: str = "GET", path: str = "/metrics") -> tuple[int, str, bytes]:
    """(status, Content-Type, body) for a request carrying this Host header (None: none)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        if host is None:  # HTTP/1.0 style: no Host at all, as a bare scraper may send
            conn.putrequest(method, path, skip_host=True)
            conn.endheaders()
        else:
            conn.request(method, path, headers={"Host": host})
        answer = conn.getresponse()
        return answer.status, answer.getheader("Content-Type") or "", answer.read()
    finally:
        conn.close()


LOOPBACK_HOSTS = ["localhost", "LocalHost:{port}", "127.0.0.1:{port}", "127.9.9.9", "[::1]", "[::1]:{port}", None]
REBINDING_HOSTS = ["rebind.attacker.example:{port}", "attacker.example", "localhost.attacker.example",
                   "127.0.0.1.nip.io:{port}", "0.0.0.0:{port}", "", "[::1", "a:b:c"]


async def _served(allowed):
    demo = DemoTransport(nodes=1, gpus=1)
    fleet = FleetState(demo.names, clock=demo.clock)
    demo.step_into(fleet, 2)
    server = await serve(CachedPage(fleet), "127.0.0.1", 0, allowed)
    return server, server.sockets[0].getsockname()[1]


async def test_on_loopback_only_loopback_and_named_hosts_are_answered():
    server, port = await _served(allowed_hosts("127.0.0.1", ["prom.lan", "[fd00::9]:9400"]))
    try:
        for host in [*LOOPBACK_HOSTS, "prom.lan", "PROM.lan:9400", "[fd00::9]"]:
            status, _, body = await asyncio.to_thread(_ask, port, host and host.format(port=port))
            assert status == 200 and b"dltui_gpu_info" in body, host
        for host in REBINDING_HOSTS:
            for method, path in (("GET", "/metrics"), ("GET", "/"), ("HEAD", "/metrics")):
                status, ctype, body = await asyncio.to_thread(_ask, port, host.format(port=port), method, path)
                assert (status, ctype) == (403, "text/plain"), (host, path)
                assert b"dltui_" not in body
    finally:
        server.close()
        await server.wait_closed()


async def test_two_host_headers_are_a_bad_request():
    server, port = await _served(allowed_hosts("127.0.0.1"))
    try:
        head, _ = await _get(port, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400")
    finally:
        server.close()
        await server.wait_closed()


def test_which_hosts_each_listen_address_answers():
    assert allowed_hosts("127.0.0.1") == {"127.0.0.1"}
    assert allowed_hosts("localhost", ["Mon.LAN:9400"]) == {"localhost", "mon.lan"}
    assert allowed_hosts("::1", ["fd00::9"]) == {"::1", "fd00::9"}
    # beyond loopback the names Prometheus uses are not known: any Host, unless names are given
    assert allowed_hosts("0.0.0.0") is None
    assert allowed_hosts("10.0.0.5", ["mon.lan"]) == {"10.0.0.5", "mon.lan"}
    assert allowed_hosts("127.0.0.1", ["*"]) is None  # asked for by name: any Host
    for bad in ("", "a b", "x/y", "u@h"):
        with pytest.raises(ListenError, match="--allow-host"):
            allowed_hosts("127.0.0.1", [bad])
    assert host_allowed(None, frozenset()) and host_allowed("attacker.example", None)
    assert not host_allowed("attacker.example", frozenset({"127.0.0.1"}))


def test_the_exporter_refuses_a_rebinding_host_over_real_http(tmp_path):
    """``dltui export`` as a user starts it (this machine, loopback): a page whose name was
    rebound to 127.0.0.1 gets 403 and no metrics; Prometheus's way in (the address) gets them."""
    port = free_port()
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "c"), XDG_STATE_HOME=str(tmp_path / "s"))
    exporter = Daemon([sys.executable, "-m", "dltui", "export", "--listen", f"127.0.0.1:{port}", "--interval", "0.5"],
                      tmp_path / "export.log", env=env, cwd=ROOT)
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", "dltui export", exporter.proc, exporter.log)
        for host in ("127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}"):
            status, _, body = _ask(port, host.format(port=port))
            assert status == 200 and b'dltui_node_up{node="localhost"}' in body, host
        status, ctype, body = _ask(port, f"rebind.attacker.example:{port}")
        assert (status, ctype) == (403, "text/plain") and b"dltui_" not in body
        assert body.decode().startswith("dltui export answers only its own names (a guard against DNS rebinding)")
    finally:
        exporter.stop()


def test_allow_host_on_the_command_line_lets_that_name_scrape_and_no_other(tmp_path):
    """``--allow-host prom.lan`` reaches the exporter from the command line (parsed, wired,
    answered); other names still get 403, and a name that is no host name is one line, exit 2."""
    port = free_port()
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "c"), XDG_STATE_HOME=str(tmp_path / "s"))
    exporter = Daemon([sys.executable, "-m", "dltui", "export", "--listen", f"127.0.0.1:{port}", "--interval", "0.5",
                       "--allow-host", "prom.lan"], tmp_path / "export.log", env=env, cwd=ROOT)
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", "dltui export", exporter.proc, exporter.log)
        status, _, body = _ask(port, f"prom.lan:{port}")
        assert status == 200 and b'dltui_node_up{node="localhost"}' in body
        assert _ask(port, f"other.lan:{port}")[0] == 403
    finally:
        exporter.stop()
    bad = subprocess.run([sys.executable, "-m", "dltui", "export", "--allow-host", "a b"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and bad.stderr.splitlines() == ["dltui: --allow-host 'a b': expected a host name, e.g. gpu-monitor.lan"]
