"""The secret that guards ``dltui serve``, and the checks on the websocket that drives a dashboard.

The secret is in the printed URL's fragment (``#token=…``), which a browser sends to no server.
The page keeps it in its tab (sessionStorage) and presents it only when it opens its own
websocket, as a subprotocol (``Sec-WebSocket-Protocol: dltui, dltui.token.HEX``): not in a URL
that a proxy logs, and never in a cookie, since a browser sends a host's cookies to every port
of that host, and so to any other server there. The websocket must also come from one of this
server's own pages: its Origin must be this server's scheme://host:port, and a request without
one is refused. The page and its scripts hold no secret and are served to anyone.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path
from urllib.parse import quote

MIN_TOKEN_CHARS = 16
PROTOCOL = "dltui"  # the subprotocol the server answers with
TOKEN_PROTOCOL = "dltui.token."  # + the token's UTF-8 in hex: any token, as a header token


class TokenError(ValueError):
    pass


def new_token() -> str:
    return secrets.token_urlsafe(24)  # 192 bits


def read_token_file(path: str) -> str:
    """A fixed token (for a URL behind a reverse proxy): the file's first line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenError(f"--token-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TokenError(f"--token-file {path}: not text") from None
    token = text.splitlines()[0].strip() if text.strip() else ""
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"--token-file {path}: the token must be at least {MIN_TOKEN_CHARS} characters")
    if not token.isascii() or not token.isprintable() or " " in token:
        raise TokenError(f"--token-file {path}: the token must be printable ASCII without spaces")
    return token


def page_url(host: str, port: int, token: str) -> str:
    """The one URL serve prints: the token in the fragment, which the browser keeps to itself."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/#token={quote(token, safe='')}"


def presented_token(protocols: str) -> str | None:
    """The token a websocket request presents in its subprotocols; None when it presents none,
    "" when what it presents cannot be one."""
    for offered in protocols.split(","):
        offered = offered.strip()
        if offered.startswith(TOKEN_PROTOCOL):
            try:
                return bytes.fromhex(offered[len(TOKEN_PROTOCOL):]).decode("utf-8")
            except ValueError:
                return ""
    return None


class TokenCheck:
    """Answers, for a websocket request's subprotocols, whether they present the token."""

    def __init__(self, token: str):
        self.token = token

    def matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def refusal(self, protocols: str) -> int | None:
        """401 when no token was presented, 403 when a wrong one was, else None."""
        presented = presented_token(protocols)
        if presented is None:
            return 401
        return None if self.matches(presented) else 403


def own_origin(origin: str | None, scheme: str, host: str) -> bool:
    """Whether a websocket was opened by a page of this server: its Origin, scheme included,
    is ``scheme://host``. A browser always sends one; a request without it is refused (nothing
    but this server's page has any business opening the websocket)."""
    if not origin:
        return False
    return origin.strip().lower() == f"{scheme}://{host}".lower()
