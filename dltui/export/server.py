"""A small HTTP server for ``/metrics`` on asyncio streams (no web framework).

It answers GET (and HEAD) for ``/metrics`` from a ``CachedPage`` and closes the connection
after each answer. A slow or silent client is dropped after a few seconds; it never holds up
the transports, which run on the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress

from .metrics import CONTENT_TYPE, CachedPage

REQUEST_TIMEOUT_S = 5.0
MAX_REQUEST_BYTES = 16 * 1024


class ListenError(ValueError):
    pass


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or a bare ``PORT`` (loopback). The host must be written
    out: an empty one would mean every interface, which must be asked for by name."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host:
        raise ListenError(
            f"--listen {text!r}: name the address (127.0.0.1, or 0.0.0.0 for all interfaces)"
        )
    try:
        number = int(port)
    except ValueError:
        raise ListenError(f"--listen {text!r}: the port must be a number") from None
    if not 0 <= number <= 65535:
        raise ListenError(f"--listen {text!r}: the port must be 0-65535")
    return host, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


async def serve(page: CachedPage, host: str, port: int) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
            writer.write(_answer(page, head))
            await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT_S)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # a client that went away or sent nonsense: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    return await asyncio.start_server(handle, host, port, limit=MAX_REQUEST_BYTES)


def _answer(page: CachedPage, head: bytes) -> bytes:
    parts = head.split(b"\r\n", 1)[0].split()
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        return _response(400, "text/plain", b"bad request\n")
    method, target = parts[0], parts[1].split(b"?", 1)[0]
    if method not in (b"GET", b"HEAD"):
        return _response(405, "text/plain", b"only GET and HEAD\n", extra="Allow: GET, HEAD\r\n")
    if target == b"/metrics":
        body = page.body()
    elif target == b"/":
        body = b'dltui exporter: metrics at <a href="/metrics">/metrics</a>\n'
        return _response(200, "text/html; charset=utf-8", body, head_only=method == b"HEAD")
    else:
        return _response(404, "text/plain", b"not found: try /metrics\n")
    return _response(200, CONTENT_TYPE, body, head_only=method == b"HEAD")


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


def _response(
    code: int, ctype: str, body: bytes, head_only: bool = False, extra: str = ""
) -> bytes:
    head = (
        f"HTTP/1.1 {code} {_REASONS[code]}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    ).encode()
    return head if head_only else head + body
