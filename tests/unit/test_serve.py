"""``dltui serve``'s own logic: the token (random, from a file, checked), the Origin rule, the
child command line, and the browser's address handed to each tab's dashboard. The browser end
to end is tests/integration/test_serve_browser_fake_smi.py."""

from __future__ import annotations

import pytest

from dltui.ui.serve import ORIGIN_ENV
from dltui.ui.serve.auth import MIN_TOKEN_CHARS, TokenCheck, TokenError, new_token, read_token_file, same_origin
from dltui.ui.serve.command import child_argv
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


def test_random_tokens_are_long_and_differ():
    a, b = new_token(), new_token()
    assert a != b and len(a) >= 32


def test_the_check_says_401_without_a_token_403_with_a_wrong_one():
    check = TokenCheck("s3cret-token-of-some-length")
    assert check.refusal(None, None) == 401
    assert check.refusal("s3cret-token-of-some-lengtH", None) == 403
    assert check.refusal(None, "nope") == 403
    assert check.refusal("s3cret-token-of-some-length", None) is None
    assert check.refusal(None, "s3cret-token-of-some-length") is None
    assert check.refusal("wrong", "s3cret-token-of-some-length") is None  # the cookie holds
    assert TokenCheck("another-token-of-some-length").cookie != check.cookie  # per server


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


def test_a_websocket_opened_by_another_sites_page_is_not_ours():
    assert same_origin("http://127.0.0.1:8765", "127.0.0.1:8765")
    assert same_origin(None, "127.0.0.1:8765")  # not a browser page: the token still applies
    assert not same_origin("http://evil.example", "127.0.0.1:8765")
    assert not same_origin("http://127.0.0.1:9999", "127.0.0.1:8765")


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
