"""``dltui serve``'s own logic: the token (random, from a file, presented as a subprotocol,
printed in the URL's fragment), the Origin rule, the child command line (``--demo`` too), the
browser's address handed to each tab's dashboard, and no URL or file the dashboard could make
the browser open. The browser end to end is tests/integration/test_serve_*_fake_smi.py."""

from __future__ import annotations

import argparse
import json

import pytest

from dltui.ui.serve import ORIGIN_ENV
from dltui.ui.serve.auth import (
    MIN_TOKEN_CHARS,
    TOKEN_PROTOCOL,
    TokenCheck,
    TokenError,
    new_token,
    own_origin,
    page_url,
    presented_token,
    read_token_file,
)
from dltui.ui.serve.command import ServeOptions, child_argv, demo_refusal, options_from
from dltui.ui.serve.server import _TabService


@pytest.mark.parametrize(
    "argv, allow, expected",
    [
        (["gpu01", "--listen", "0.0.0.0:1"], False, ["watch", "gpu01", "--read-only"]),
        (["--allow-actions", "gpu01", "--token-file=/t"], True, ["watch", "gpu01"]),
        (["-J", "jump", "gpu0[1-2]", "--read-only"], False, ["watch", "-J", "jump", "gpu0[1-2]", "--read-only"]),
        (["--token-file", "/t", "--listen=127.0.0.1:0", "gpu01"], True, ["watch", "gpu01"]),
    ],
)
def test_each_tab_runs_watch_with_serves_options_but_its_own(argv, allow, expected):
    assert child_argv(argv, allow) == expected


def test_with_demo_each_tab_runs_the_demo_fleet():
    assert child_argv(["--demo", "--theme", "x", "--listen", "127.0.0.1:0"], False, demo=True) == [
        "demo", "--theme", "x", "--read-only",
    ]


def _serve_options(**given) -> ServeOptions:
    """serve's options as its converter makes them from the parsed line."""
    args = dict(demo=True, hosts=[], jump=None, ssh_config=None, identity=[], known_hosts=None,
                accept_new_host_keys=False, prometheus=None, match=None, listen="127.0.0.1:0",
                token_file=None, allow_actions=False, debug=False)
    return options_from(argparse.Namespace(**{**args, **given}), [])


def test_demo_with_nodes_or_ssh_options_is_refused_in_one_line():
    assert demo_refusal(_serve_options()) is None
    assert demo_refusal(_serve_options(demo=False, hosts=["gpu01"])) is None
    assert "drop gpu01" in demo_refusal(_serve_options(hosts=["gpu01"]))
    assert "-J/--jump" in demo_refusal(_serve_options(jump="bastion"))
    assert "--prometheus" in demo_refusal(_serve_options(prometheus="http://p:9090"))


def test_random_tokens_are_long_and_differ():
    a, b = new_token(), new_token()
    assert a != b and len(a) >= 32


def _offer(token: str) -> str:
    return f"dltui, {TOKEN_PROTOCOL}{token.encode().hex()}"


def test_the_check_says_401_without_a_token_403_with_a_wrong_one():
    check = TokenCheck("s3cret-token-of-some-length")
    assert check.refusal("") == 401
    assert check.refusal("dltui") == 401
    assert check.refusal(_offer("s3cret-token-of-some-lengtH")) == 403
    assert check.refusal(f"dltui, {TOKEN_PROTOCOL}zz") == 403  # not hex: not a token
    assert check.refusal(_offer("s3cret-token-of-some-length")) is None


def test_any_token_file_token_travels_as_a_subprotocol_and_in_the_fragment():
    token = 'ab(c)d/e;f"g#h%i&j=k,l' + "m" * 8  # separators a header token cannot hold
    offered = _offer(token)
    assert all(c.isalnum() or c in "., " for c in offered)
    assert presented_token(offered) == token
    url = page_url("127.0.0.1", 8765, token)
    assert url.startswith("http://127.0.0.1:8765/#token=") and "#" not in url.split("#token=")[1]
    assert page_url("::1", 1, "t" * 16) == "http://[::1]:1/#token=" + "t" * 16


def test_token_file_first_line_and_its_mistakes_in_plain_words(tmp_path):
    good = tmp_path / "token"
    good.write_text("abcdefghijklmnopqrstuvwx\n# comment\n")
    assert read_token_file(str(good)) == "abcdefghijklmnopqrstuvwx"
    short = tmp_path / "short"
    short.write_text("abc\n")
    with pytest.raises(TokenError, match=f"at least {MIN_TOKEN_CHARS}"):
        read_token_file(str(short))
    spaced = tmp_path / "spaced"
    spaced.write_text("abcdefgh ijklmnopqrstuvwx\n")
    with pytest.raises(TokenError, match="without spaces"):
        read_token_file(str(spaced))
    with pytest.raises(TokenError, match="No such file"):
        read_token_file(str(tmp_path / "missing"))


def test_a_websocket_opened_by_another_page_or_by_no_page_is_not_ours():
    assert own_origin("http://127.0.0.1:8765", "http", "127.0.0.1:8765")
    assert own_origin("https://Dash.Example", "https", "dash.example")
    assert not own_origin(None, "http", "127.0.0.1:8765")  # no Origin: refused
    assert not own_origin("", "http", "127.0.0.1:8765")
    assert not own_origin("http://evil.example", "http", "127.0.0.1:8765")
    assert not own_origin("http://127.0.0.1:9999", "http", "127.0.0.1:8765")  # another port
    assert not own_origin("https://127.0.0.1:8765", "http", "127.0.0.1:8765")  # another scheme
    assert not own_origin("http://dash.example", "https", "dash.example")


def test_each_tabs_dashboard_is_told_the_browsers_address():
    async def nothing(*_):
        return None

    service = _TabService(
        "true", "browser 10.1.2.3", write_bytes=nothing, write_str=nothing, close=nothing,
        download_manager=None,
    )
    env = service._build_environment(100, 30)
    assert env[ORIGIN_ENV] == "browser 10.1.2.3"
    assert env["TEXTUAL_DRIVER"].endswith("WebDriver")


async def test_the_dashboard_cannot_make_the_browser_open_a_url_or_a_file():
    """textual-serve would pass an app's open_url / deliver_file_start on to the page, which
    opens it: a link from the dashboard (node text) is never one the browser follows."""
    sent: list[str] = []

    async def keep(text):
        sent.append(text)

    async def nothing(*_):
        return None

    service = _TabService(
        "true", "browser 10.1.2.3", write_bytes=nothing, write_str=keep, close=nothing,
        download_manager=None,
    )
    await service.on_meta(json.dumps({"type": "open_url", "url": "http://evil.example", "new_tab": True}).encode())
    assert sent == []
    await service.on_meta(json.dumps({
        "type": "deliver_file_start", "key": "k", "path": "/etc/passwd", "open_method": "browser",
        "mime_type": "text/plain", "encoding": None,
    }).encode())
    assert sent == []
