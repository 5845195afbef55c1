"""A small HTTP server for ``/metrics`` on asyncio streams (no web framework).

It answers GET (and HEAD) for ``/metrics`` from a ``CachedPage`` and closes the connection
after each answer. A slow or silent client is dropped after a few seconds; it never holds up
the transports, which run on the same loop.

DNS rebinding: a web page in the operator's browser can point its own name at 127.0.0.1 and
then read what answers there as its own. The browser still sends that name as ``Host``, so an
exporter on loopback answers only a loopback ``Host`` (``localhost``, ``127.x``, ``[::1]``) or
the names it was told (``--listen``, ``--allow-host``), as Jupyter and the Prometheus
ecosystem's loopback tools do; any other gets 403.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
from collections.abc import Iterable

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


ANY_HOST = "*"  # --allow-host '*': answer any Host (no guard), as before this check


def allowed_hosts(listen_host: str, names: Iterable[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names the exporter answers besides loopback ones (``None``: any name).

    On a loopback address: the ``--listen`` host and ``names``. Beyond loopback the names
    Prometheus scrapes it by are not known here, and anyone on the network reaches it directly
    anyway, so any ``Host`` is answered unless ``names`` are given. Raises ``ListenError`` for a
    name that is no host."""
    given = list(names)
    if ANY_HOST in given or (not given and not is_loopback(listen_host)):
        return None
    allowed = {listen_host.lower()}
    for name in given:
        host = host_of(f"[{name}]" if name.count(":") > 1 and "[" not in name else name)  # a bare v6 too
        if host is None:
            raise ListenError(f"--allow-host {name!r}: expected a host name, e.g. gpu-monitor.lan")
        allowed.add(host)
    return frozenset(allowed)


def host_allowed(header: str | None, allowed: frozenset[str] | None) -> bool:
    """Whether a request's ``Host`` header may be answered. No header at all is answered: a
    browser always sends one, so its absence is a scraper or curl, never a rebinding page."""
    if allowed is None or header is None:
        return True
    host = host_of(header)
    return host is not None and (host in allowed or is_loopback(host))


# A Host header or an --allow-host value: name[:port] or [v6addr][:port] (RFC 9110 uri-host).
_HOST_FIELD = re.compile(r"(?:\[([^\[\]\s/@]+)\]|([^\[\]\s/@:]+))(?::\d{0,5})?")


def host_of(text: str) -> str | None:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port`` -> the name, lower case; None for
    anything else (an empty name, a port that is no number, a stray bracket)."""
    match = _HOST_FIELD.fullmatch(text.strip().lower())
    return (match.group(1) or match.group(2)) if match else None


async def serve(
    page: CachedPage, host: str, port: int, allowed: frozenset[str] | None = None
) -> asyncio.Server:
    """``allowed``: from ``allowed_hosts``; None answers any ``Host``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
            writer.write(_answer(page, head, allowed))
            await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT_S)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # a client that went away or sent nonsense: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    return await asyncio.start_server(handle, host, port, limit=MAX_REQUEST_BYTES)


def _answer(page: CachedPage, head: bytes, allowed: frozenset[str] | None) -> bytes:
    first, *fields = head.rstrip(b"\r\n").split(b"\r\n")
    parts = first.split()
    hosts = [f.split(b":", 1)[1].decode("latin-1") for f in fields if f[:5].lower() == b"host:"]
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/") or len(hosts) > 1:
        return _response(400, "text/plain", b"bad request\n")
    if not host_allowed(hosts[0] if hosts else None, allowed):
        return _response(403, "text/plain", _WRONG_HOST)
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


_WRONG_HOST = (
    b"dltui export answers only its own names (a guard against DNS rebinding): start it with "
    b"--allow-host NAME to answer this one\n"
)
_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}


def _response(
    code: int, ctype: str, body: bytes, head_only: bool = False, extra: str = ""
) -> bytes:
    head = (
        f"HTTP/1.1 {code} {_REASONS[code]}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    ).encode()
    return head if head_only else head + body
