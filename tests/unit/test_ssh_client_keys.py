"""The client keys are read once per fleet and again only when a key file changes."""

import os

from dltui.transport.ssh.client_keys import ClientKeys
from dltui.transport.ssh.library import asyncssh


def write_key(path, comment):
    """A new key at ``path`` (and ``path.pub``), as a new file: the stamp differs by inode even
    within the file system's clock tick."""
    key = asyncssh.generate_private_key("ssh-ed25519", comment=comment)
    key.write_private_key(f"{path}.new")
    key.write_public_key(f"{path}.pub.new")
    os.replace(f"{path}.new", path)
    os.replace(f"{path}.pub.new", f"{path}.pub")
    return key.public_data


def public_halves(keys):
    return [k.public_data for k in keys]


def test_default_keys_are_read_once_until_one_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    ssh_dir = tmp_path / ".ssh"
    ssh_dir.mkdir()
    first = write_key(ssh_dir / "id_ed25519", "first")
    cache = ClientKeys()
    loaded = cache.load(None, (), False)
    assert public_halves(loaded) == [first]
    again = cache.load(None, (), False)
    assert [id(k) for k in again] == [id(k) for k in loaded]  # the same objects: not read again
    second = write_key(ssh_dir / "id_ed25519", "second")  # replaced in place
    assert public_halves(cache.load(None, (), False)) == [second]
    third = write_key(ssh_dir / "id_ecdsa", "third")  # another default name appears
    assert sorted(public_halves(cache.load(None, (), False))) == sorted([second, third])
    os.unlink(ssh_dir / "id_ecdsa")
    os.unlink(ssh_dir / "id_ecdsa.pub")
    assert public_halves(cache.load(None, (), False)) == [second]


def test_named_key_files_are_read_as_asyncssh_reads_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    key = write_key(tmp_path / "fleet-key", "fleet")
    cache = ClientKeys()
    files = (str(tmp_path / "fleet-key"),)
    expected = asyncssh.load_keypairs(list(files), None, [], False, True)
    assert public_halves(cache.load(files, (), False)) == public_halves(expected) == [key]
    loaded = cache.load(files, (), False)
    assert [id(k) for k in cache.load(files, (), False)] == [id(k) for k in loaded]
    replaced = write_key(tmp_path / "fleet-key", "replaced")
    assert public_halves(cache.load(files, (), False)) == [replaced]


def test_no_ssh_directory_means_no_default_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ClientKeys().load(None, (), False) == []
