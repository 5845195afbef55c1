"""Destinations and jump chains are read the way ssh(1) reads them, and refused where ssh(1)
refuses them."""

import os
import shutil
import subprocess

import pytest

from dltui.transport.hostspec import (
    Destination,
    HostSpecError,
    expand_ranges,
    parse_destination,
    parse_jumps,
)
from tests.needs import require

SSH = shutil.which("ssh") or "/usr/bin/ssh"


@pytest.mark.parametrize(
    "text, host, user, port",
    [
        ("gpu01", "gpu01", None, None),
        ("alice@gpu01", "gpu01", "alice", None),
        ("gpu01:2222", "gpu01", None, 2222),
        ("alice@10.0.0.5:2222", "10.0.0.5", "alice", 2222),
        ("ssh://alice@bastion:22/", "bastion", "alice", 22),
        ("[fe80::1]:2200", "fe80::1", None, 2200),
        ("fe80::1", "fe80::1", None, None),
        ("al@ce@gpu01", "gpu01", "al@ce", None),
    ],
)
def test_destination_forms(text, host, user, port):
    assert parse_destination(text) == Destination(text=text, host=host, user=user, port=port)


@pytest.mark.parametrize("text", ["gpu01:ssh", "gpu01:0", "gpu01:70000", "@gpu01", "alice@", "[fe80::1"])
def test_unparsable_destinations_say_which(text):
    with pytest.raises(HostSpecError) as err:
        parse_destination(text)
    assert repr(text) in str(err.value)


def test_jump_chain_keeps_the_order_first_hop_first():
    assert [d.host for d in parse_jumps("alice@outer:2222,inner")] == ["outer", "inner"]
    assert parse_jumps("outer")[0].user is None


# -- names ssh(1) refuses: a ProxyCommand's shell would read them (%h, %r) ------------------


@pytest.mark.parametrize(
    "hosts, expanded",
    [
        (["gpu01"], ["gpu01"]),
        (["ops@gpu01:2222"], ["ops@gpu01:2222"]),
        (["[::1]:22", "fe80::1%eth0"], ["[::1]:22", "fe80::1%eth0"]),
        (["ssh://ops@bastion:22/"], ["ssh://ops@bastion:22/"]),
        (["gpu[01-03]"], ["gpu01", "gpu02", "gpu03"]),
        (["o$ps@gpu[1-2]"], ["o$ps@gpu1", "o$ps@gpu2"]),  # '$' in a user: ssh takes it (quoted %r)
    ],
)
def test_names_ssh_takes_are_taken(hosts, expanded):
    assert expand_ranges(hosts) == expanded


@pytest.mark.parametrize(
    "text, message",
    [
        ("inj$(touch F)", "'inj$(touch F)': '$' is not allowed in a host name (ssh refuses it too: "
                          "a ProxyCommand's shell would read it)"),
        ("gpu`id`", "'gpu`id`': '`' is not allowed in a host name"),
        ("gpu01;reboot", "'gpu01;reboot': ';' is not allowed in a host name"),
        ("gpu01 gpu02", "'gpu01 gpu02': ' ' is not allowed in a host name"),
        ("gpu01\n", "'gpu01\\n': '\\n' is not allowed in a host name"),
        ("gpu\x1b]0;x\x07", "'gpu\\x1b]0;x\\x07': '\\x1b' is not allowed in a host name"),
        ("-oProxyCommand=sh", "'-oProxyCommand=sh': a host name may not start with '-' (ssh refuses it too: "
                              "it reads as an option)"),
        ("gpu01,gpu02", "'gpu01,gpu02': ',' is not allowed in a host name: name nodes as separate words or "
                        "gpu[01-02]"),
        ("x$(id)(@gpu01", "'x$(id)(@gpu01': '(' is not allowed in a user name (ssh refuses it too: "
                          "a ProxyCommand's shell would read it)"),
        ("-lroot@gpu01", "'-lroot@gpu01': a user name may not start a word with '-' (ssh refuses it too)"),
        ("a -x@gpu01", "'a -x@gpu01': a user name may not start a word with '-'"),
        ("ops\\@gpu01", "'ops\\\\@gpu01': a user name may not end with '\\' (ssh refuses it too)"),
    ],
)
def test_a_name_ssh_refuses_is_refused_in_one_plain_line(text, message):
    whole_hop = "," not in text and text == text.strip()  # -J splits on ',' and trims each hop
    for parse in (parse_destination, lambda t: expand_ranges([t]), *([parse_jumps] if whole_hop else [])):
        with pytest.raises(HostSpecError) as err:
            parse(text)
        assert str(err.value) == message or str(err.value).startswith(message)
        assert "\n" not in str(err.value) and "\x1b" not in str(err.value)


def test_a_bad_hop_of_a_jump_chain_is_refused():
    with pytest.raises(HostSpecError, match="'inj\\$x': '\\$' is not allowed in a host name"):
        parse_jumps("bastion, inj$x")


def _ssh_refuses(destination: str) -> bool:
    """What the real ssh(1) says: ``ssh -G`` prints the settings, or refuses the name (255)."""
    done = subprocess.run([SSH, "-F", "/dev/null", "-G", "--", destination], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30)
    refused = "contains invalid characters" in done.stderr
    assert refused == (done.returncode != 0), done.stderr  # no other reason to fail here
    return refused


def _we_refuse(destination: str) -> bool:
    try:
        parse_destination(destination)
    except HostSpecError:
        return True
    return False


def test_the_rule_is_the_one_the_installed_ssh_applies():
    """Each ASCII character (and a few beyond) in a host and in a user name, first, inside and
    last: refused here exactly when /usr/bin/ssh refuses it. ':', '@' and '[' are left out: dltui
    reads them as the port, user and IPv6 separators, ssh -G does not."""
    require(os.path.exists(SSH), f"{SSH} is missing: install openssh-client")
    require(_ssh_refuses("a$b"), f"{SSH} predates OpenSSH's name check (9.6, or a CVE-2023-51385 backport)")
    chars = [chr(c) for c in range(1, 128) if chr(c) not in ":@["] + ["\u00e9", "\u00a0"]
    names = [f"a{c}b" for c in chars] + [f"{c}ab" for c in chars]
    names += [f"{u}@gpu01" for c in chars for u in (f"a{c}b", f"{c}ab", f"ab{c}", f"a {c}b")]
    disagree = [n for n in names if _we_refuse(n) != _ssh_refuses(n) and not _stricter_on_unicode(n)]
    assert disagree == []


def _stricter_on_unicode(name: str) -> bool:
    """Where dltui is stricter on purpose: a no-break space is a space to Python, not to ssh's
    byte-wise isspace()."""
    return "\u00a0" in name and _we_refuse(name) and not _ssh_refuses(name)
