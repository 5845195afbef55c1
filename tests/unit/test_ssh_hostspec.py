"""Destinations and jump chains are read the way ssh(1) reads them."""

import pytest

from dltui.transport.hostspec import Destination, HostSpecError, parse_destination, parse_jumps


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
