"""known_hosts is parsed once per change of its files, not once per node's connect."""

import asyncssh

from dltui.transport.ssh import known_hosts


def test_parsed_once_while_unchanged_and_again_when_a_key_is_added(tmp_path):
    path = str(tmp_path / "known_hosts")
    cache = known_hosts.KnownHostsCache()
    empty = cache.load((path,))  # a missing file is an empty one
    assert cache.load((path,)) is empty
    key = asyncssh.generate_private_key("ssh-ed25519")
    assert not known_hosts.has_entry(empty, "gpu01", "10.0.0.1", 22)
    known_hosts.append(path, "gpu01", 22, key)  # what --accept-new-host-keys does
    first = cache.load((path,))
    assert first is not empty and known_hosts.has_entry(first, "gpu01", "10.0.0.1", 22)
    assert cache.load((path,)) is first
    known_hosts.append(path, "gpu02", 2222, key)
    assert known_hosts.has_entry(cache.load((path,)), "gpu02", "10.0.0.2", 2222)
