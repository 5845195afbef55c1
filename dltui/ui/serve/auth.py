"""The token that guards ``dltui serve``: in the printed URL once, then in a cookie.

The URL's ``?token=`` is swapped for an HttpOnly, SameSite=Strict cookie by a redirect, so the
token leaves the address bar before anyone shares their screen. Every request (page, websocket,
static files, downloads) must carry one or the other; a websocket must also come from a page of
this server (its Origin), so another site open in the same browser cannot drive the dashboard.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from urllib.parse import urlsplit

MIN_TOKEN_CHARS = 16


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


class TokenCheck:
    """Answers, for a request's presented token, cookie and Origin, whether it may pass."""

    def __init__(self, token: str):
        self.token = token
        # Named after the token, so two servers on one host (cookies ignore ports) keep theirs.
        self.cookie = "dltui-" + hashlib.sha256(token.encode()).hexdigest()[:12]

    def matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def refusal(self, query_token: str | None, cookie: str | None) -> int | None:
        """401 when nothing was presented, 403 when what was presented is wrong, else None."""
        if query_token is None and cookie is None:
            return 401
        if self.matches(query_token) or self.matches(cookie):
            return None
        return 403


def same_origin(origin: str | None, host: str) -> bool:
    """A browser's websocket says which page opened it; it must be one of ours. (A client
    that sends no Origin is not a browser page, and still needs the token.)"""
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == host.lower()
