"""What the browser loads: the page, its small script (where the secret lives in the browser),
and textual-serve's terminal code with three changes. None of it holds a secret.

textual-serve's bundle (xterm.js and its session glue, MIT, Textualize) is read from the
installed package and changed at start-up; each change must apply exactly once, else serve
refuses to start (``PageError``) rather than serve a page that would link node text or
present no token.
"""

from __future__ import annotations

from pathlib import Path

import textual_serve

STATIC = Path(textual_serve.__file__).resolve().parent / "static"


class PageError(RuntimeError):
    pass


_CHANGES = (
    # xterm's web-links addon makes every URL on the screen a live link: a node names a process
    # "http://…" and the operator's browser would offer it. Not loaded.
    ("this.weblinksAddon=new S.WebLinksAddon,this.terminal.loadAddon(this.weblinksAddon),", ""),
    # OSC 8 hyperlinks open on a click by default; none is followed either.
    ("scrollback:0,", "scrollback:0,linkHandler:{activate:function(){}},"),
    # The token, presented as a subprotocol when the page opens its websocket (dltui.js).
    (
        'new WebSocket(this.websocket_url+"?width="+e.cols+"&height="+e.rows)',
        'new WebSocket(this.websocket_url+"?width="+e.cols+"&height="+e.rows,window.dltuiProtocols())',
    ),
)


def terminal_js() -> bytes:
    """textual-serve's textual.js with ``_CHANGES`` applied. Raises ``PageError``."""
    path = STATIC / "js" / "textual.js"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PageError(f"cannot read textual-serve's {path}: {exc}") from None
    for old, new in _CHANGES:
        if text.count(old) != 1:
            raise PageError(
                f"textual-serve's {path.name} is not the one dltui knows (textual-serve 1.1.3): "
                "serve refuses to run a terminal page it cannot make safe; install textual-serve==1.1.3"
            )
        text = text.replace(old, new)
    return text.encode("utf-8")


def terminal_css() -> bytes:
    try:
        return (STATIC / "css" / "xterm.css").read_bytes()
    except OSError as exc:
        raise PageError(f"cannot read textual-serve's xterm.css: {exc.strerror or exc}") from None


# The page: textual-serve's app_index.html cut to what dltui needs, without its third-party web
# font (a browser on the bridge need not tell a font host who is looking) and without inline
# script (the Content-Security-Policy allows this server's scripts only).
PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>dltui</title>
<link rel="stylesheet" href="/static/xterm.css">
<script src="/static/textual.js"></script>
<style>
  html, body { margin: 0; height: 100%; background: #0c181f; }
  .textual-terminal { width: 100vw; height: 100vh; }
  .notice { display: none; position: absolute; inset: 0; z-index: 10; align-items: center;
            justify-content: center; color: #eee; font: 16px monospace; background: #0c181fd0; }
  body.-closed .ended, body.-no-token .no-token { display: flex; }
  body.-no-token .ended { display: none; }
  .notice button { margin-left: 1em; font: inherit; padding: 0.4em 1em; }
</style>
</head>
<body>
<div class="notice ended">The dashboard ended.<button>Open again</button></div>
<div class="notice no-token">Open the address that dltui serve printed (it ends in #token=&hellip;).</div>
<div id="terminal" class="textual-terminal" data-font-size="16"></div>
<script src="/static/dltui.js"></script>
</body>
</html>
"""

# Runs before textual.js's window.onload connects: it takes the token from the address, sets
# the websocket's URL and defines how the token is presented.
SCRIPT = """\
// dltui serve: where the access secret lives in the browser. The printed address carries it
// in its fragment (#token=...), which the browser sends to no server. It leaves the address
// bar at once, stays in this tab's sessionStorage (a reload works; another tab needs the
// printed address) and is presented only when this page opens its own websocket, as a
// subprotocol: never a cookie, which the browser would send to every port of this host.
(function () {
  "use strict";
  var KEY = "dltui-token";
  var token = null;
  var found = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (found) {
    try { token = decodeURIComponent(found[1]); } catch (e) { token = found[1]; }
    history.replaceState(null, "", location.pathname);
  }
  try {
    if (token) { sessionStorage.setItem(KEY, token); } else { token = sessionStorage.getItem(KEY); }
  } catch (e) { /* no storage: this page load only */ }

  function hex(text) {
    return Array.prototype.map.call(new TextEncoder().encode(text), function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }
  window.dltuiProtocols = function () {
    return token ? ["dltui", "dltui.token." + hex(token)] : ["dltui"];
  };
  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  document.getElementById("terminal").dataset.sessionWebsocketUrl = scheme + location.host + "/ws";
  if (!token) { document.body.classList.add("-no-token"); }
  document.querySelector(".ended button").addEventListener("click", function () {
    location.reload();
  });
  // a new printed address pasted into this tab changes only the fragment: load it afresh
  window.addEventListener("hashchange", function () {
    if (/(?:^#|&)token=/.test(location.hash)) { location.reload(); }
  });
})();
"""
